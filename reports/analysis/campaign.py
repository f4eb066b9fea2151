"""A campaign's analysis from its plan file: the seeds each row ran (``seeds`` per row by default, a Stein plan's or a
fixed design's, or those a group-sequential design's looks asked for) and its family judged accordingly
(:func:`reports.analysis.family.analyse`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from algos.campaign.ablations import AblationSpec
from reports.analysis.family import Analysis, analyse
from reports.analysis.sequential import SequentialState, sequential_state
from reports.planning.stein_plan import Plan, read_plan


@dataclass(frozen=True)
class CampaignAnalysis:
    """The analysis with what sized it: a Stein plan or fixed design (``planned``), or a sequential campaign's state
    and plan record (``sequential``, ``record``); all None for the default seeds."""

    analysis: Analysis
    planned: Plan | None
    sequential: SequentialState | None
    record: dict | None


def analyse_campaign(
    spec: AblationSpec,
    runs_dir: Path,
    seeds: int,
    plan: Path | None = None,
    eval_dir: Path | None = None,
    benchmarks: Sequence[str] = (),
    method: str = "holm",
) -> CampaignAnalysis:
    """The campaign's analysis (see the module's docstring); ``plan`` None: 0..seeds-1 per row."""
    record = json.loads(plan.read_text()) if plan else None
    if record is not None and record.get("design") == "sequential":
        state = sequential_state(spec, record, runs_dir)
        read = {row: list(range(state.first_seed, state.first_seed + n)) for row, n in state.seeds_read().items()}
        analysis = analyse(spec, runs_dir, read, eval_dir, benchmarks, method, sequential=state)
        return CampaignAnalysis(analysis, None, state, record)
    planned = read_plan(plan) if plan else None
    analysis = analyse(
        spec,
        runs_dir,
        planned.seeds if planned else seeds,
        eval_dir,
        benchmarks,
        method,
        planned.pilot_seeds if planned else None,
    )
    return CampaignAnalysis(analysis, planned, None, record)
