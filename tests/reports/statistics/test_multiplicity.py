"""The graphical procedure: hand-worked graphs, Holm as its complete graph, and its level on simulated nulls."""

import numpy as np
import pytest

from reports.statistics.multiplicity import Graph, adjust, adjusted_p_values, gated_graph, holm_graph


def test_a_gated_graph_worked_by_hand():
    # Row 1: primary 0 with secondary 1; row 2: primary 2 alone. α/2 each on the primaries.
    graph = gated_graph([0, 2], [[1], []])
    assert graph.weights.tolist() == [0.5, 0.0, 0.5]
    assert graph.transitions.tolist() == [[0, 1, 0], [0, 0, 1], [1, 0, 0]]
    # p0/w0 = 0.02 first; its 0.5 moves to 1: 0.02/0.5 = 0.04; then 1's 0.5 joins 2's: 0.04/1 = 0.04.
    assert adjusted_p_values([0.01, 0.02, 0.04], graph) == pytest.approx([0.02, 0.04, 0.04])
    # 2 first (0.01/0.5); its share goes to primary 0, now at α: 0.2; only then is secondary 1 tested,
    # so its tiny p cannot be called before its primary: adjusted 0.2 like it.
    assert adjusted_p_values([0.2, 0.001, 0.01], graph) == pytest.approx([0.2, 0.2, 0.02])


def test_a_row_with_two_secondaries_shares_the_primarys_level():
    graph = gated_graph([0], [[1, 2]])
    assert graph.transitions[0].tolist() == [0, 0.5, 0.5] and graph.transitions[1].tolist() == [0, 0, 1]
    # 0 at α; then 1 and 2 hold α/2 each; after 1, 2 holds α.
    assert adjusted_p_values([0.01, 0.02, 0.03], graph) == pytest.approx([0.01, 0.04, 0.04])


def test_holm_is_the_complete_graph():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 7):
        for _ in range(50):
            p = rng.uniform(0, 0.2, k).tolist()
            assert adjusted_p_values(p, holm_graph(k)) == pytest.approx(adjust(p, "holm"))
    assert adjusted_p_values([0.01, 0.04], gated_graph([0, 1], [[], []])) == pytest.approx(adjust([0.01, 0.04]))


def test_the_gated_graph_keeps_the_family_wise_level_under_the_global_null():
    rng = np.random.default_rng(1)
    graph = gated_graph([0, 3, 5], [[1, 2], [4], []])
    simulations = 20_000
    rejected = sum(np.any(np.asarray(adjusted_p_values(p, graph)) <= 0.05) for p in rng.uniform(size=(simulations, 6)))
    assert rejected / simulations <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / simulations)


@pytest.mark.parametrize(
    ("weights", "transitions", "message"),
    [
        ([0.6, 0.6], [[0, 1], [1, 0]], "sum to at most 1"),
        ([0.5, 0.5], [[1, 0], [1, 0]], "zero diagonal"),
        ([0.5, 0.5], [[0, 1.5], [1, 0]], "each row of transitions"),
        ([0.5], [[0, 1], [1, 0]], "weights must be"),
    ],
)
def test_a_bad_graph_is_refused(weights, transitions, message):
    with pytest.raises(ValueError, match=message):
        Graph(np.asarray(weights, dtype=float), np.asarray(transitions, dtype=float))
