"""The loss variants of TRL 1.16 beyond its GRPO/DAPO/Dr. GRPO losses agree with the core on random inputs.

Conventions mapped to configuration: TRL's ``cispo`` caps the weight at epsilon_high, which is
clip_eps_low = 1 and clip_eps_high = cap − 1 here; ``use_bias_correction_kl`` is kl.importance_weighted;
the vLLM importance-sampling ratio is the rollout-correction weight of a stale sampler
(rollout.correction); TRL's RLOO loss is ratio_level=sequence_sum with a mean over sequences.
"""

import types

import pytest
import torch
from torch.testing import assert_close

from tests.peers import import_peer

grpo_trainer = import_peer("trl.trainer.grpo_trainer")
rloo_trainer = import_peer("trl.trainer.rloo_trainer")

from algos.config.presets import load_config  # noqa: E402
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators  # noqa: E402
from algos.core.token_masks import correction_weights  # noqa: E402
from tests.peers.test_trl_parity import MAX_TOKENS, StandInTrainer  # noqa: E402

TOL = {"atol": 1e-6, "rtol": 1e-6}
B, T = 16, 10


class StandIn(StandInTrainer):
    """The parity tests' stand-in trainer with fixed entropies, the loss variants' settings and ``settings``."""

    def __init__(self, logprobs, entropy, **settings):
        super().__init__(logprobs, "grpo", "token", 0.0, 0.2, 0.2)
        self.entropy = entropy
        self.args = types.SimpleNamespace(
            **vars(self.args),
            sapo_temperature_pos=1.0,
            sapo_temperature_neg=1.05,
            vespo_k_pos=2.0,
            vespo_lambda_pos=3.0,
            vespo_k_neg=3.0,
            vespo_lambda_neg=2.0,
        )
        self.accelerator = types.SimpleNamespace(
            **vars(self.accelerator), pad_across_processes=lambda x, dim, pad_index: x, sync_gradients=True
        )
        for key, value in settings.items():
            setattr(self, key, value)

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        return self.logprobs, self.entropy, None

    get_high_entropy_mask = grpo_trainer.GRPOTrainer.get_high_entropy_mask
    get_off_policy_mask = staticmethod(grpo_trainer.GRPOTrainer.get_off_policy_mask)
    get_gamma_weights = staticmethod(grpo_trainer.GRPOTrainer.get_gamma_weights)


@pytest.fixture
def batch():
    torch.manual_seed(3)
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(B, T) * 3
    logprobs = (old + 0.3 * torch.randn(B, T)).requires_grad_()
    ref = old + 0.2 * torch.randn(B, T)
    return mask, old, logprobs, torch.randn(B), ref, torch.rand(B, T) * 2


def trainer_inputs(mask, advantages, **tensors):
    """The batch a TRL trainer's loss reads: dummy prompt and completion ids, the mask and ``tensors``."""
    return {
        "prompt_ids": torch.zeros(B, 2, dtype=torch.long),
        "prompt_mask": torch.ones(B, 2, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        **tensors,
    }


def trl_loss(batch, sampler=None, importance=None, **settings):
    mask, old, logprobs, advantages, ref, entropy = batch
    trainer = StandIn(logprobs, entropy, **settings)
    inputs = trainer_inputs(
        mask, advantages, old_per_token_logps=old, ref_per_token_logps=ref, num_items_in_batch=mask.sum()
    )
    if sampler is not None:
        inputs["sampling_per_token_logps"] = sampler
    if importance is not None:
        inputs["importance_sampling_ratio"] = importance
    return grpo_trainer.GRPOTrainer._compute_loss(trainer, None, inputs)


def our_loss(batch, overrides, sampler=None):
    mask, old, logprobs, advantages, ref, entropy = batch
    cfg = load_config(overrides=[*overrides, f"rollout.max_new_tokens={MAX_TOKENS}"])
    inputs = LossInputs(
        logprobs=logprobs,
        old_logprobs=old,
        advantages=advantages.unsqueeze(-1) * mask,
        mask=mask,
        truncated=torch.zeros(B, dtype=torch.bool),
        correct=torch.zeros(B, dtype=torch.bool),
        ref_logprobs=ref,
        entropy=entropy,
        sampler_logprobs=sampler,
    )
    return compose_loss(cfg, inputs, mini_batch_denominators(cfg, mask, inputs.truncated, inputs.correct)).total


def assert_same(mine, theirs, logprobs):
    assert_close(mine, theirs, **TOL)
    assert_close(torch.autograd.grad(mine, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], **TOL)


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_cispo(batch, level):
    theirs = trl_loss(batch, loss_type="cispo", importance_sampling_level=level, epsilon_high=1.25)
    overrides = [
        "policy_loss.objective=cispo",
        "policy_loss.clip_eps_low=1.0",
        "policy_loss.clip_eps_high=0.25",
        "policy_loss.aggregation=token_mean",
        f"policy_loss.ratio_level={level}",
    ]
    assert_same(our_loss(batch, overrides), theirs, batch[2])


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_sapo(batch, level):
    theirs = trl_loss(batch, loss_type="sapo", importance_sampling_level=level)
    assert_same(our_loss(batch, ["policy_loss.objective=sapo", f"policy_loss.ratio_level={level}"]), theirs, batch[2])


def test_vespo(batch):
    theirs = trl_loss(batch, loss_type="vespo")
    mine = our_loss(batch, ["policy_loss.objective=vespo", "policy_loss.aggregation=token_mean"])
    assert_same(mine, theirs, batch[2])


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_bias_corrected_kl(batch, level, loss_type):
    theirs = trl_loss(batch, loss_type=loss_type, importance_sampling_level=level, beta=0.04)
    aggregation = "seq_mean_token_mean" if loss_type == "grpo" else "token_mean"
    settings = [f"policy_loss.ratio_level={level}", "kl.coef=0.04", f"policy_loss.aggregation={aggregation}"]
    trainer_args = {"delta": None, "use_bias_correction_kl": True, "steps_per_generation": 1}
    weighted = trl_loss(
        batch,
        loss_type=loss_type,
        importance_sampling_level=level,
        beta=0.04,
        args=types.SimpleNamespace(**trainer_args),
    )
    assert_same(our_loss(batch, [*settings, "kl.importance_weighted=true"]), weighted, batch[2])
    assert_same(our_loss(batch, settings), theirs, batch[2])
    assert not torch.isclose(weighted, theirs)  # the correction is live on these inputs


def test_high_entropy_token_mask(batch):
    theirs = trl_loss(batch, loss_type="dapo", top_entropy_quantile=0.3)
    overrides = ["policy_loss.top_entropy_quantile=0.3", "policy_loss.aggregation=token_mean", "optim.length_buckets=1"]
    assert_same(our_loss(batch, overrides), theirs, batch[2])
    assert not torch.isclose(theirs, trl_loss(batch, loss_type="dapo"))


@pytest.mark.parametrize("with_sampler", [False, True])
def test_off_policy_sequence_mask(batch, with_sampler):
    sampler = batch[1] + 0.4 * torch.randn(B, T) if with_sampler else None
    theirs = trl_loss(batch, sampler=sampler, loss_type="grpo", off_policy_mask_threshold=0.05)
    assert_same(our_loss(batch, ["policy_loss.off_policy_mask_threshold=0.05"], sampler), theirs, batch[2])
    assert not torch.isclose(theirs, trl_loss(batch, loss_type="grpo"))


CORRECTIONS = [(mode, level, "grpo") for mode in ("truncate", "mask") for level in ("token", "sequence")]


@pytest.mark.parametrize(
    ("mode", "level", "loss_type"), [*CORRECTIONS, ("truncate", "token", "vespo"), ("mask", "token", "vespo")]
)
def test_rollout_correction(batch, mode, level, loss_type):
    """TRL's vLLM importance-sampling correction, with our weights of π_old / π_sampler as its ratio
    (VESPO folds token-level weights into its sequence weight; sequence-level ones are refused for it)."""
    mask, old = batch[0], batch[1]
    sampler = old + (0.05 if level == "sequence" else 0.5) * torch.randn(B, T)
    low = 0.6 if mode == "mask" else None
    weights = correction_weights(old, sampler, mask, mode, level, low, 1.5)
    theirs = trl_loss(
        batch,
        importance=weights,
        loss_type=loss_type,
        use_vllm=True,
        vllm_importance_sampling_correction=True,
        beta=0.04,
    )
    aggregation = "token_mean" if loss_type == "vespo" else "seq_mean_token_mean"
    overrides = [
        f"policy_loss.aggregation={aggregation}",
        "kl.coef=0.04",
        "rollout.policy_staleness=1",
        f"rollout.correction={mode}",
        f"rollout.correction_level={level}",
        "rollout.correction_high=1.5",
        *([f"rollout.correction_low={low}"] if low else []),
        *(["policy_loss.objective=vespo"] if loss_type == "vespo" else []),
    ]
    assert_same(our_loss(batch, overrides, sampler), theirs, batch[2])


class RLOOStandIn(StandIn):
    def __init__(self, logprobs):
        super().__init__(logprobs, torch.zeros_like(logprobs))


def test_rloo_loss(batch):
    mask, old, logprobs, advantages, _, _ = batch
    old = logprobs.detach() + 0.05 * torch.randn(B, T)  # summed log-ratios stay near 0, as in training
    inputs = trainer_inputs(mask, advantages, old_logps=(old * mask).sum(-1))
    theirs = rloo_trainer.RLOOTrainer._compute_loss(RLOOStandIn(logprobs), None, inputs)
    mine = our_loss((mask, old, logprobs, advantages, batch[4], batch[5]), ["policy_loss.ratio_level=sequence_sum"])
    assert_same(mine, theirs, logprobs)
