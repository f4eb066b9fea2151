"""Error control over a table's comparisons: Holm's and Benjamini–Hochberg's adjusted p-values of one family
(:func:`adjust`), and, over its primary and secondary comparisons, the sequentially rejective graphical procedure (Bretz, Maurer, Brannath & Posch 2009, "A graphical approach to sequentially
rejective multiple test procedures", Statistics in Medicine 28:586-604).

Each hypothesis i holds a share w_i of the level α (Σ w_i ≤ 1) and passes it on along the edges of a
transition matrix G (row i: where i's share goes once i is rejected; each row sums to at most 1). The
procedure rejects any hypothesis with p_i ≤ w_i α, moves its share along its edges, rewires the graph
around it, and repeats; it controls the family-wise error rate at α in the strong sense whatever the
dependence between the p-values, because every step is a weighted Bonferroni test of the
intersection hypotheses it closes. Holm's procedure is the complete graph with equal weights.

:func:`gated_graph` builds the graph the reports use: each row's primary comparison holds α/m (m
primaries); rejecting it passes its share to the row's secondary (mechanism) comparisons, so a
mechanism is tested only where the row's primary was decided; a row without secondaries, or the last
of its secondaries, passes the share on to the other rows' primaries. :func:`adjusted_p_values` returns
the graph's adjusted p-values: hypothesis i is rejected at level α exactly when its adjusted p is at most α.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

ADJUSTMENTS = ("holm", "bh")


@dataclass(frozen=True)
class Graph:
    """weights: (k,) initial shares of the level, Σ ≤ 1. transitions: (k, k), zero diagonal, rows sum ≤ 1."""

    weights: np.ndarray
    transitions: np.ndarray

    def __post_init__(self) -> None:
        k = self.weights.shape[0]
        if self.weights.ndim != 1 or self.transitions.shape != (k, k):
            raise ValueError(
                f"weights must be (k,) and transitions (k, k); got {self.weights.shape}, {self.transitions.shape}"
            )
        if np.any(self.weights < 0) or self.weights.sum() > 1 + 1e-12:
            raise ValueError(f"weights must be >= 0 and sum to at most 1, got {self.weights.tolist()}")
        if np.any(self.transitions < 0) or np.any(np.diag(self.transitions) != 0):
            raise ValueError("transitions must be >= 0 with a zero diagonal")
        if np.any(self.transitions.sum(axis=1) > 1 + 1e-12):
            raise ValueError(
                f"each row of transitions must sum to at most 1, got {self.transitions.sum(axis=1).tolist()}"
            )


def holm_graph(k: int) -> Graph:
    """Holm's procedure over k hypotheses: equal weights, each passing its share equally to the others."""
    transitions = np.full((k, k), 1.0 / (k - 1)) if k > 1 else np.zeros((k, k))
    np.fill_diagonal(transitions, 0.0)
    return Graph(np.full(k, 1.0 / k) if k else np.zeros(0), transitions)


def gated_graph(primaries: Sequence[int], secondaries: Sequence[Sequence[int]]) -> Graph:
    """The gated graph over hypotheses 0..k-1: ``primaries[r]`` is row r's primary, ``secondaries[r]`` its secondaries.

    Weights: 1/m on each primary, 0 on secondaries. Edges: a primary passes its share equally to its
    row's secondaries, or, where it has none, equally to the other primaries; a secondary passes it
    equally to its row's other secondaries, or, where it is the row's only one, equally to the other
    rows' primaries. (A row with several secondaries keeps what its last one holds: a conservative loss.)
    """
    if len(primaries) != len(secondaries):
        raise ValueError("one list of secondaries per primary")
    k = len(primaries) + sum(len(group) for group in secondaries)
    if sorted([*primaries, *(i for group in secondaries for i in group)]) != list(range(k)):
        raise ValueError("primaries and secondaries must number the hypotheses 0..k-1, each once")
    weights, transitions = np.zeros(k), np.zeros((k, k))
    m = len(primaries)

    def to_other_primaries(source: int, row: int) -> None:
        for other, primary in enumerate(primaries):
            if other != row:
                transitions[source, primary] = 1.0 / (m - 1)

    for row, (primary, group) in enumerate(zip(primaries, secondaries, strict=True)):
        weights[primary] = 1.0 / m
        if group:
            transitions[primary, list(group)] = 1.0 / len(group)
        else:
            to_other_primaries(primary, row)
        for secondary in group:
            if len(group) > 1:
                transitions[secondary, [i for i in group if i != secondary]] = 1.0 / (len(group) - 1)
            else:
                to_other_primaries(secondary, row)
    return Graph(weights, transitions)


def adjusted_p_values(p_values: Sequence[float], graph: Graph) -> list[float]:
    """Each hypothesis' adjusted p-value under ``graph`` (Bretz et al. 2009, Algorithm 2). p_values: (k,).

    At each step the hypothesis with the least p_i / w_i is rejected next; its adjusted p is that ratio
    (capped at 1), and never below the adjusted p of one rejected before it. Its share then moves along its
    edges, w_l += w_j G_jl, and the graph is rewired around it, G_lk ← (G_lk + G_lj G_jk) / (1 − G_lj G_jl).
    """
    p = np.asarray(p_values, dtype=float)
    if p.shape != graph.weights.shape:
        raise ValueError(f"{p.size} p-values for a graph of {graph.weights.size} hypotheses")
    if np.any((p < 0) | (p > 1) | ~np.isfinite(p)):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    weights, transitions = graph.weights.astype(float).copy(), graph.transitions.astype(float).copy()
    remaining = list(range(p.size))
    adjusted = np.ones(p.size)
    floor = 0.0
    while remaining:
        ratios = [p[i] / weights[i] if weights[i] > 0 else np.inf for i in remaining]
        j = remaining[int(np.argmin(ratios))]
        floor = max(floor, min(1.0, float(np.min(ratios))))
        adjusted[j] = floor
        remaining.remove(j)
        rewired = np.zeros_like(transitions)
        for l in remaining:
            weights[l] += weights[j] * transitions[j, l]
            for k in remaining:
                if k == l:
                    continue
                denominator = 1.0 - transitions[l, j] * transitions[j, l]
                if denominator > 0:
                    rewired[l, k] = (transitions[l, k] + transitions[l, j] * transitions[j, k]) / denominator
        weights[j] = 0.0
        transitions = rewired
    return adjusted.tolist()


def adjust(p_values: Sequence[float | None], method: str = "holm") -> list[float | None]:
    """Adjusted p-values of one family of comparisons (a table's rows × declared endpoints), same order.

    holm (default; Holm 1979): step-down, controls the family-wise error rate. The k-th smallest of m
    p-values becomes max over j ≤ k of min(1, (m − j + 1)·p_(j)). bh (Benjamini–Hochberg): controls the
    false discovery rate (``scipy.stats.false_discovery_control``). None entries (comparisons with no
    p-value) stay None and do not count towards m.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"unknown p-value adjustment '{method}'; choose one of: {', '.join(ADJUSTMENTS)}")
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if not present:
        return adjusted
    raw = np.array([p_values[i] for i in present], dtype=float)
    if method == "bh":
        values = stats.false_discovery_control(raw, method="bh")
    else:
        order = np.argsort(raw, kind="stable")
        stepped = np.minimum(1.0, (raw.size - np.arange(raw.size)) * raw[order])
        values = np.empty_like(raw)
        values[order] = np.maximum.accumulate(stepped)
    for i, value in zip(present, values, strict=True):
        adjusted[i] = float(value)
    return adjusted
