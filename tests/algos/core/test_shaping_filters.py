import pytest
import torch
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.core.filters import informative_groups, overlong_filter_mask
from algos.core.lm_loss import positive_example_nll
from algos.core.rewards import keep_groups, outcome_scores, rewarded_verdicts, token_rewards
from algos.core.shaping import correctness_reward, place_outcome_reward, soft_overlong_punishment


@pytest.mark.parametrize(
    ("length", "expected"),
    [(10, 0.0), (15, 0.0), (16, -0.2), (17.5, -0.5), (20, -1.0), (21, -1.0), (100, -1.0)],
)
def test_soft_overlong_punishment_at_the_boundaries(length, expected):
    # L_max = 20, L_cache = 5: zero up to 15, linear to -1 at 20, -1 beyond
    assert_close(soft_overlong_punishment(torch.tensor([length]), 20, 5), torch.tensor([expected]))


def test_correctness_reward_values():
    assert_close(correctness_reward(torch.tensor([True, False]), 1.0, -1.0), torch.tensor([1.0, -1.0]))


def test_place_outcome_reward_on_last_real_token():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    rewards = place_outcome_reward(torch.tensor([2.0, 3.0, 4.0]), mask)
    assert_close(rewards, torch.tensor([[0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]))


def test_overlong_filter_mask():
    assert_close(overlong_filter_mask(torch.tensor([True, False])), torch.tensor([0.0, 1.0]))


def test_informative_groups_keep_mixed_correctness_only():
    correct = torch.tensor([1, 1, 1, 0, 0, 0, 1, 0, 1], dtype=torch.float64)
    assert informative_groups(correct, 3).tolist() == [False, False, True]


def test_dynamic_sampling_filters_on_correctness_not_shaped_reward():
    cfg = load_config("dapo", overrides=["rollout.group_size=2"])
    correct = torch.tensor([True, True, False, False])
    lengths = torch.tensor([10, 90, 10, 10])  # group 1 all correct but one response is punished for length
    scores = outcome_scores(cfg, correct, lengths)
    assert scores[0] != scores[1]
    assert keep_groups(cfg, correct, scores).tolist() == [False, False]
    graded = torch.tensor([1.0, 0.5, 0.0, 0.0])
    by_reward = load_config(
        "grpo", overrides=["rollout.group_size=2", "dynamic_sampling.enabled=true", "dynamic_sampling.filter_on=reward"]
    )
    assert keep_groups(by_reward, correct, graded).tolist() == [True, False]


def test_outcome_scores_dapo_shaping():
    cfg = load_config("dapo", overrides=["rollout.max_new_tokens=20", "reward.soft_overlong_buffer=5"])
    scores = outcome_scores(cfg, torch.tensor([True, True, False]), torch.tensor([10, 18, 20]))
    assert_close(scores, torch.tensor([1.0, 1.0 - 0.6, -2.0]))


def test_kl_in_reward_is_subtracted_per_token():
    cfg = load_config(overrides=["kl.coef=0.5", "kl.placement=reward", "kl.estimator=k1"])
    mask = torch.ones(1, 3)
    old, ref = torch.tensor([[0.0, -1.0, 0.0]]), torch.tensor([[0.0, 0.0, -2.0]])
    rewards = token_rewards(cfg, torch.tensor([1.0]), mask, old, ref)
    assert_close(rewards, torch.tensor([[0.0, 0.5, 0.0]]))


def test_positive_example_nll():
    logp = torch.tensor([[-1.0, -3.0], [-5.0, -7.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    assert_close(positive_example_nll(logp, mask, torch.tensor([True, False]), 2.0), torch.tensor(2.0))
    assert_close(positive_example_nll(logp, mask, torch.tensor([False, False]), 0.0), torch.tensor(0.0))


def test_coin_flips_replace_the_declared_share_of_verdicts_at_random():
    correct = torch.tensor([True, False] * 5000)  # (B,)
    off = load_config("grpo")
    assert rewarded_verdicts(off, correct, torch.Generator().manual_seed(0)) is correct
    cfg = load_config("grpo", overrides=["reward.coin_flip_share=0.5"])
    flipped = rewarded_verdicts(cfg, correct, torch.Generator().manual_seed(0))
    # Half are drawn, and half of those land on the other verdict: a quarter change.
    assert (flipped != correct).float().mean().item() == pytest.approx(0.25, abs=0.02)
    assert flipped.float().mean().item() == pytest.approx(0.5, abs=0.02)
    again = rewarded_verdicts(cfg, correct, torch.Generator().manual_seed(0))
    assert torch.equal(flipped, again)  # seeded: the same draw for the same seed
    with pytest.raises(Exception, match="coin_flip_share"):
        load_config("grpo", overrides=["reward.coin_flip_share=1.0"])
