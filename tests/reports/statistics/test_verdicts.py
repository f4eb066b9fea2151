"""Verdicts under a declared design: margin claims, gated secondaries and the primaries' family."""

import pytest
from scipy import stats

from reports.statistics.comparisons import Direction, margin_p_value, paired_t
from reports.statistics.verdicts import PRIMARY, SECONDARY, Claim, judge_family


def test_margin_p_values_by_hand():
    comparison = paired_t([0.51, 0.52, 0.50, 0.53, 0.49], [0.50, 0.50, 0.50, 0.50, 0.50], distribution_free=False)
    delta, se = comparison.delta.mean, comparison.se  # 0.01, sd 0.01581 / √5
    assert delta == pytest.approx(0.01) and comparison.df == 4
    above, below = stats.t.sf((delta + 0.03) / se, 4), stats.t.cdf((delta - 0.03) / se, 4)
    assert margin_p_value(comparison, 0.03, "non_inferior") == pytest.approx(above)
    assert margin_p_value(comparison, 0.03, "equivalent") == pytest.approx(max(above, below))
    assert max(above, below) == pytest.approx(below)  # Δ sits above zero: the upper margin is the nearer
    with pytest.raises(ValueError, match="positive"):
        margin_p_value(comparison, 0.0, "equivalent")


def seeds(shift, spread=(0.0, 0.01, -0.01, 0.005)):
    return [0.5 + shift + noise for noise in spread]


BASE = seeds(0.0, (0.0, 0.0, 0.0, 0.0))


def test_a_secondary_waits_for_its_rows_primary():
    undecided = paired_t(seeds(0.001, (0.02, -0.03, 0.01, -0.001)), BASE, distribution_free=False)
    clear = paired_t(seeds(0.2), BASE, distribution_free=False)
    claims = [
        Claim("row a: table", undecided, 1.0, "a", PRIMARY),
        Claim("row a: endpoint", clear, 1.0, "a", SECONDARY),
        Claim("row b: table", clear, 1.0, "b", PRIMARY),
    ]
    gated = judge_family(claims, "gated")
    assert [j.verdict for j in gated] == [Direction.INCONCLUSIVE, Direction.INCONCLUSIVE, Direction.AGREES]
    assert gated[1].adjusted_p == pytest.approx(gated[0].adjusted_p)  # no lower than the gate it waits on
    assert gated[0].family_size == 2 and gated[0].test_level == pytest.approx(0.025)
    assert gated[1].test_level == pytest.approx(0.025)  # all of row a's share, once its primary falls
    separate = judge_family(claims, "separate")
    assert separate[1].verdict is Direction.AGREES and separate[1].test_level == pytest.approx(0.05)


def test_a_margin_claim_is_judged_by_its_two_one_sided_tests():
    close = paired_t(seeds(0.001), BASE, distribution_free=False)
    far = paired_t(seeds(0.04), BASE, distribution_free=False)
    claims = [
        Claim("close", close, None, "a", PRIMARY, "equivalent", 0.03),
        Claim("far", far, None, "b", PRIMARY, "equivalent", 0.03),
        Claim("above", far, None, "c", PRIMARY, "non_inferior", 0.03),
    ]
    verdicts = [j.verdict for j in judge_family(claims)]
    assert verdicts == [Direction.EQUIVALENT, Direction.NOT_SHOWN, Direction.NON_INFERIOR]


def test_a_gated_design_refuses_a_false_discovery_rate():
    with pytest.raises(ValueError, match="use adjust: holm"):
        judge_family([], "gated", "bh")
