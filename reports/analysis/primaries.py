"""The quantities a spec's primary comparisons compare, per row and seed: the table's metric at the last step, and
each flagged endpoint's mean over its window (scaled to the run's length), read from the runs' own files exactly as
a report reads them. A design basis holds them; a group-sequential campaign decides on them."""

from __future__ import annotations

from algos.campaign.ablations import AblationSpec
from reports.analysis.endpoints import step_factor, window_mean
from reports.analysis.runs import FinishedRun
from reports.planning.fixed_design import TABLE_QUANTITY, quantity_name


def primary_values(spec: AblationSpec, runs: dict[str, list[FinishedRun]]) -> dict[str, dict[str, dict[int, float]]]:
    """Row -> quantity -> seed -> value of every quantity a primary of ``spec`` compares, on every row."""
    quantities = {TABLE_QUANTITY: None}
    for row in spec.rows:
        if row.primary is not None and row.primary.endpoint is not None:
            quantities[quantity_name(row)] = row.endpoints[row.primary.endpoint]
    values: dict[str, dict[str, dict[int, float]]] = {}
    for row in spec.rows:
        steps = spec.config(row.id).run.steps
        per_quantity: dict[str, dict[int, float]] = {name: {} for name in quantities}
        for run in runs[row.id]:
            for name, endpoint in quantities.items():
                if endpoint is None:
                    per_quantity[name][run.seed] = float(run.final[spec.metric])
                    continue
                value = window_mean(run.history, endpoint.metric, endpoint.scaled(step_factor(run, steps)).window)
                if value is not None:
                    per_quantity[name][run.seed] = value
        values[row.id] = per_quantity
    return values
