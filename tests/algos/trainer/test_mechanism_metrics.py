"""The per-step mechanism metrics, on hand-made batches with hand-computed values."""

import math

import pytest
import torch

from algos.engine.sequences import SequenceBatch
from algos.trainer.rollout import _Sampled, critic_metrics, rollout_metrics
from algos.trainer.update import token_statistics, warmup_factor


def sampled(lengths, correct, truncated, scores):
    width = max(lengths)
    mask = (torch.arange(width) < torch.tensor(lengths).unsqueeze(-1)).long()
    ids = torch.arange(len(lengths) * width).view(len(lengths), width) * mask  # no repeats inside a response
    rows = len(lengths)
    return _Sampled(
        SequenceBatch(torch.ones(rows, 2, dtype=torch.long), torch.ones(rows, 2, dtype=torch.long), ids, mask),
        torch.tensor(correct),
        torch.tensor(truncated),
        torch.tensor(scores, dtype=torch.float32),
    )


def test_rollout_metrics_hand_values():
    # two groups of two: (right, length 4; wrong, length 8 and cut off), (wrong, 2; wrong, 6)
    batch = sampled([4, 8, 2, 6], [True, False, False, False], [False, True, False, False], [1.0, -1.0, -1.0, -1.0])
    metrics = rollout_metrics(batch, group_size=2)
    assert metrics["rollout/accuracy"] == 0.25 and metrics["rollout/accuracy_untruncated"] == pytest.approx(1 / 3)
    assert metrics["rollout/correct_length_mean"] == 4 and metrics["rollout/incorrect_length_mean"] == pytest.approx(
        16 / 3
    )
    assert metrics["rollout/group_length_std"] == pytest.approx(math.sqrt(8))  # both groups differ by 4: std 2√2
    assert metrics["rollout/all_wrong_groups_frac"] == 0.5 and metrics["rollout/all_correct_groups_frac"] == 0.0
    assert metrics["rollout/truncated_frac"] == 0.25 and metrics["rollout/repetition_frac"] == 0.0
    assert metrics["rollout/samples_generated"] == 4 and metrics["rollout/reward_std"] == pytest.approx(1.0)


def test_rollout_metrics_leave_out_means_of_nothing_and_groups_of_one():
    metrics = rollout_metrics(sampled([3, 5], [False, False], [False, False], [0.0, 0.0]), group_size=2)
    assert "rollout/correct_length_mean" not in metrics
    assert all(math.isfinite(value) for value in metrics.values())
    single = rollout_metrics(sampled([3, 5], [True, False], [False, False], [1.0, 0.0]), group_size=1)
    assert not {"rollout/all_correct_groups_frac", "rollout/group_length_std"} & set(single)


def test_critic_metrics_hand_values():
    values = torch.tensor([[0.5, 0.5, 0.0], [0.0, 1.0, 1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    returns = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    metrics = critic_metrics(values, returns, returns, mask)
    # errors over real tokens: -0.5, -0.5, 0, 1, 1
    assert metrics["critic/value_bias"] == pytest.approx(1.0 / 5)
    assert metrics["critic/value_error"] == pytest.approx(math.sqrt(2.5 / 5))
    assert "critic/explained_variance" in metrics
    constant = critic_metrics(values, torch.ones(2, 3) * mask, returns, mask)
    assert "critic/explained_variance" not in constant  # the targets do not vary: undefined, left out


def test_token_statistics_over_the_whole_step():
    stats = token_statistics(
        {
            "actor/ratio": [torch.tensor([1.0, 1.2]), torch.tensor([0.8, 1.0, 2.0])],
            "actor/clip_high_prob": [torch.tensor([0.1]), torch.tensor([])],
        }
    )
    assert stats["actor/ratio_mean"] == pytest.approx(1.2) and stats["actor/ratio_max"] == pytest.approx(2.0)
    assert stats["actor/ratio_var"] == pytest.approx((0.04 + 0.0 + 0.16 + 0.04 + 0.64) / 5)
    assert stats["actor/clip_high_prob_mean"] == pytest.approx(0.1)
    assert "actor/clip_high_prob_mean" not in token_statistics({"actor/clip_high_prob": [torch.tensor([])]})


def test_warmup_rises_linearly_then_holds():
    assert [warmup_factor(step, 4) for step in range(1, 7)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert warmup_factor(1, 0) == 1.0
