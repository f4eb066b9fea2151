"""The coupling report: its statistics on hand-computed cases, what it reads of runs and regenerated responses,
and its page."""

import json

import numpy as np
import pytest
import yaml

from algos.config.presets import ConfigError
from reports.analysis.runs import load_run
from reports.coupling import (
    DECISION_LEVEL,
    Pair,
    correlation_interval,
    first_differing_step,
    keyed_draws_decided,
    main,
    parse_pair,
    pooled_ratio_p_value,
    pooled_sd_ratio_interval,
    sd_interval,
    sd_ratio_interval,
    shared_responses,
)
from tests.reports.test_ablation import fake_run

PAIR = Pair("dapo_table1", "token_level_loss", "soft_overlong_punishment")
SEEDS = [15, 16, 17, 18, 19]


def test_the_sd_interval_is_the_chi_square_one():
    # s² of 1..4 is 5/3; chi-square quantiles with 3 df: 9.3484 (97.5 %) and 0.21580 (2.5 %).
    sd, low, high = sd_interval(np.array([1.0, 2.0, 3.0, 4.0]))
    assert sd == pytest.approx(1.290994, abs=1e-6)
    assert (low, high) == pytest.approx((1.290994 * (3 / 9.348404) ** 0.5, 1.290994 * (3 / 0.215795) ** 0.5), rel=1e-5)
    assert (low, high) == pytest.approx((0.7313, 4.8135), abs=1e-4)


def test_the_correlation_interval_is_fishers():
    # r = 0.8; z = atanh(0.8) = 1.0986, half-width 1.95996 / sqrt(5 - 3) = 1.3859.
    r, low, high = correlation_interval(np.array([1.0, 2, 3, 4, 5]), np.array([1.0, 3, 2, 5, 4]))
    assert (r, low, high) == pytest.approx((0.8, -0.27964, 0.98620), abs=1e-5)
    assert all(np.isnan(correlation_interval(np.ones(5), np.arange(5.0))))


def test_the_sd_ratio_of_a_scaled_copy_is_that_scale_in_every_resample():
    stream = np.array([0.3, -0.1, 0.2, 0.05, -0.25, 0.1])
    assert sd_ratio_interval(stream, stream / 2) == pytest.approx((0.5, 0.5, 0.5))
    ratio, low, high = sd_ratio_interval(stream, stream[::-1] * 0.1 + np.linspace(0, 0.01, 6))
    assert low <= ratio <= high


def test_the_pooled_ratio_is_the_root_of_the_geometric_mean_of_the_pairs_variance_ratios():
    stream = np.array([[0.3, -0.1, 0.2, 0.05, -0.25, 0.1], [0.02, 0.04, -0.03, 0.0, 0.01, -0.05]])
    keyed = np.stack([stream[0] / 2, stream[1]])  # variance ratios 1/4 and 1: (1/4 x 1)^(1/2) = 1/2, its root 0.7071
    assert pooled_sd_ratio_interval(stream, keyed) == pytest.approx((0.5**0.5,) * 3)
    ratio, low, high = pooled_sd_ratio_interval(stream, np.stack([stream[1][::-1], stream[0] * 3]))
    assert low <= ratio <= high and low < high


def test_the_permutation_test_ranks_the_observed_labelling_among_every_relabelling_of_the_seeds():
    # Two seeds: Var of (x, y) is (x - y)^2 / 2. Observed (1, -1) and (0.5, -0.5): ratio 1/4; swapping one seed
    # gives (0.5, -1) and (1, -0.5), ratio 1; swapping both, 4. One relabelling of the 4 is at most 1/4: p = 1/4.
    stream = np.array([[1.0, -1.0]])
    assert pooled_ratio_p_value(stream, stream / 2) == pytest.approx(1 / 4)
    assert pooled_ratio_p_value(stream, stream * 2) == pytest.approx(1.0)
    # A seed whose value sits near the mean can lower the ratio when swapped: (1, -2, 0.5, 3) halved is 2nd of 16.
    assert pooled_ratio_p_value(np.array([[1.0, -2.0, 0.5, 3.0]]), np.array([[0.5, -1.0, 0.25, 1.5]])) == 2 / 16


def test_the_permutation_test_keeps_its_level_where_the_draws_change_nothing():
    rng = np.random.default_rng(3)
    p_values = [pooled_ratio_p_value(*rng.gamma(1.0, size=(2, 3, 8))) for _ in range(1500)]  # skewed, 8 seeds
    # Exact: the observed labelling's rank among 256 is uniform, so P(p <= 0.025) = 6/256 = 0.0234.
    assert np.mean(np.array(p_values) <= DECISION_LEVEL) < 6 / 256 + 3 * (0.0234 * 0.9766 / 1500) ** 0.5


def test_keyed_draws_become_the_default_only_at_a_one_sided_p_of_at_most_0_025():
    assert DECISION_LEVEL == 0.025
    assert "the default for campaigns started from now" in keyed_draws_decided(0.025)
    assert "stream draws stay the default" in keyed_draws_decided(0.026)
    assert "stream draws stay the default" in keyed_draws_decided(0.6)


def _history(lengths, rewards):
    return [
        {"step": step, "rollout/response_length_mean": length, "rollout/accuracy": 0.5, "rollout/reward_mean": reward}
        for step, (length, reward) in enumerate(zip(lengths, rewards, strict=True))
    ]


def _run(tmp_path, name, history):
    fake_run(tmp_path / name / "seed0", 0.5)
    (tmp_path / name / "seed0" / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in history))
    return load_run(tmp_path / name / "seed0")


def test_rollouts_first_differ_where_a_statistic_of_the_tokens_does(tmp_path):
    a = _run(tmp_path, "a", _history([10, 12, 14, 15], [0.1, 0.2, 0.3, 0.4]))
    b = _run(tmp_path, "b", _history([10, 12, 13, 15], [0.1, 0.9, 0.3, 0.4]))  # a reward alone differs at step 1
    same = _run(tmp_path, "same", _history([10, 12, 14, 15], [0.5, 0.5, 0.5, 0.5]))
    assert first_differing_step(a, b) == 2
    assert first_differing_step(a, same) is None


def test_shared_responses_count_tokens_position_by_position_over_the_longer_response():
    a = {
        "run": "a",
        "responses": [
            {"problem": 1, "tokens": [1, 2, 3], "correct": True},
            {"problem": 2, "tokens": [7], "correct": False},
        ],
    }
    b = {
        "run": "b",
        "responses": [
            {"problem": 1, "tokens": [1, 2, 4, 5], "correct": True},
            {"problem": 2, "tokens": [7], "correct": True},
        ],
    }
    assert shared_responses(a, b) == (pytest.approx(3 / 5), 0.5)  # (2 + 1) of (4 + 1) tokens; 1 of 2 verdicts
    other = {"run": "c", "responses": [{"problem": 3, "tokens": [1], "correct": True}, *b["responses"][1:]]}
    with pytest.raises(ValueError, match="different problems"):
        shared_responses(a, other)


@pytest.mark.parametrize(
    "text, message",
    [
        ("dapo_table1:token_level_loss", "spec:row:reference"),
        ("dapo_table1:nope:token_level_loss", "has no row 'nope'; rows: naive_grpo"),
        ("dapo_table1:token_level_loss:token_level_loss", "with itself"),
    ],
)
def test_a_bad_pair_is_named(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_pair(text)


def _campaign(tmp_path, spread):
    """Both rows of PAIR under both kinds of draws: the row's value = reference + 0.05 + spread[draws] x noise; the
    final responses share 3 of 4 tokens under keyed draws and 1 of 4 under stream draws."""
    noise = [1.0, -1.0, 0.5, -0.5, 0.0]
    for draws, runs in (("stream", "runs"), ("keyed", "coupled")):
        for index, seed in enumerate(SEEDS):
            reference = 0.5 + 0.01 * index
            for row, value in (
                (PAIR.reference, reference),
                (PAIR.row, reference + 0.05 + spread[draws] * noise[index]),
            ):
                run = tmp_path / runs / PAIR.spec / row / f"seed{seed}"
                fake_run(run, value)
                config = yaml.safe_load((run / "config.yaml").read_text())
                (run / "config.yaml").write_text(yaml.safe_dump({**config, "rollout": {"draws": draws}}))
                tokens = [1, 2, 3, 4] if row == PAIR.reference else ([1, 2, 3, 9] if draws == "keyed" else [1, 8, 8, 9])
                response = {"run": str(run), "responses": [{"problem": 0, "tokens": tokens, "correct": True}]}
                out = tmp_path / "responses" / draws / PAIR.spec / row / f"seed{seed}.json"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps(response))


def _command(tmp_path):
    return [
        *("--pair", "dapo_table1:token_level_loss:soft_overlong_punishment", "--seeds", *map(str, SEEDS)),
        *("--stream-runs", str(tmp_path / "runs"), "--keyed-runs", str(tmp_path / "coupled")),
        *("--responses", str(tmp_path / "responses"), "--out", str(tmp_path / "reports")),
    ]


def test_the_page_shows_each_kind_of_draws_and_the_ratio_of_their_spreads(tmp_path):
    _campaign(tmp_path, {"stream": 0.04, "keyed": 0.01})
    assert main(_command(tmp_path)) == 0
    page = (tmp_path / "reports" / "coupling.md").read_text()
    differences = 0.04 * np.array([1.0, -1.0, 0.5, -0.5, 0.0])
    sd = np.std(differences, ddof=1)
    stream_line = next(line for line in page.splitlines() if "| stream | 0.05 |" in line)
    assert f"{sd:.3g} [" in stream_line
    keyed_line = next(line for line in page.splitlines() if "| keyed | 0.05 |" in line)
    assert "| 0.25 [0.25, 0.25] |" in keyed_line  # keyed's spread is a quarter of stream's in every resample
    # 5 seeds, keyed differences a quarter of the stream ones: of 32 relabellings only the swap of the seed whose
    # differences are both 0 ties the observed ratio, p = 2/32.
    assert (
        "| all pairs, pooled | each table's metric (last step) | keyed |  |  |  | 0.25 [0.25, 0.25], p = 0.0625 |"
        in page
    )
    assert "not shown to shrink the row differences' spread" in page  # 0.0625 > 0.025
    assert "| keyed | never within 3 steps | 0.750 (range 0.750–0.750) | 1.000" in page
    assert "| stream | never within 3 steps | 0.250 (range 0.250–0.250) | 1.000" in page
    assert (tmp_path / "reports" / "coupling.html").is_file()


def test_runs_of_the_wrong_kind_of_draws_or_missing_responses_stop_the_report(tmp_path, capsys):
    _campaign(tmp_path, {"stream": 0.04, "keyed": 0.01})
    command = _command(tmp_path)
    swapped = [tmp_path / "coupled" if part == str(tmp_path / "runs") else part for part in command]
    assert main([str(part) for part in swapped]) == 2
    assert "not trained with rollout.draws=stream" in capsys.readouterr().err
    (tmp_path / "responses" / "keyed" / PAIR.spec / PAIR.row / "seed17.json").unlink()
    assert main(command) == 2
    assert "no regenerated final responses" in capsys.readouterr().err
    assert not (tmp_path / "reports" / "coupling.md").exists()
