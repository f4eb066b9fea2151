"""A group-sequential campaign's decisions so far, from its plan and its finished runs: each primary judged look by
look on the seeds both its rows ran (numbered from the plan's first seed), until a look decides it or its last look
leaves it undecided; and the seeds each row needs for the next look.

The plan (:func:`reports.planning.sequential_plan.sequential_plan`) gives every primary its looks, margin and
direction. The campaign's looks are the declared seed counts; at look k every primary still open whose looks reach
that count is judged on the first n_k seeds (:func:`reports.statistics.sequential.judge_look`). Under a plan's
``maxima: variance`` a look that leaves a primary open re-sizes its maximum from the spread of those seeds
(:func:`reports.planning.resizing.resized_maximum`), and a primary whose maximum comes to its seeds or below stops
undecided; each re-sizing is kept, with its reason, in the look's file. A row runs the next look's seeds while any
comparison it takes part in is open, so a cumulative table's row keeps training for the row after it. The same runs
always give the same decisions: a killed campaign resumes at the look it reached.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from algos.campaign.ablations import AblationSpec
from algos.trainer.run_files import FINAL_FILE
from reports.analysis.primaries import primary_values
from reports.analysis.runs import FinishedRun, load_run
from reports.planning.fixed_design import quantity_name
from reports.planning.resizing import resized_maximum, sd_bound
from reports.statistics.comparisons import LEVEL, Direction
from reports.statistics.sequential import LookResult, SequentialDesign, judge_look, sequential_design


@dataclass(frozen=True)
class ComparisonState:
    """One primary's state. result: the deciding look's (or the undecided last look's), None while open.
    judged: the looks judged so far. maximum: the most seeds it may be judged on (the last of its design's looks,
    unless re-sized). resizings: each re-sizing of its maximum so far, with its reason (:func:`resizing_record`)."""

    row: str
    compared_with: str
    design: SequentialDesign
    expected: float
    result: LookResult | None
    judged: int
    maximum: int
    resizings: tuple[dict[str, Any], ...] = ()

    @property
    def decided(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class SequentialState:
    """Every primary's state after ``looks_done`` of the campaign's looks; ``next_seeds``: row -> the seeds (counted
    from the first) the next look needs, for the rows still running (empty once every primary is decided)."""

    spec: str
    first_seed: int
    looks: tuple[int, ...]
    looks_done: int
    comparisons: tuple[ComparisonState, ...]
    next_seeds: dict[str, int]

    @property
    def finished(self) -> bool:
        return all(comparison.decided for comparison in self.comparisons)

    def seeds_read(self) -> dict[str, int]:
        """Row -> the seeds its decisions read (the most any of its comparisons was judged on)."""
        used: dict[str, int] = {}
        for state in self.comparisons:
            seeds = state.design.looks[state.judged - 1] if state.judged else 0
            for row in (state.row, state.compared_with):
                used[row] = max(used.get(row, 0), seeds)
        return used


def read_sequential_plan(path: Path) -> dict[str, Any]:
    """A sequential plan written by ``python -m reports.seed_design --write-plan ... --sequential``."""
    record = json.loads(path.read_text())
    if record.get("design") != "sequential":
        raise ValueError(f"{path}: not a sequential plan (design {record.get('design')!r})")
    return record


def sequential_state(
    spec: AblationSpec, plan: Mapping[str, Any], runs_dir: Path, through_look: int | None = None
) -> SequentialState:
    """The decisions the finished runs allow, look by look, up to ``through_look`` (0-based; None: as far as the runs
    go). A look whose runs are not all finished is not judged: its seeds are the ``next_seeds``."""
    first, looks = int(plan["first_seed"]), tuple(plan["looks"])
    states = [
        ComparisonState(
            row=c["row"],
            compared_with=c["compared_with"],
            design=sequential_design(c["looks"], plan["level"], c["margin"], plan["spending"]),
            expected=c["expected"],
            result=None,
            judged=0,
            maximum=c.get("maximum", c["looks"][-1]),
        )
        for c in plan["comparisons"]
    ]
    resized = plan.get("maxima") == "variance"
    rows = {row.id: row for row in spec.rows}
    loaded: dict[tuple[str, int], FinishedRun] = {}  # a later look reads the earlier looks' runs again
    last = len(looks) - 1 if through_look is None else min(through_look, len(looks) - 1)
    done = 0
    for k, seeds in enumerate(looks):
        if all(state.decided for state in states):
            break
        due = [i for i, s in enumerate(states) if not s.decided and seeds in s.design.looks and seeds <= s.maximum]
        needed = _needed(states, due, seeds)
        if k > last or not _finished(runs_dir, spec.name, needed, first):
            return SequentialState(spec.name, first, looks, done, tuple(states), needed)
        values = _values(spec, runs_dir, needed, first, loaded)
        for i in due:
            state = states[i]
            quantity = quantity_name(rows[state.row])
            mine, theirs = values[state.row][quantity], values[state.compared_with][quantity]
            unlogged = [first + j for j in range(seeds) if first + j not in mine or first + j not in theirs]
            if unlogged:
                raise ValueError(
                    f"{spec.name}: {quantity} is not in the runs of seeds {unlogged} of {state.row} or "
                    f"{state.compared_with}, so look {k + 1} cannot judge them"
                )
            differences = [mine[first + j] - theirs[first + j] for j in range(seeds)]
            result = judge_look(differences, state.design, state.expected)
            state = dataclasses.replace(state, judged=state.judged + 1)
            if resized and not result.stopped:
                state, result = _resized(state, result, differences, plan, k + 1)
            states[i] = dataclasses.replace(state, result=result if result.stopped else None)
        done = k + 1
    return SequentialState(spec.name, first, looks, done, tuple(states), {})


def _resized(
    state: ComparisonState, result: LookResult, differences: list[float], plan: Mapping[str, Any], look: int
) -> tuple[ComparisonState, LookResult]:
    """The state after a look that left it open re-sizes its maximum; the result undecided where the maximum comes
    to the look's seeds or below. A look without spread leaves the maximum as it was, or the next look's where it was
    this one's (such a look decides nothing, and the rule stops a primary only by its spread)."""
    sd = float(np.std(differences, ddof=1))
    design, seeds = state.design, len(differences)
    if not sd > 0:
        later = [n for n in design.looks if n > seeds]
        return dataclasses.replace(state, maximum=max(state.maximum, later[0] if later else seeds)), result
    maximum = resized_maximum(
        sd, seeds, design.looks, design.margin, design.level, design.spending, plan["assurance"], plan["power"]
    )
    record = resizing_record(look, seeds, sd, sd_bound(sd, seeds, plan["assurance"]), state.maximum, maximum)
    state = dataclasses.replace(state, maximum=maximum, resizings=(*state.resizings, record))
    if maximum <= seeds:
        result = dataclasses.replace(result, verdict=Direction.INCONCLUSIVE)
    return state, result


def resizing_record(look: int, seeds: int, sd: float, bound: float, before: int, after: int) -> dict[str, Any]:
    """One re-sizing as a look file keeps it: the look (1-based) and its seeds, the differences' sd and its upper
    bound, the maximum before and after, and why in words."""
    if after <= seeds:
        why = f"the spread asks for at most {after} seeds and {seeds} are in: stops undecided"
    elif after == before:
        why = "the spread asks for the same maximum"
    else:
        why = f"the spread asks for {after} seeds ({'more' if after > before else 'fewer'} than {before})"
    return {
        "look": look,
        "seeds": seeds,
        "sd": sd,
        "sd_bound": bound,
        "maximum_before": before,
        "maximum_after": after,
        "why": why,
    }


def _needed(states: list[ComparisonState], due: list[int], seeds: int) -> dict[str, int]:
    needed: dict[str, int] = {}
    for i in due:
        for row in (states[i].row, states[i].compared_with):
            needed[row] = seeds
    return needed


def _finished(runs_dir: Path, spec: str, needed: Mapping[str, int], first: int) -> bool:
    return all(
        (runs_dir / spec / row / f"seed{seed}" / FINAL_FILE).is_file()
        for row, count in needed.items()
        for seed in range(first, first + count)
    )


def _values(
    spec: AblationSpec,
    runs_dir: Path,
    needed: Mapping[str, int],
    first: int,
    loaded: dict[tuple[str, int], FinishedRun],
) -> dict:
    for row, count in needed.items():
        for seed in range(first, first + count):
            if (row, seed) not in loaded:
                loaded[row, seed] = load_run(runs_dir / spec.name / row / f"seed{seed}")
    runs = {row.id: [loaded[row.id, s] for s in range(first, first + needed.get(row.id, 0))] for row in spec.rows}
    return primary_values(spec, runs)


def state_record(state: SequentialState) -> dict[str, Any]:
    """The state as the workflow's look file: each primary's verdict, look and seeds, and the next look's seeds."""
    return {
        "spec": state.spec,
        "looks_done": state.looks_done,
        "finished": state.finished,
        "level": LEVEL,
        "comparisons": [
            {
                "row": s.row,
                "compared_with": s.compared_with,
                "verdict": None if s.result is None else str(s.result.verdict),
                "seeds": None if s.result is None else s.result.seeds,
                "look": None if s.result is None else s.result.look + 1,
                "delta": None if s.result is None else s.result.comparison.delta.mean,
                "direction_p": None if s.result is None else s.result.direction_p,
                "equivalence_p": None if s.result is None else s.result.equivalence_p,
                **({"maximum": s.maximum, "resizings": list(s.resizings)} if s.resizings else {}),
            }
            for s in state.comparisons
        ],
        "next_seeds": {row: list(range(state.first_seed, state.first_seed + n)) for row, n in state.next_seeds.items()},
        "seeds_read": {
            row: list(range(state.first_seed, state.first_seed + n)) for row, n in state.seeds_read().items()
        },
    }
