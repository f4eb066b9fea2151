"""Each comparison's looks under a group-sequential design: the declared seed counts up to the least one whose
maximum gives the decision its power, sized from a design basis that no tested run is part of.

A comparison must decide both ways with ``power``: call the direction when Δ is ±margin (the two-sided test at its
share a of the level) and show equivalence when Δ = 0 (both one-sided tests at a). A fixed sample needs the most
seeds either asks (:func:`reports.planning.fixed_design.seeds_for`, paired t); spending the level over K looks costs
a factor R = ((b_K + z_β) / (z + z_β))², b_K the last boundary and z the fixed test's critical value (Jennison &
Turnbull 2000, §2.6: the group-sequential design's maximum information over the fixed one's); the maximum is the
least declared look at or above R times the fixed count (the last declared look where none is), and the looks are
the declared ones up to it. The level holds whatever the basis says; the basis decides the power and the cost.

Under ``maxima: variance`` (:mod:`reports.planning.resizing`) a comparison's looks are every declared look up to the
cap, its boundaries spent over all of them, and the basis gives only its starting maximum, which each look re-sizes
from the spread of the seeds it has.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from algos.campaign.ablations import AblationSpec, Row
from algos.campaign.study_design import MAXIMA_RULES, capped_looks
from algos.config.presets import ConfigError
from reports.planning.fixed_design import Basis, comparison_level, fixed_design, seeds_for
from reports.planning.resizing import RESIZING_POWER, inflation, maximum_for
from reports.statistics.comparisons import POWER

ASSURANCE = 0.8
"""The one-sided upper bound of a basis variance that a comparison's maximum is sized for (see the module's docstring)."""


def comparison_looks(
    sd: float, margin: float, level: float, looks: Sequence[int], spending: str, power: float = POWER
) -> tuple[int, ...]:
    """The looks of one comparison whose per-seed differences have sd ``sd`` (see the module's docstring)."""
    declared = sorted(int(n) for n in looks)
    direction, _ = seeds_for(sd, margin, level, power, None)
    equivalence, _ = seeds_for(sd, margin, level, power, "equivalent")
    fixed = max(direction or math.inf, equivalence or math.inf)
    maximum = declared[0]
    for _ in range(len(declared)):  # R depends on the looks below the maximum: settle both together
        inflated = fixed * inflation(declared[: declared.index(maximum) + 1], level, power, spending)
        wanted = next((n for n in declared if n >= inflated), declared[-1])
        if wanted == maximum:
            break
        maximum = wanted
    return tuple(n for n in declared if n <= maximum)


def with_maxima(spec: AblationSpec, maxima: str) -> AblationSpec:
    """The spec with its sequential design's maxima set by the rule ``maxima`` (one of
    :data:`algos.campaign.study_design.MAXIMA_RULES`): the simulations' way to set two rules side by side."""
    if maxima not in MAXIMA_RULES:
        raise ValueError(f"maxima '{maxima}' is not one of: {', '.join(MAXIMA_RULES)}")
    sequential = dataclasses.replace(spec.design.sequential, maxima=maxima)
    return dataclasses.replace(spec, design=dataclasses.replace(spec.design, sequential=sequential))


def comparison_margin(spec: AblationSpec, row: Row) -> float:
    """The ±margin of a primary's equivalence decision: the design's margin on the table's metric, else the
    primary's smallest effect (its claim's margin, or its endpoint's smallest effect in the endpoint's units)."""
    if row.primary.endpoint is None and spec.design.margin is not None:
        return spec.design.margin
    return row.primary.smallest_effect


def declared_plan(spec: AblationSpec, problems: int, cap: int | None = None) -> dict:
    """What a campaign's plan takes from the spec and the workflow's settings (:data:`DECLARED_FIELDS`, with the
    spec's name and the design's kind): the looks (the spec's, up to ``cap``, a campaign's own limit on the seeds a
    row runs: :func:`algos.campaign.study_design.capped_looks`), spending, maxima rule, power, each comparison's
    level, first seed and final evaluation size. Nothing here is sized from a basis, so the workflow reads it at
    every start without computing a boundary."""
    sequential = spec.design.sequential
    declared = sequential.looks
    if cap is not None and cap > declared[-1]:
        raise ConfigError(
            f"{spec.path}: the campaign's seed cap {cap} (ablations.max_seeds) is above the design's last look "
            f"({declared[-1]} seeds) and would add a look the spec never declared; set it to at most {declared[-1]} "
            "or null"
        )
    return {
        "spec": spec.name,
        "design": "sequential",
        "spending": sequential.spending,
        "looks": list(capped_looks(declared, cap)),
        "cap": cap,
        "maxima": sequential.maxima,
        "power": RESIZING_POWER if sequential.maxima == "variance" else POWER,
        "level": comparison_level(spec),
        "problems": problems,
        "first_seed": sequential.first_seed,
    }


def sequential_plan(
    spec: AblationSpec, basis: Basis, problems: int, assurance: float = ASSURANCE, cap: int | None = None
) -> dict:
    """The spec's group-sequential design as a campaign's plan: its :func:`declared_plan`, and per primary its looks
    (sized from ``basis`` at ``problems`` final problems) and margin, per row the most seeds it may run and its seed
    numbers (from the design's first_seed, after every seed an earlier campaign reported)."""
    declared = declared_plan(spec, problems, cap)
    looks, level, power = tuple(declared["looks"]), declared["level"], declared["power"]
    designs = fixed_design(spec, basis, problems, assurance=assurance)
    rows = {row.id: row for row in spec.rows}
    resized = declared["maxima"] == "variance"
    spending = declared["spending"]
    comparisons = []
    for design in designs:
        row = rows[design.row]
        margin = comparison_margin(spec, row)
        if resized:  # boundaries over every look to the cap; the maximum, re-sized at each look, starts from the basis
            own_looks = looks
            maximum = maximum_for(design.design_sd, looks, margin, level, spending, power)
        else:
            own_looks = comparison_looks(design.design_sd, margin, level, looks, spending)
            maximum = own_looks[-1]
        comparisons.append(
            {
                "row": design.row,
                "compared_with": design.compared_with,
                "quantity": design.quantity,
                "expected": 0.0 if row.primary.claim else (1.0 if row.primary.direction == "up" else -1.0),
                "margin": margin,
                "design_sd": design.design_sd,
                "looks": list(own_looks),
                **({"maximum": maximum} if resized else {}),
            }
        )
    most = {row.id: 0 for row in spec.rows}
    for comparison in comparisons:  # re-sized maxima may grow to the cap: a row's most is its comparisons' last look
        for row_id in (comparison["row"], comparison["compared_with"]):
            most[row_id] = max(most[row_id], comparison["looks"][-1])
    first = declared["first_seed"]
    return {  # in the order of every plan written so far
        **{key: declared[key] for key in ("spec", "design", "spending", "looks", "cap", "maxima", "power", "level")},
        "assurance": assurance,
        "problems": problems,
        "first_seed": first,
        "comparisons": comparisons,
        "max_seeds": most,
        "seeds": {row: list(range(first, first + count)) for row, count in most.items()},
    }


DECLARED_FIELDS = ("looks", "cap", "maxima", "power", "spending", "level", "first_seed", "problems")
"""What a campaign's plan takes from its spec and workflow settings; changing any of them changes every boundary or
maximum."""
PLANNED_BEFORE = {"maxima": MAXIMA_RULES[0], "power": POWER}
"""What a plan written before a declared field existed meant by its absence."""


def plan_change(path: Path, record: Mapping[str, Any]) -> str | None:
    """Where the plan file ``path`` of a campaign under way was written with other looks, cap, spending, level, first
    seed or final evaluation size than ``record`` (the plan the spec and settings give now): one line saying what
    differs and how to go on; None where the file is absent or agrees."""
    if not path.is_file():
        return None
    written = json.loads(path.read_text())
    changed = [
        f"{key} {written.get(key, PLANNED_BEFORE.get(key))!r} -> {record[key]!r}"
        for key in DECLARED_FIELDS
        if written.get(key, PLANNED_BEFORE.get(key)) != record[key]
    ]
    if not changed:
        return None
    return (
        f"{path}: the campaign under way for spec '{record['spec']}' was planned otherwise ({'; '.join(changed)}): "
        "a campaign keeps its looks to the end; restore the spec or settings, or move results/plans/"
        f"{record['spec']}.* and its runs aside to start a new campaign"
    )
