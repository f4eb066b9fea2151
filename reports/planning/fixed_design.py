"""Seeds per row from a design basis: a fixed design whose counts come from seed variances measured on runs
it does not test, so every test keeps its level with its full degrees of freedom.

A design basis (:mod:`reports.design_basis`) holds a design campaign's per-seed values of every primary
quantity of a spec, the number of final evaluation problems they were measured on, and what a run and an
evaluated problem cost. From it, each compared row's primary comparison gets:

- its design sd: from the variance of the basis' per-seed differences (row − compared row). Three basis
  seeds give a variance on 2 degrees of freedom, so each variance is taken at its one-sided
  :data:`ASSURANCE` upper confidence bound (:func:`upper_variance`), and a table-metric primary is sized
  for the larger of its own and the pooled bound of the spec's table-metric primaries (a row whose three
  seeds happened to agree is not left underpowered); an endpoint primary, in its own units, for its own.
  :data:`ASSURANCE` = 0.6 was chosen on simulated tables (:mod:`reports.planning.design_simulation`, seed sds 10×
  apart, one bimodal row): at 0.5 the mean power came out 0.78, at 0.6 0.83, at 0.7 0.87 for 1.3× the seeds;
- for the table's metric (a share sampled once per problem at T = 1), the sd at another final evaluation
  size N: the basis variance less its evaluation part, plus the evaluation part at N. A share's sampling
  variance on N problems is at most a(1 − a)/N, so a difference of two rows at accuracies a and b carries
  at most (a(1 − a) + b(1 − b))/N of it (:func:`difference_variance`);
- its seeds: the fewest n ≥ 2 whose paired t-test at the comparison's share of the level (α/m for one of m
  primaries) detects the smallest effect with 80 % power (:func:`reports.statistics.comparisons.detectable_effect`); a margin
  claim the fewest whose two one-sided tests show it at Δ = 0 with that power. A row runs the most seeds
  any of its comparisons asks, so paired comparisons keep their seed pairs.

The level holds whatever the basis says, because the seed counts depend on no run the tests read; the
basis decides only the power. The final evaluation's size that minimises a row's variance per unit of
compute is :func:`optimal_problems`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from algos.campaign.ablations import AblationSpec, Row
from reports.statistics.comparisons import LEVEL, POWER, detectable_effect

BASIS_FIELDS = (
    "spec",
    "metric",
    "problems",
    "seeds",
    "values",
    "run_seconds",
    "eval_seconds_per_problem",
    "provenance",
)
MAX_SEEDS = 500
TABLE_QUANTITY = "final"
ASSURANCE = 0.6


@dataclass(frozen=True)
class Basis:
    """A design campaign's per-seed results. values: row -> quantity -> seed -> value (quantity
    :data:`TABLE_QUANTITY` for the table's metric at the last step, else :func:`quantity_name` of an endpoint).
    problems: the final evaluation size the table's metric was measured on. run_seconds: row -> seconds of
    one run without its held-out evaluations (wall time less the logged evaluation seconds).
    eval_seconds_per_problem: held-out evaluation seconds per problem.
    provenance: where the numbers come from (commit, command, runs)."""

    spec: str
    metric: str
    problems: int
    seeds: tuple[int, ...]
    values: Mapping[str, Mapping[str, Mapping[int, float]]]
    run_seconds: Mapping[str, float]
    eval_seconds_per_problem: float
    provenance: Mapping[str, object]


@dataclass(frozen=True)
class ComparisonDesign:
    """One primary comparison's design: Δ = row − compared_with on ``quantity``, sized for ``smallest_effect``.

    basis_sd: sd of the basis' per-seed differences; design_sd: the sd the seeds are sized for (at the
    design's evaluation size); seeds: the fewest that detect the effect (None: more than
    :data:`MAX_SEEDS`); detectable: what ``seeds`` detect; test_level: the comparison's share of the level."""

    row: str
    compared_with: str
    quantity: str
    claim: str | None
    smallest_effect: float
    basis_sd: float
    design_sd: float
    seeds: int | None
    detectable: float
    test_level: float


def quantity_name(row: Row) -> str:
    """The basis quantity a row's primary compares: the table's metric, or its flagged endpoint at full length."""
    if row.primary is None or row.primary.endpoint is None:
        return TABLE_QUANTITY
    endpoint = row.endpoints[row.primary.endpoint]
    return f"{endpoint.metric} steps {endpoint.window[0]}-{endpoint.window[1]}"


def write_basis(basis: Basis, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "spec": basis.spec,
        "metric": basis.metric,
        "problems": basis.problems,
        "seeds": list(basis.seeds),
        "values": {
            row: {q: {str(s): v for s, v in seeds.items()} for q, seeds in qs.items()}
            for row, qs in basis.values.items()
        },
        "run_seconds": dict(basis.run_seconds),
        "eval_seconds_per_problem": basis.eval_seconds_per_problem,
        "provenance": dict(basis.provenance),
    }
    out.write_text(json.dumps(record, indent=1) + "\n")
    return out


def read_basis(path: Path) -> Basis:
    """The basis in ``path``; a file that is not one fails naming the path and the fields it lacks."""
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable design basis ({exc})") from None
    missing = [field for field in BASIS_FIELDS if not isinstance(record, dict) or field not in record]
    if missing:
        raise ValueError(f"{path}: a design basis needs {', '.join(BASIS_FIELDS)}; missing: {', '.join(missing)}")
    return Basis(
        spec=record["spec"],
        metric=record["metric"],
        problems=int(record["problems"]),
        seeds=tuple(record["seeds"]),
        values={
            row: {q: {int(s): float(v) for s, v in seeds.items()} for q, seeds in qs.items()}
            for row, qs in record["values"].items()
        },
        run_seconds={row: float(v) for row, v in record["run_seconds"].items()},
        eval_seconds_per_problem=float(record["eval_seconds_per_problem"]),
        provenance=record["provenance"],
    )


def check_basis(spec: AblationSpec, basis: Basis) -> None:
    """Refuse a basis of another spec or metric, or one missing a compared row's primary quantity, naming it."""
    if basis.spec != spec.name or basis.metric != spec.metric:
        raise ValueError(
            f"the design basis is of spec '{basis.spec}' ({basis.metric}); spec '{spec.name}' compares {spec.metric}"
        )
    for row in spec.rows:
        if row.primary is None:
            continue
        quantity = quantity_name(row)
        for row_id in (row.id, row.compare_to):
            seeds = basis.values.get(row_id, {}).get(quantity, {})
            if len(seeds) < 2:
                raise ValueError(
                    f"the design basis of '{spec.name}' has {len(seeds)} seeds of row '{row_id}' on {quantity}; "
                    "a design needs at least 2 (rows in the basis: " + ", ".join(basis.values) + ")"
                )


def mean_accuracy(basis: Basis, row_id: str) -> float:
    """The row's table metric at the last step, averaged over the basis' seeds."""
    return float(np.mean(list(basis.values[row_id][TABLE_QUANTITY].values())))


def difference_variance(accuracy: float, reference: float, problems: int) -> float:
    """The most sampling variance one T = 1 sample per problem puts on a difference of two accuracies on
    ``problems`` problems: (a(1 − a) + b(1 − b)) / N (a problem's variance p(1 − p) is at most the mean's)."""
    return (accuracy * (1 - accuracy) + reference * (1 - reference)) / problems


def claim_detectable(se: float, df: float, level: float, power: float, claim: str) -> float:
    """The smallest margin a claim's one-sided tests show with ``power`` when Δ = 0 (t quantiles on ``df``):
    non_inferior (t(1 − level) + t(power))·se; equivalent (t(1 − level) + t(1 − (1 − power)/2))·se."""
    tail = power if claim == "non_inferior" else 1 - (1 - power) / 2
    return float((stats.t.ppf(1 - level, df) + stats.t.ppf(tail, df)) * se)


@functools.cache
def unit_detectable(n: int, level: float, power: float, claim: str | None) -> float:
    """What n seeds detect in units of the sd of their per-seed differences (a detectable effect is linear in it)."""
    se = 1 / math.sqrt(n)
    if claim is None:
        return detectable_effect(se, n - 1, level, power)
    return claim_detectable(se, n - 1, level, power, claim)


def seeds_for(sd: float, effect: float, level: float, power: float, claim: str | None) -> tuple[int | None, float]:
    """The fewest seeds (≥ 2, at most :data:`MAX_SEEDS`) whose paired test detects ``effect``, and what they detect."""
    for n in range(2, MAX_SEEDS + 1):
        found = sd * unit_detectable(n, level, power, claim)
        if found <= effect:
            return n, found
    return None, sd * unit_detectable(MAX_SEEDS, level, power, claim)


def upper_variance(variance: float, df: int, assurance: float) -> float:
    """The one-sided ``assurance`` upper confidence bound of a variance estimated on ``df`` degrees of freedom,
    s²·df/χ²(1 − assurance, df): sizing for it rather than s² buys the power also where s² came out low."""
    return variance * df / float(stats.chi2.ppf(1 - assurance, df))


def comparison_level(spec: AblationSpec, level: float = LEVEL) -> float:
    """Each primary comparison's share of the family-wise ``level`` (Bonferroni over the spec's primaries)."""
    return level / max(1, sum(row.primary is not None for row in spec.rows))


def fixed_design(
    spec: AblationSpec,
    basis: Basis,
    problems: int | None = None,
    level: float = LEVEL,
    power: float = POWER,
    assurance: float = ASSURANCE,
) -> list[ComparisonDesign]:
    """Every compared row's primary comparison, sized from ``basis`` at ``problems`` final evaluation
    problems (None: the basis' own). See the module's docstring for the rule."""
    check_basis(spec, basis)
    compared = [row for row in spec.rows if row.primary is not None]
    differences = {row.id: _differences(basis, row) for row in compared}
    raw = {row_id: float(np.var(values, ddof=1)) for row_id, values in differences.items()}
    dfs = {row_id: values.size - 1 for row_id, values in differences.items()}
    table = [row.id for row in compared if quantity_name(row) == TABLE_QUANTITY]
    pooled_df = sum(dfs[row_id] for row_id in table)
    pooled = upper_variance(float(np.mean([raw[row_id] for row_id in table])), pooled_df, assurance) if table else 0.0
    share = comparison_level(spec, level)
    designs = []
    for row in compared:
        quantity = quantity_name(row)
        own = upper_variance(raw[row.id], dfs[row.id], assurance)
        variance = _moved(basis, row, max(own, pooled) if quantity == TABLE_QUANTITY else own, problems)
        sd = math.sqrt(variance)
        seeds, detectable = seeds_for(sd, row.primary.smallest_effect, share, power, row.primary.claim)
        designs.append(
            ComparisonDesign(
                row=row.id,
                compared_with=row.compare_to,
                quantity=quantity,
                claim=row.primary.claim,
                smallest_effect=row.primary.smallest_effect,
                basis_sd=math.sqrt(raw[row.id]),
                design_sd=sd,
                seeds=seeds,
                detectable=detectable,
                test_level=share,
            )
        )
    return designs


def seeds_per_row(spec: AblationSpec, designs: Sequence[ComparisonDesign]) -> dict[str, int]:
    """Row -> the seeds it runs: the most any comparison it takes part in asks (at least 2; a comparison that
    needs more than :data:`MAX_SEEDS` asks for that many)."""
    seeds = {row.id: 2 for row in spec.rows}
    for design in designs:
        wanted = design.seeds or MAX_SEEDS
        for row_id in (design.row, design.compared_with):
            seeds[row_id] = max(seeds[row_id], wanted)
    return seeds


def design_plan(spec: AblationSpec, basis: Basis, problems: int) -> dict:
    """The fixed design as a campaign's seed plan (read by :func:`reports.planning.stein_plan.read_plan`): each row's seeds,
    numbered after the basis' last seed so no tested run repeats a basis run, sized at ``problems`` final
    problems; the comparisons that would need more than :data:`MAX_SEEDS` are named as unresolved."""
    designs = fixed_design(spec, basis, problems)
    counts = seeds_per_row(spec, designs)
    first = max(basis.seeds) + 1
    unresolved = [
        f"{d.row} vs {d.compared_with}: more than {MAX_SEEDS} seeds would be needed to detect {d.smallest_effect:g}"
        for d in designs
        if d.seeds is None
    ]
    return {
        "spec": spec.name,
        "design": "fixed",
        "pilot_seeds": None,
        "problems": problems,
        "seeds": {row: list(range(first, first + count)) for row, count in counts.items()},
        "comparisons": [dict(d.__dict__) for d in designs],
        "unresolved": unresolved,
        "summary": (
            f"Seeds from a fixed design sized on the basis' seeds {', '.join(map(str, basis.seeds))} (never tested "
            f"again): each primary detects its smallest effect with 80 % power at α/{len(designs)}, at {problems} final "
            "problems; seeds per row: " + ", ".join(f"{row} {count}" for row, count in counts.items()) + "."
        ),
    }


def optimal_problems(
    true_variance: float, sampling_variance: float, run_seconds: float, seconds_per_problem: float
) -> float:
    """The final evaluation size N that minimises a row's variance per unit of compute.

    One seed costs C + cN seconds and contributes σ²_t + v/N to the variance of a row's difference (σ²_t:
    the seed-to-seed variance of what the runs learnt; v: one problem's sampling variance of the
    difference), so a budget B buys B/(C + cN) seeds and Var = (σ²_t + v/N)(C + cN)/B, least at
    N* = √(vC / (σ²_t c)). Infinite where the runs do not vary beyond their evaluation.
    """
    if true_variance <= 0:
        return math.inf
    return math.sqrt(sampling_variance * run_seconds / (true_variance * seconds_per_problem))


def campaign_seconds(
    spec: AblationSpec, basis: Basis, seeds: Mapping[str, int], problems: int, earlier_problems: int = 0
) -> float:
    """Core-seconds of a campaign of ``seeds`` per row: each run's RL steps (the basis' mean for its row) and
    its evaluations (``problems`` final problems and ``earlier_problems`` over the earlier evaluations)."""
    per_problem = basis.eval_seconds_per_problem
    return sum(
        count * (basis.run_seconds[row_id] + per_problem * (problems + earlier_problems))
        for row_id, count in seeds.items()
    )


def _differences(basis: Basis, row: Row) -> np.ndarray:
    quantity = quantity_name(row)
    mine, theirs = basis.values[row.id][quantity], basis.values[row.compare_to][quantity]
    shared = sorted(set(mine) & set(theirs))
    return np.asarray([mine[seed] - theirs[seed] for seed in shared])


def _moved(basis: Basis, row: Row, variance: float, problems: int | None) -> float:
    """A variance of the row's per-seed differences moved to ``problems`` final problems (the table's metric)."""
    if problems is None or quantity_name(row) != TABLE_QUANTITY:
        return variance
    accuracy, reference = mean_accuracy(basis, row.id), mean_accuracy(basis, row.compare_to)
    true = max(0.0, variance - difference_variance(accuracy, reference, basis.problems))
    return true + difference_variance(accuracy, reference, problems)
