"""Dynamic sampling keeps sampling until P informative groups are found; the round cap is a logged safety valve."""

import logging
import math

import pytest
import torch

from algos.config.presets import load_config
from algos.engine.sequences import SequenceBatch
from algos.trainer import rollout


def config(**changes):
    overrides = [f"{key}={value}" for key, value in changes.items()]
    return load_config(
        "dapo", overrides=["rollout.prompts_per_step=4", "rollout.group_size=2", "optim.mini_batches=1", *overrides]
    )


def test_round_prompts_over_samples_by_the_share_kept_so_far():
    cfg = config(**{"dynamic_sampling.oversample": 1.5})
    assert rollout.round_prompts(cfg, kept_groups=0, sampled_groups=0) == 6  # ceil(1.5 * 4)
    assert rollout.round_prompts(cfg, kept_groups=2, sampled_groups=6) == 9  # ceil(1.5 * 2 / (2/6))
    assert rollout.round_prompts(cfg, kept_groups=0, sampled_groups=6) == 32  # nothing kept yet: the most
    assert rollout.round_prompts(cfg, kept_groups=1, sampled_groups=100) == 32  # capped at 8 * P


class ScriptedRounds:
    """Stands in for sampling: round r answers its prompts with the correctness pattern the script gives.

    ``informative[r]`` is how many of round r's groups are half right; the others are all wrong.
    """

    def __init__(self, informative):
        self.informative, self.calls = list(informative), []

    def __call__(self, cfg, model, tokenizer, task, chat, seed, prompts, processes):
        self.calls.append(prompts)
        mixed = min(self.informative[len(self.calls) - 1], prompts)
        correct = torch.tensor(([True, False] * mixed) + [False, False] * (prompts - mixed))
        rows = 2 * prompts
        sequences = SequenceBatch(
            torch.ones(rows, 3, dtype=torch.long),
            torch.ones(rows, 3, dtype=torch.long),
            torch.arange(rows).unsqueeze(-1).repeat(1, 5),
            torch.ones(rows, 5, dtype=torch.long),
        )
        scores = torch.where(correct, 1.0, -1.0)
        return rollout._Sampled(sequences, correct, torch.zeros(rows, dtype=torch.bool), scores)


@pytest.fixture
def scripted(monkeypatch):
    def install(informative):
        rounds = ScriptedRounds(informative)
        monkeypatch.setattr(rollout, "_sample_round", rounds)
        monkeypatch.setattr(rollout, "_score_rollout", lambda cfg, batch, **scoring: (batch, scoring["metrics"]))
        return rounds

    return install


class Tokenizer:
    pad_token_id = 0


def collect(cfg):
    model = torch.nn.Linear(1, 1)
    return rollout.collect_rollout(cfg, 0, model, Tokenizer(), None, None)


def test_sampling_goes_on_until_the_batch_is_full(scripted):
    rounds = scripted([1, 1, 5])  # 1 informative group of 6, then 1 of 27, then plenty
    batch, metrics = collect(config())
    assert rounds.calls == [6, 27, 32]  # ceil(1.5*4), ceil(1.5*3 / (1/6)), then min(32, ceil(1.5*2 / (2/33)))
    assert batch.correct.numel() == 4 * 2 and batch.correct.view(4, 2).float().mean(1).tolist() == [0.5] * 4
    assert metrics["rollout/short_batch"] == 0.0 and metrics["rollout/trained_groups"] == 4
    assert metrics["rollout/generation_rounds"] == 3 and metrics["rollout/samples_generated"] == 2 * (6 + 27 + 32)
    assert metrics["rollout/zero_variance_groups_filtered_frac"] == pytest.approx(1 - 7 / 65)


def test_the_round_cap_trains_short_and_says_so(scripted, caplog):
    scripted([1, 0, 0])
    with caplog.at_level(logging.WARNING, logger="algos.trainer.rollout"):
        batch, metrics = collect(config(**{"dynamic_sampling.max_rounds": 3}))
    assert batch.correct.numel() == 2 and metrics["rollout/short_batch"] == 1.0
    assert metrics["rollout/trained_groups"] == 1 and metrics["rollout/generation_rounds"] == 3
    assert "found 1 of 4 informative groups in 3 rounds" in caplog.text


def test_without_dynamic_sampling_one_round_of_p_prompts_is_kept_whole(scripted):
    rounds = scripted([0])
    batch, metrics = collect(config(**{"dynamic_sampling.enabled": "false"}))
    assert rounds.calls == [4] and batch.correct.numel() == 8
    assert metrics["rollout/short_batch"] == 0.0 and metrics["rollout/all_wrong_groups_frac"] == 1.0
    assert all(math.isfinite(value) for value in metrics.values())
