"""Hand-computed values of the advantage variants, groups given by an index, several rewards and NaN rewards."""

import pytest
import torch
from torch.testing import assert_close

from algos.config.presets import ConfigError, load_config
from algos.config.schema import AdvantageConfig
from algos.core.advantages import compute_advantages, group_mean_advantage, opo_advantage, passk_advantage
from algos.core.reward_functions import Graded, combine_rewards, reward_matrix
from algos.core.rewards import outcome_scores
from algos.core.shaping import place_outcome_reward


def advantages(cfg, scores, lengths, groups, **kwargs):
    mask = (torch.arange(max(lengths)) < torch.tensor(lengths).unsqueeze(-1)).double()
    return compute_advantages(cfg, place_outcome_reward(scores, mask), mask, groups, **kwargs).advantages[:, 0]


def test_opo_baseline_is_length_weighted():
    scores, lengths = torch.tensor([1.0, 0.0, 1.0, 0.0]), torch.tensor([1.0, 3.0, 2.0, 2.0])
    # group 1: b = (1·1 + 3·0) / 4 = 0.25; group 2: b = (2·1 + 2·0) / 4 = 0.5
    assert_close(opo_advantage(scores, lengths, 2), torch.tensor([0.75, -0.25, 0.5, -0.5]))


def test_passk_credits_only_the_best_response():
    scores = torch.tensor([0.0, 1.0, 0.5, 1.0, 1.0, 0.0])
    assert_close(passk_advantage(scores, 3), torch.tensor([0.0, 0.5, 0.0, 0.0, 0.0, 0.0]))


def test_remax_subtracts_the_greedy_reward():
    cfg = AdvantageConfig(estimator="remax", std_scaling="none")
    got = advantages(cfg, torch.tensor([1.0, 0.0, 1.0]), [2, 1, 3], 1, baselines=torch.tensor([1.0, 1.0, 0.0]))
    assert_close(got, torch.tensor([0.0, -1.0, 1.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="greedy"):
        advantages(cfg, torch.ones(3), [1, 1, 1], 1)


def test_gpg_alpha_counts_informative_responses():
    scores = torch.tensor([1.0, 0.0, 1.0, 1.0])  # the second group has equal rewards: alpha = 4 / 2
    cfg = AdvantageConfig(std_scaling="none", gpg_alpha="informative")
    assert_close(advantages(cfg, scores, [1] * 4, 2), torch.tensor([1.0, -1.0, 0.0, 0.0], dtype=torch.float64))


def test_batch_normalize_counts_each_response_once():
    scores = torch.tensor([1.0, 0.0, 0.0, 0.0])
    cfg = AdvantageConfig(std_scaling="batch_normalize", std_eps=1e-4)
    raw = group_mean_advantage(scores, 2)  # 0.5, -0.5, 0, 0: mean 0, std sqrt(1/6)
    expected = raw / (raw.std() + 1e-4)
    assert_close(advantages(cfg, scores, [1, 4, 2, 3], 2), expected.double())


def test_index_groups_match_the_contiguous_layout_and_singletons_get_zero():
    scores = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
    cfg = AdvantageConfig(std_eps=1e-6)
    contiguous = advantages(cfg, scores, [1] * 6, 3)
    permutation = torch.tensor([3, 0, 4, 1, 5, 2])
    shuffled = advantages(cfg, scores[permutation], [1] * 6, (torch.arange(6) // 3)[permutation])
    assert_close(shuffled, contiguous[permutation])
    singleton = advantages(cfg, torch.tensor([1.0, 0.0, 1.0]), [1] * 3, torch.tensor([0, 0, 1]))
    assert singleton[2].item() == 0.0


def test_unscorable_responses_leave_the_statistics_and_get_zero_advantage():
    scores = torch.tensor([1.0, 0.0, float("nan"), 1.0])
    cfg = AdvantageConfig(std_scaling="none")
    assert_close(advantages(cfg, scores, [1] * 4, 4), torch.tensor([1 / 3, -2 / 3, 0.0, 1 / 3], dtype=torch.float64))


def test_reward_functions_combine_with_weights_and_nan():
    cfg = load_config(overrides=["reward.functions={correctness: 1.0, finished: 0.5}", "rollout.group_size=2"])
    graded = Graded(
        correct=torch.tensor([True, False, True, False]),
        scorable=torch.tensor([True, True, False, True]),
        lengths=torch.tensor([3, 4, 5, 6]),
        truncated=torch.tensor([False, True, False, False]),
    )
    matrix = reward_matrix(cfg, graded)
    assert_close(matrix, torch.tensor([[1.0, 1.0], [0.0, 0.0], [float("nan"), 1.0], [0.0, 1.0]]), equal_nan=True)
    assert_close(combine_rewards(cfg, matrix, 2), torch.tensor([1.5, 0.0, 0.5, 0.5]))
    normalized = load_config(
        overrides=[
            "reward.functions={correctness: 1.0, finished: 0.5}",
            "reward.combine=normalize_then_sum",
            "rollout.group_size=2",
        ]
    )
    # group 1: correctness (1, 0) -> ±0.5 / (sqrt(0.5) + eps), finished (1, 0) likewise
    unit = 0.5 / (2**-0.5 + 1e-6)
    got = combine_rewards(normalized, matrix, 2)
    assert_close(got[:2], torch.tensor([1.5 * unit, -1.5 * unit]))
    assert_close(got[2:], torch.tensor([0.0, 0.0]))  # one scorable correctness, equal finished


def test_default_reward_is_the_correctness_value_and_the_penalty_factor_scales_shaping():
    cfg = load_config(
        overrides=["reward.soft_overlong_buffer=10", "reward.soft_overlong_factor=0.5", "rollout.max_new_tokens=20"]
    )
    scores = outcome_scores(cfg, torch.tensor([True, True]), torch.tensor([5, 15]))
    assert_close(scores, torch.tensor([1.0, 1.0 - 0.25]))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["kl.controller=adaptive"], "kl.controller=adaptive scales beta from kl.coef, which is 0"),
        (
            ["policy_loss.ratio_level=sequence", "policy_loss.top_entropy_quantile=0.2", "optim.length_buckets=1"],
            "policy_loss.top_entropy_quantile masks single tokens, which needs a ratio per token",
        ),
        (
            ["policy_loss.objective=gmpo", "policy_loss.ratio_level=sequence"],
            "policy_loss.objective=gmpo builds its sequence weight",
        ),
        (["policy_loss.objective=clip_cov"], "set optim.length_buckets=1 and leave optim.micro_batch_size and optim.micro_batch_tokens unset"),
        (["policy_loss.objective=sapo", "policy_loss.dual_clip_c=3"], "unset policy_loss.dual_clip_c"),
        (["rollout.correction=truncate"], "rollout.correction=truncate corrects for a sampler other than the learner"),
        (
            ["rollout.correction=mask", "rollout.policy_staleness=1", "policy_loss.ratio_level=group_expectation"],
            "both correct for the sampler",
        ),
        (["kl.coef=0.1", "kl.placement=reward", "kl.estimator=full"], "kl.estimator=full needs the full distributions"),
        (["kl.coef=0.1", "kl.placement=reward", "kl.importance_weighted=true"], "set kl.placement=loss"),
        (
            ["advantage.estimator=return", "advantage.std_scaling=batch_normalize"],
            "advantage.std_scaling=batch_normalize scales one advantage per response",
        ),
        (
            ["advantage.estimator=remax", "advantage.std_scaling=none", "advantage.gpg_alpha=informative"],
            "advantage.gpg_alpha rescales group advantages",
        ),
        (["reward.functions={length: 1.0}"], "'reward.functions' = 'length' is not a valid reward function; valid choices: correctness, finished"),
    ],
)
def test_bad_combinations_fail_at_config_time_naming_the_keys(overrides, message):
    with pytest.raises(ConfigError, match="invalid config") as error:
        load_config(overrides=overrides)
    assert message in str(error.value)
