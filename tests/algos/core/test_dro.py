"""DRO's policy loss: hand-computed values and gradient, its parameter checked with the config, and verl's ``dro``."""

import math

import pytest
import torch
from torch.testing import assert_close

from algos.config.presets import ConfigError, load_config
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators
from tests.peers import import_peer


def loss_of(logprobs, old, advantages, mask, *overrides, beta=0.5):
    cfg = load_config(
        overrides=["policy_loss.objective=dro", f"policy_loss.objective_params={{beta: {beta}}}", *overrides]
    )
    rows = logprobs.shape[0]
    batch = LossInputs(
        logprobs, old, advantages, mask, torch.zeros(rows, dtype=torch.bool), torch.zeros(rows, dtype=torch.bool)
    )
    return compose_loss(cfg, batch, mini_batch_denominators(cfg, mask, batch.truncated, batch.correct))


def test_one_token_by_hand():
    logprobs = torch.tensor([[math.log(0.5)]], requires_grad=True)
    old = torch.tensor([[math.log(0.25)]])  # log r = log 2
    output = loss_of(logprobs, old, torch.tensor([[2.0]]), torch.ones(1, 1), beta=0.5)
    expected = -(2.0 * math.log(0.5) - 0.25 * math.log(2.0) ** 2)
    assert_close(output.policy, torch.tensor(expected))
    (grad,) = torch.autograd.grad(output.policy, logprobs)
    assert_close(grad, torch.tensor([[-2.0 + 0.5 * math.log(2.0)]]))  # −Â + β log r
    metrics = output.read_metrics()
    assert metrics["actor/clip_frac_high"] == metrics["actor/clip_frac_low"] == 0.0


def test_on_policy_it_is_reinforce():
    logprobs = torch.log(torch.rand(3, 4)).requires_grad_()
    advantages, mask = torch.randn(3, 1).expand(3, 4), torch.ones(3, 4)
    dro = loss_of(logprobs, logprobs.detach(), advantages, mask, beta=3.0).policy
    cfg = load_config(overrides=["policy_loss.objective=reinforce"])
    batch = LossInputs(
        logprobs,
        logprobs.detach(),
        advantages,
        mask,
        torch.zeros(3, dtype=torch.bool),
        torch.zeros(3, dtype=torch.bool),
    )
    reinforce = compose_loss(cfg, batch, mini_batch_denominators(cfg, mask, batch.truncated, batch.correct)).policy
    assert_close(dro, reinforce)


def test_beta_is_required_and_positive():
    with pytest.raises(ConfigError, match="policy_loss.objective_params for 'dro': beta: Field required"):
        load_config(overrides=["policy_loss.objective=dro"])
    with pytest.raises(ConfigError, match="beta: Input should be greater than 0"):
        load_config(overrides=["policy_loss.objective=dro", "policy_loss.objective_params={beta: 0}"])


@pytest.mark.parametrize("mode", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"])
def test_agrees_with_verl(mode):
    core_algos = import_peer("verl.trainer.ppo.core_algos")
    config = import_peer("verl.workers.config")
    verl_mode = mode.replace("_", "-")
    lengths = torch.randint(1, 9, (12,))
    mask = (torch.arange(8) < lengths.unsqueeze(-1)).double()
    old = -torch.rand(12, 8) * 3
    logprobs = (old + 0.3 * torch.randn(12, 8)).requires_grad_()
    advantages = torch.randn(12, 1) * mask
    actor = config.ActorConfig(
        strategy="fsdp",
        rollout_n=4,
        ppo_micro_batch_size_per_gpu=1,
        ppo_mini_batch_size=3,
        loss_agg_mode=verl_mode,
        policy_loss=config.PolicyLossConfig(loss_mode="dro", dro_beta=0.7),
    )
    theirs, _ = core_algos.compute_policy_loss_dro(old, logprobs, advantages, mask, verl_mode, actor)
    ours = loss_of(
        logprobs,
        old,
        advantages,
        mask,
        f"policy_loss.aggregation={mode}",
        "policy_loss.seq_mean_denominator=nonempty",
        beta=0.7,
    ).policy
    assert_close(ours, theirs, atol=1e-6, rtol=1e-6)
    assert_close(torch.autograd.grad(ours, logprobs)[0], torch.autograd.grad(theirs, logprobs)[0], atol=1e-6, rtol=1e-6)
