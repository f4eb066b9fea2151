"""π_old taken from the update's own forward pass gives the same update as a separate scoring pass."""

import copy

import pytest
import torch
from accelerate import Accelerator
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.config.schema import ModelConfig
from algos.engine.models import load_policy, load_tokenizer
from algos.trainer import run_files
from algos.trainer.rollout import collect_rollout, update_gives_old_logprobs
from algos.trainer.train import train
from algos.trainer.update import Learner, update
from eval.tasks.sources import builtin_task
from tests.algos.trainer.test_train import comparable, tiny_overrides

ON_POLICY = ["optim.mini_batches=1", "optim.epochs=1", "kl.coef=0", "rollout.old_logprobs=auto"]


def config(base, *extra):
    return load_config("grpo", overrides=tiny_overrides(base) + ON_POLICY + list(extra))


@pytest.mark.parametrize(
    "change",
    [
        "rollout.old_logprobs=score",
        "optim.epochs=2",
        "kl.coef=0.1 kl.placement=reward",
        "optim.mini_batches=2",
        "rollout.policy_staleness=1",
        "policy_loss.ratio_level=group_expectation",
        "critic.enabled=true advantage.estimator=gae advantage.std_scaling=none",
    ],
)
def test_the_scoring_pass_is_kept_wherever_the_update_cannot_give_pi_old(tiny_base, change):
    policy = load_policy(ModelConfig(name_or_path=str(tiny_base)))
    assert update_gives_old_logprobs(config(tiny_base), policy)
    assert not update_gives_old_logprobs(config(tiny_base, *change.split()), policy)


def test_a_model_with_dropout_keeps_the_scoring_pass(tiny_base):
    policy = load_policy(ModelConfig(name_or_path=str(tiny_base)))
    policy.config.attention_dropout = 0.1
    assert not update_gives_old_logprobs(config(tiny_base), policy)


def test_one_update_is_the_same_with_and_without_the_scoring_pass(tiny_base):
    cfg = config(tiny_base, "optim.micro_batch_size=4")  # micro-batches share the sampling weights too
    tokenizer = load_tokenizer(cfg.model)
    task = builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems)
    policy = load_policy(cfg.model)
    reused = collect_rollout(cfg, 5, policy, tokenizer, task, chat=None)
    scoring = config(tiny_base, "optim.micro_batch_size=4", "rollout.old_logprobs=score")
    scored = collect_rollout(scoring, 5, policy, tokenizer, task, chat=None)
    assert reused.old_logprobs is None and scored.old_logprobs is not None
    assert torch.equal(reused.sequences.response_ids, scored.sequences.response_ids)  # sampling is untouched

    results = []
    for batch in (reused, scored):
        model = copy.deepcopy(policy)
        learner = Learner(model, torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr))
        metrics = update(cfg, batch, learner, Accelerator(cpu=True), step_seed=5)
        results.append((metrics, [p.detach().clone() for p in model.parameters()]))
    (mine, my_weights), (theirs, their_weights) = results
    for key in ("actor/pg_loss", "actor/policy_loss", "actor/grad_norm", "actor/entropy"):
        assert mine[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-7), key
    assert mine["actor/clip_frac_low"] == mine["actor/clip_frac_high"] == 0.0  # the ratio is exactly 1
    for mine_p, their_p in zip(my_weights, their_weights, strict=True):
        assert_close(mine_p, their_p, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_training_runs_replay_with_and_without_the_scoring_pass(tiny_base, tmp_path):
    train(config(tiny_base), tmp_path / "auto")
    train(config(tiny_base, "rollout.old_logprobs=score"), tmp_path / "score")
    auto, score = (comparable(run_files.read_metrics(tmp_path / name)) for name in ("auto", "score"))
    assert [set(row) for row in auto] == [set(row) for row in score]
    for mine, theirs in zip(auto, score, strict=True):
        for key in mine:
            if key.startswith(("rollout/", "eval/")):
                assert mine[key] == theirs[key], key  # the same tokens were sampled at every step
            else:
                assert mine[key] == pytest.approx(theirs[key], rel=1e-4, abs=1e-6), key


@pytest.mark.parametrize("preset", ["grpo", "dapo"])  # dapo: rounds of dynamic sampling, kept rows concatenated
def test_the_samplers_logprobs_stand_in_for_the_scoring_pass(tiny_base, preset):
    def rollout(*extra):
        cfg = load_config(preset, overrides=tiny_overrides(tiny_base) + list(extra))
        task = builtin_task(cfg.task, cfg.run.eval_splits, cfg.run.eval_problems)
        model_cfg = cfg.model
        return collect_rollout(cfg, 9, load_policy(model_cfg), load_tokenizer(model_cfg), task, chat=None)

    scored, sampler = rollout("rollout.old_logprobs=score"), rollout("rollout.old_logprobs=sampler")
    assert torch.equal(sampler.sequences.response_ids, scored.sequences.response_ids)
    assert sampler.metrics["rollout/generation_rounds"] == scored.metrics["rollout/generation_rounds"]
    assert not torch.equal(sampler.old_logprobs, scored.old_logprobs)  # a different computation ...
    assert_close(sampler.old_logprobs, scored.old_logprobs, atol=1e-5, rtol=1e-5)  # ... of the same numbers
    assert_close(sampler.advantages, scored.advantages)
