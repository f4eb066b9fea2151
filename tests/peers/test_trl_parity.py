"""The core agrees with TRL 1.16's GRPO loss on random inputs wherever the conventions are the same.

TRL's conventions map to configuration: loss_type grpo = seq_mean_token_mean, bnpo/dapo =
token_mean, dr_grpo = seq_mean_token_sum_norm with MAX_TOKENS = max_completion_length (all over
every sequence); importance_sampling_level sequence = ratio_level sequence; k3 KL in the loss.
TRL's loss is a trainer method, so it runs on a stand-in trainer whose forward pass returns the
test's log-probabilities. Needs the optional ``peers`` install (see the README).
"""

import collections
import types

import pytest
import torch
from torch.testing import assert_close

from tests.peers import import_peer

grpo_trainer = import_peer("trl.trainer.grpo_trainer")

from algos.config.presets import load_config  # noqa: E402
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators  # noqa: E402

TOL = {"atol": 1e-6, "rtol": 1e-6}
B, T, MAX_TOKENS = 16, 10, 32
AGGREGATION = {"grpo": "seq_mean_token_mean", "bnpo": "token_mean", "dapo": "token_mean", "dr_grpo": "seq_mean_token_sum_norm"}


class StandInTrainer:
    """The attributes ``GRPOTrainer._compute_loss`` reads, with a forward pass that returns fixed log-probs."""

    def __init__(self, logprobs, loss_type, level, beta, eps_low, eps_high):
        self.logprobs = logprobs
        self.loss_type, self.importance_sampling_level, self.beta = loss_type, level, beta
        self.epsilon_low, self.epsilon_high = eps_low, eps_high
        self.top_entropy_quantile, self.off_policy_mask_threshold = 1.0, None
        self.use_vllm, self.vllm_importance_sampling_correction = False, False
        self.aux_loss_enabled, self._entropy_bonus_enabled = False, False
        self.max_completion_length, self.current_gradient_accumulation_steps = MAX_TOKENS, 1
        self.args = types.SimpleNamespace(delta=None, use_bias_correction_kl=False, steps_per_generation=1)
        self.model = types.SimpleNamespace(training=True)
        self.accelerator = types.SimpleNamespace(
            num_processes=1, gather=lambda x: x, reduce=lambda x, reduction: x, gather_for_metrics=lambda x: x
        )
        self._metrics = collections.defaultdict(lambda: collections.defaultdict(list))

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        return self.logprobs, torch.rand_like(self.logprobs), None


def batch():
    lengths = torch.randint(1, T + 1, (B,))
    mask = (torch.arange(T) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(B, T) * 3
    logprobs = (old + 0.3 * torch.randn(B, T)).requires_grad_()
    return mask, old, logprobs, torch.randn(B), old + 0.2 * torch.randn(B, T)


def trl_loss(loss_type, level, beta, eps_high, mask, old, logprobs, advantages, ref):
    trainer = StandInTrainer(logprobs, loss_type, level, beta, 0.2, eps_high)
    inputs = {
        "prompt_ids": torch.zeros(B, 2, dtype=torch.long), "prompt_mask": torch.ones(B, 2, dtype=torch.long),
        "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": mask,
        "advantages": advantages, "old_per_token_logps": old, "ref_per_token_logps": ref,
        "num_items_in_batch": mask.sum(),
    }
    return grpo_trainer.GRPOTrainer._compute_loss(trainer, None, inputs), trainer._metrics["train"]


@pytest.mark.parametrize("loss_type", list(AGGREGATION))
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_grpo_loss(loss_type, level, beta):
    mask, old, logprobs, advantages, ref = batch()
    theirs, metrics = trl_loss(loss_type, level, beta, 0.28, mask, old, logprobs, advantages, ref)
    cfg = load_config(overrides=[
        f"policy_loss.aggregation={AGGREGATION[loss_type]}", f"policy_loss.ratio_level={level}",
        "policy_loss.clip_eps_high=0.28", f"kl.coef={beta}", f"rollout.max_new_tokens={MAX_TOKENS}",
    ])
    inputs = LossInputs(
        logprobs=logprobs, old_logprobs=old, advantages=advantages.unsqueeze(-1) * mask, mask=mask,
        truncated=torch.zeros(B, dtype=torch.bool), correct=torch.zeros(B, dtype=torch.bool), ref_logprobs=ref,
    )
    out = compose_loss(cfg, inputs, mini_batch_denominators(cfg, mask, inputs.truncated, inputs.correct))
    assert_close(out.total, theirs, **TOL)
    assert_close(torch.autograd.grad(out.total, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], **TOL)
    if level == "token":
        assert out.read_metrics()["actor/clip_frac_low"] == pytest.approx(metrics["clip_ratio/low_mean"][0], abs=1e-9)
        assert out.read_metrics()["actor/clip_frac_high"] == pytest.approx(metrics["clip_ratio/high_mean"][0], abs=1e-9)
