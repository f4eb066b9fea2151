import math

import pytest
import torch
from torch.testing import assert_close

from algos.core.ratios import (
    group_expectation_ratio,
    group_expected_probability,
    importance_ratio,
    sequence_ratio,
    sequence_token_ratio,
    token_ratio,
)


def test_token_ratio():
    logp, old = torch.log(torch.tensor([[0.5, 0.2]])), torch.log(torch.tensor([[0.25, 0.4]]))
    assert_close(token_ratio(logp, old, torch.ones(1, 2)), torch.tensor([[2.0, 0.5]]))


def test_sequence_ratio_is_length_normalised_and_ignores_padding():
    logp = torch.tensor([[0.1, 0.3, 7.0]])
    old = torch.zeros(1, 3)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    ratio = sequence_ratio(logp, old, mask)
    assert_close(ratio[0, :2], torch.full((2,), math.exp(0.2)))
    assert_close(sequence_token_ratio(logp, old, mask)[0, :2], ratio[0, :2])


@pytest.mark.parametrize("level", ["sequence", "sequence_token"])
def test_sequence_ratio_equals_token_ratio_at_length_one(level):
    logp, old = torch.randn(5, 1), torch.randn(5, 1)
    mask = torch.ones(5, 1)
    assert_close(importance_ratio(level, logp, old, mask), token_ratio(logp, old, mask))


def test_sequence_token_gradient_flows_per_token():
    logp = torch.tensor([[0.1, 0.3]], requires_grad=True)
    old, mask = torch.zeros(1, 2), torch.ones(1, 2)
    s = math.exp(0.2)
    (g_seq,) = torch.autograd.grad(sequence_ratio(logp, old, mask)[0, 0], logp)
    assert_close(g_seq, torch.tensor([[s / 2, s / 2]]))  # d s_i / d log pi_t = s_i / |o_i|
    (g_tok,) = torch.autograd.grad(sequence_token_ratio(logp, old, mask)[0, 0], logp)
    assert_close(g_tok, torch.tensor([[s, 0.0]]))  # only token t's own log-probability


def test_gepo_group_expectation_hand_values():
    # length-normalised sampling probabilities q = [0.5, 0.25] in one group
    old = torch.log(torch.tensor([[0.5, 0.5], [0.25, 0.25]]))
    mask = torch.ones(2, 2)
    expectation = group_expected_probability(old, mask, group_size=2)
    assert_close(expectation, torch.full((2,), (0.25 + 0.0625) / 0.75))
    weights = group_expectation_ratio(old, mask, expectation)  # on-policy: p = q
    assert_close(weights[:, 0], torch.tensor([0.5, 0.25]) / (0.3125 / 0.75))


def test_gepo_uses_masked_mean_per_group():
    old = torch.randn(6, 4)
    mask = (torch.arange(4) < torch.tensor([[4], [2], [3], [1], [4], [4]])).double()
    q = torch.exp((old * mask).sum(-1) / mask.sum(-1)).view(2, 3)
    expected = ((q**2).sum(1) / q.sum(1)).repeat_interleave(3)
    assert_close(group_expected_probability(old, mask, 3), expected)


def test_group_expectation_level_requires_expectation():
    with pytest.raises(ValueError, match="group expectation"):
        importance_ratio("group_expectation", torch.zeros(2, 2), torch.zeros(2, 2), torch.ones(2, 2))


def test_gepo_micro_batch_scope_takes_the_expectation_over_shuffled_chunks():
    # q = [0.5, 0.25, 0.4, 0.1]; prompts are rows (0, 1) and (2, 3); the shuffle pairs rows 0 with 2, 1 with 3
    q = torch.tensor([0.5, 0.25, 0.4, 0.1])
    old = torch.log(q).unsqueeze(-1).expand(4, 3)
    mask = torch.ones(4, 3)
    by_prompt = group_expected_probability(old, mask, group_size=2)
    assert_close(by_prompt, torch.tensor([0.3125 / 0.75] * 2 + [0.17 / 0.5] * 2))
    by_chunk = group_expected_probability(old, mask, group_size=2, order=torch.tensor([0, 2, 1, 3]))
    first, second = (0.25 + 0.16) / 0.9, (0.0625 + 0.01) / 0.35
    assert_close(by_chunk, torch.tensor([first, second, first, second]))


def test_gepo_scopes_agree_when_the_shuffle_keeps_the_groups():
    old, mask = torch.randn(6, 4), torch.ones(6, 4)
    assert_close(
        group_expected_probability(old, mask, 3, order=torch.tensor([2, 0, 1, 5, 3, 4])),
        group_expected_probability(old, mask, 3),
    )
