"""Ablation tables as data: a base preset, rows of toggle changes, and the paper's number per row.

A spec in ``experiments/ablations/`` reads::

    title: "DAPO Table 1: progressive techniques"
    paper: "DAPO (Yu et al. 2025, arXiv 2503.14476), Table 1"
    paper_metric: AIME 2024 avg@32 (Qwen2.5-32B base)
    metric: eval/test/accuracy_t1
    kind: cumulative
    preset: grpo
    settings: {kl.coef: 0.0}
    rows:
      - {id: naive_grpo, label: Naive GRPO, paper: 30}
      - {id: overlong_filtering, label: "+ Overlong Filtering", paper: 36, changes: {reward.overlong_filter: true}}

``settings`` are the spec's changes to its preset, shared by the rows built on it. ``endpoints``
declare, before anything runs, what each row is judged by beside the table's metric: a metric of
``algos.trainer.metrics``, a window of steps it is averaged over (at the row's full length; a campaign's
step scale scales it), the direction the paper argues for this row against the row it is compared
with, and the figure or section that argues it. The spec's ``endpoints`` apply to every row; a row's
own ``endpoints`` replace them::

    endpoints:
      - {metric: actor/entropy, window: [10, 40], direction: up, source: "DAPO §3.1, Fig. 2b", smallest_effect: 0.01}

A spec with anything to test declares its study design before any run (:mod:`algos.campaign.study_design`):
the smallest effect each row's one primary comparison is sized for, how the other comparisons share the
family-wise level, and optionally a margin for rows that claim equivalence or non-inferiority::

    design: {smallest_effect: "5 points", secondary: gated}

An endpoint may be flagged ``primary: true`` (the row's primary instead of the table's metric), and a row
may declare ``claim: equivalent`` or ``claim: non_inferior``. An unknown key anywhere in a spec fails when
it is read, naming the file, the row and the nearest valid key.

A spec may declare a seed ``plan`` (run by the workflow with ``ablations.plan: true``; see
:mod:`reports.planning.stein_plan`): ``{pilot_seeds: 3, budget: "4 h", smallest_effect: "3 points"}``, the
smallest effect of interest on the table's metric; every compared endpoint then declares its own
``smallest_effect``, a positive number in its metric's units or with a unit the metric allows
(``"2 points"`` of a share, ``"2 tokens"`` of a length).

A spec may be a declared variant of another: the same table under a study design of its own, its runs, plans and
MLflow experiment under its own name, so the other spec's campaign and archive stay as they are::

    variant_of: dapo_table1
    title: "DAPO Table 1 within ±2.5 points"
    design: {smallest_effect: "2.5 points", secondary: separate, ...}

The kind says how rows are built and compared. ``cumulative``:
row k is the preset, the settings and the changes of rows 1..k, and is compared with row k - 1.
``leave_one_out``: each row is the spec's preset with the settings and its own changes, or another
``preset`` (a baseline, taken as published) with its own changes only; it is compared with the
``reference`` row (the full method), or with the row its ``compare_to`` names (a table of several
settings, each with its own reference).
Every row's config is built when the spec is read, so a typo or an invalid value fails at once,
naming the file and the row. Adding a row or a table needs no code.

Command line: ``python -m algos.campaign.ablations --list``; ``python -m algos.campaign.ablations --spec dapo_table1
--row clip_higher [--step-scale 0.5] [--set run.eval_problems=128] [--tuned grpo:optim.lr=3e-5]``
prints the row's resolved config, as a campaign with that budget runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from algos.campaign.study_design import (
    QUANTITY,
    Primary,
    StudyDesign,
    check_basis_file,
    parse_design,
    parse_effect,
    resolve_primary,
)
from algos.config.presets import (
    PROJECT_ROOT,
    ConfigError,
    checked_settings,
    config_to_dict,
    flatten,
    load_config,
    named_yaml,
    parse_override,
    read_spec_file,
    read_yaml,
    unknown_key_error,
    yaml_names,
)
from algos.config.schema import RLConfig
from algos.trainer.metrics import METRICS

ABLATIONS_DIR = PROJECT_ROOT / "experiments" / "ablations"
WORKFLOW_CONFIG = PROJECT_ROOT / "experiments" / "config.yaml"
KINDS = ("cumulative", "leave_one_out")
ROW_ID = re.compile(r"^[a-z0-9_]+$")
REQUIRED = ("title", "paper", "paper_metric", "kind", "preset", "rows")
TOP_LEVEL_FIELDS = (*REQUIRED, "design", "metric", "reference", "settings", "endpoints", "plan")
VARIANT_FIELDS = ("variant_of", "title", "design")
"""A variant of a spec: the same rows, presets, settings and endpoints, under a study design (and title) of its own."""
ROW_FIELDS = ("id", "label", "paper", "preset", "changes", "compare_to", "endpoints", "claim")
DEFAULT_METRIC = "eval/test/accuracy_t1"
DIRECTIONS = ("up", "down")
ENDPOINT_FIELDS = ("metric", "window", "direction", "source")
OPTIONAL_ENDPOINT_FIELDS = ("smallest_effect", "primary")
PLAN_FIELDS = ("pilot_seeds", "budget", "smallest_effect")
DURATION_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}
EVAL_SCOPES = ("all", "read")
TUNED_FROM_SWEEP = ("sweep", "configuration", "verdict", "settings")
"""A tuned preset's entry written by a sweep's confirmation (its best_params.yaml)."""
CONFIRMED, PRESET_STANDS = "better", "preset stands"
"""The verdicts a sweep's best_params.yaml carries: a configuration confirmed better, or none and the preset stands."""
EVALUATION_PREFIX = "eval/"  # the held-out evaluation's metrics (algos.trainer.train.held_out_accuracy)


@dataclass(frozen=True)
class Endpoint:
    """A declared endpoint: ``metric`` averaged over steps ``window`` (first, last; inclusive), expected to
    move ``direction`` (up: the row above the row it is compared with), as ``source`` argues."""

    metric: str
    window: tuple[int, int]
    direction: str
    source: str
    smallest_effect: float | None = None
    primary: bool = False

    def scaled(self, factor: float) -> Endpoint:
        """The endpoint with its window scaled like the run's step counts (see :func:`scale_steps`)."""
        first = max(1, round(self.window[0] * factor)) if self.window[0] else 0
        last = max(first, round(self.window[1] * factor))
        return dataclasses.replace(self, window=(first, last))

    def describe(self) -> str:
        """One line: metric, window, direction and source."""
        return f"{self.metric} over steps {self.window[0]}-{self.window[1]}, expected {self.direction} ({self.source})"


@dataclass(frozen=True)
class SeedPlan:
    """A spec's seed plan (:mod:`reports.planning.stein_plan`): a pilot of ``pilot_seeds`` per row, then as many seeds
    as Stein's procedure asks, all runs of the spec within ``budget_seconds`` of training time.
    ``smallest_effect``: the smallest effect of interest on the table's metric, in its units; each
    endpoint declares its own."""

    pilot_seeds: int
    budget_seconds: float
    smallest_effect: float


@dataclass(frozen=True)
class Row:
    """One row: its resolved changes over ``preset``, the row it is compared with (None: none), its endpoints,
    and its primary comparison (:mod:`algos.campaign.study_design`; None for a row compared with none)."""

    id: str
    label: str
    paper: float | None
    preset: str
    settings: dict[str, Any]
    compare_to: str | None
    endpoints: tuple[Endpoint, ...] = ()
    primary: Primary | None = None


@dataclass(frozen=True)
class AblationSpec:
    """A table: rows in the paper's order, the metric ours is read from, and how rows are compared."""

    name: str
    path: Path
    title: str
    paper: str
    paper_metric: str
    metric: str
    kind: str
    rows: tuple[Row, ...]
    design: StudyDesign | None = None
    plan: SeedPlan | None = None

    def row(self, row_id: str) -> Row:
        for row in self.rows:
            if row.id == row_id:
                return row
        raise ConfigError(f"spec '{self.name}' has no row '{row_id}'; rows: {', '.join(r.id for r in self.rows)}")

    def config(self, row_id: str, budget: Budget | None = None) -> RLConfig:
        """The row's resolved config; with ``budget``, as a campaign runs it (see :class:`Budget`)."""
        row = self.row(row_id)
        if budget is None:
            return load_config(row.preset, settings=row.settings)
        self.check_budget(budget)
        settings = {**budget.tuned_settings(row.preset), **row.settings}
        scaled = scale_steps(load_config(row.preset, settings=settings, overrides=budget.overrides), budget.step_scale)
        spaced = scaled if budget.eval_points is None else with_eval_points(scaled, budget.eval_points)
        if budget.eval_scope == "all":
            return spaced
        return with_eval_steps(spaced, self.read_windows(row_id, budget.step_scale))

    def read_windows(self, row_id: str, step_scale: float = 1.0) -> list[tuple[int, int]]:
        """The windows of steps (first, last; inclusive) at which an endpoint reads the row's held-out evaluation (its
        own endpoints, and those of the rows compared with it), scaled like a campaign's runs; the table's metric at
        the last step, which every report reads, aside."""
        readers = [row for row in self.rows if row_id in (row.id, row.compare_to)]
        return sorted(
            {
                endpoint.scaled(step_scale).window
                for row in readers
                for endpoint in row.endpoints
                if endpoint.metric.startswith(EVALUATION_PREFIX)
            }
        )

    @functools.cached_property
    def _flat_configs(self) -> dict[str, dict[str, Any]]:
        """Every row's config (without a budget) as dotted keys, built once per spec."""
        return {row.id: flatten(config_to_dict(self.config(row.id))) for row in self.rows}

    def check_budget(self, budget: Budget) -> None:
        """Refuse a campaign override of a key on which this spec's rows differ: it would erase their difference."""
        for text in budget.overrides:
            key, _ = parse_override(text)
            values = {row_id: flat.get(key) for row_id, flat in self._flat_configs.items()}
            if len({repr(value) for value in values.values()}) > 1:
                shown = ", ".join(f"{row_id}: {value!r}" for row_id, value in values.items())
                raise ConfigError(
                    f"spec '{self.name}': the campaign override '{text}' would erase a difference between its rows "
                    f"({shown}); scale step counts with the step scale, or change the rows themselves"
                )


@dataclass(frozen=True)
class Budget:
    """How a campaign runs each row: tuned values, ``key=value`` overrides, every step count times ``step_scale``.

    ``tuned`` maps a preset to ``key=value`` settings (a sweep's best parameters) that every row built
    on that preset starts from; the row's own changes still win. Overrides may only set keys on
    which a spec's rows agree (e.g. ``run.eval_problems``); step counts that rows set differently
    (critic pretraining: 50 in VAPO, 0 without it) are scaled instead, so a shorter campaign keeps
    each row's proportions. ``eval_points`` (None keeps the scaled ``run.eval_every``) spaces that many
    held-out evaluations evenly over each run, whatever its length, so its curves have that many points.
    ``eval_scope`` "read" keeps of those only the evaluations an endpoint of the spec reads (and the last, which
    every table reads): the rest cost a decisive campaign time and change no number it reports.
    """

    overrides: tuple[str, ...] = ()
    step_scale: float = 1.0
    tuned: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    eval_points: int | None = None
    eval_scope: str = "all"

    def __post_init__(self) -> None:
        if self.eval_scope not in EVAL_SCOPES:
            raise ConfigError(f"ablations.eval_scope must be one of: {', '.join(EVAL_SCOPES)}; got {self.eval_scope!r}")

    def options(self, preset: str | None = None) -> list[str]:
        """The budget as the options :func:`add_budget_arguments` declares; of the tuned values only ``preset``'s."""
        options = ["--step-scale", str(self.step_scale)]
        options += ["--eval-points", str(self.eval_points)] if self.eval_points else []
        options += ["--eval-scope", self.eval_scope] if self.eval_scope != "all" else []
        for text in self.overrides:
            options += ["--set", text]
        for text in self.tuned.get(preset, ()) if preset else ():
            options += ["--tuned", f"{preset}:{text}"]
        return options

    def tuned_settings(self, preset: str) -> dict[str, Any]:
        """The checked settings tuned for ``preset`` (empty if none)."""
        pairs = dict(parse_override(text) for text in self.tuned.get(preset, ()))
        return checked_settings(pairs, f"tuned values of preset '{preset}'")


STEP_COUNTS = (
    ("run", "steps"),
    ("run", "eval_every"),
    ("run", "checkpoint_every"),
    ("critic", "pretrain_steps"),
    ("critic", "reward_model_steps"),
    ("optim", "lr_warmup_steps"),
)


def scale_steps(cfg: RLConfig, factor: float) -> RLConfig:
    """``cfg`` with every step count in :data:`STEP_COUNTS` times ``factor``, rounded; a nonzero count stays >= 1."""
    if factor <= 0:
        raise ConfigError(f"the step scale must be positive, got {factor}")
    sections: dict[str, dict[str, int]] = {}
    for section, key in STEP_COUNTS:
        count = getattr(getattr(cfg, section), key)
        sections.setdefault(section, {})[key] = max(1, round(count * factor)) if count else 0
    return dataclasses.replace(
        cfg, **{name: dataclasses.replace(getattr(cfg, name), **counts) for name, counts in sections.items()}
    )


def with_eval_points(cfg: RLConfig, points: int) -> RLConfig:
    """``cfg`` evaluating about ``points`` times (steps 0 and last included): ``run.eval_every`` = steps / (points - 1).

    The interval is rounded and at least 1, so a run with fewer steps than ``points - 1`` evaluates at every step.
    """
    if points < 2:
        raise ConfigError(f"ablations.eval_points must be at least 2 (the first and the last step), got {points}")
    every = max(1, round(cfg.run.steps / (points - 1)))
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, eval_every=every))


def with_eval_steps(cfg: RLConfig, windows: Sequence[tuple[int, int]]) -> RLConfig:
    """``cfg`` evaluating only at the steps of its schedule that fall in ``windows`` (first, last; inclusive), and
    at its last step: the same evaluations at those steps, so the same numbers, without the others."""
    steps = tuple(
        step for step in range(cfg.run.steps) if cfg.run.evaluates(step) and any(a <= step <= b for a, b in windows)
    )
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, eval_steps=steps))


def available_specs(ablations_dir: Path = ABLATIONS_DIR) -> list[str]:
    """Names of the spec files in ``ablations_dir``."""
    return yaml_names(ablations_dir)


def read_spec(name: str, ablations_dir: Path = ABLATIONS_DIR) -> AblationSpec:
    """Parse, check and resolve one spec; every row's config is built once to prove it valid."""
    path, body = _spec_body(ablations_dir, name)
    if body["kind"] not in KINDS:
        raise ConfigError(f"{path}: kind '{body['kind']}' is not one of: {', '.join(KINDS)}")
    if not isinstance(body["rows"], list) or not body["rows"]:
        raise ConfigError(f"{path}: 'rows' must be a non-empty list")
    common = checked_settings(body.get("settings") or {}, f"{path} settings")
    metric = str(body.get("metric", DEFAULT_METRIC))
    if metric not in METRICS:
        raise unknown_key_error(f"{path}: metric", metric, list(METRICS))
    design = parse_design(body["design"], metric, f"{path}: design", ablations_dir) if "design" in body else None
    rows = _with_primaries(path, _resolve_rows(path, body, common), body["rows"], design)
    if design is not None:
        check_basis_file(design, name, metric, [row.id for row in rows], f"{path}: design")
    spec = AblationSpec(
        name=name,
        path=path,
        title=str(body["title"]),
        paper=str(body["paper"]),
        paper_metric=str(body["paper_metric"]),
        metric=metric,
        kind=body["kind"],
        rows=tuple(rows),
        design=design,
        plan=parse_plan(body["plan"], metric, f"{path}: plan") if "plan" in body else None,
    )
    if spec.plan:
        for row in spec.rows:
            for endpoint in row.endpoints if row.compare_to else ():
                if endpoint.smallest_effect is None:
                    raise ConfigError(
                        f"{path}: row '{row.id}': endpoint {endpoint.metric} has no 'smallest_effect'; a spec with a "
                        "'plan' needs the smallest effect of interest of every compared endpoint"
                    )
    for row in spec.rows:
        try:
            steps = spec.config(row.id).run.steps
        except (ConfigError, ValidationError, ValueError) as exc:
            raise ConfigError(f"{path}: row '{row.id}' does not give a valid config: {exc}") from None
        for endpoint in row.endpoints:
            if endpoint.window[1] > steps:
                raise ConfigError(
                    f"{path}: row '{row.id}': endpoint {endpoint.metric} has window {list(endpoint.window)} past the "
                    f"row's last step {steps} (run.steps)"
                )
    return spec


def _spec_body(ablations_dir: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """The spec file's path and fields; a variant's are its base spec's fields with the variant's own in their place."""
    path = named_yaml(ablations_dir, name, "spec")
    body = read_yaml(path)
    if not isinstance(body, dict) or "variant_of" not in body:  # a misspelt variant_of is named as one
        return read_spec_file(ablations_dir, name, "spec", REQUIRED, (*TOP_LEVEL_FIELDS, VARIANT_FIELDS[0]))
    _, body = read_spec_file(ablations_dir, name, "spec variant", VARIANT_FIELDS, VARIANT_FIELDS)
    base = body["variant_of"]
    if base not in available_specs(ablations_dir) or base == name:
        others = [spec for spec in available_specs(ablations_dir) if spec != name]
        raise ConfigError(f"{path}: variant_of '{base}' is not another spec; specs: {', '.join(others)}")
    if "variant_of" in (read_yaml(named_yaml(ablations_dir, base, "spec")) or {}):
        raise ConfigError(f"{path}: variant_of '{base}' is itself a variant; name the spec it varies")
    _, base_body = read_spec_file(ablations_dir, base, "spec", REQUIRED, TOP_LEVEL_FIELDS)
    return path, {**base_body, **{key: value for key, value in body.items() if key != "variant_of"}}


def _resolve_rows(path: Path, body: dict[str, Any], common: dict[str, Any]) -> list[Row]:
    for number, entry in enumerate(body["rows"], 1):  # a misspelt field first: a misspelt 'id' is one too
        for key in entry if isinstance(entry, dict) else ():
            if key not in ROW_FIELDS:
                row = f"'{entry['id']}'" if entry.get("id") else number
                raise unknown_key_error(f"{path}: row {row}", key, ROW_FIELDS)
    cumulative = body["kind"] == "cumulative"
    reference = body.get("reference")
    ids = [entry.get("id") if isinstance(entry, dict) else None for entry in body["rows"]]
    if cumulative and reference is not None:
        raise ConfigError(
            f"{path}: 'reference' belongs to leave_one_out specs; a cumulative row is compared with the one before"
        )
    if not cumulative and reference not in ids:
        raise ConfigError(
            f"{path}: a leave_one_out spec needs 'reference' naming one of its rows: {', '.join(map(str, ids))}"
        )
    rows: list[Row] = []
    accumulated = dict(common)
    default_endpoints = parse_endpoints(body.get("endpoints", []), f"{path}: endpoints")
    for entry, row_id in zip(body["rows"], ids, strict=True):
        if not isinstance(entry, dict) or not isinstance(row_id, str) or not ROW_ID.match(row_id):
            raise ConfigError(f"{path}: every row needs an 'id' of lowercase letters, digits and _ (got {row_id!r})")
        if ids.count(row_id) > 1:
            raise ConfigError(f"{path}: row id '{row_id}' is used twice")
        if cumulative and {"preset", "compare_to"} & set(entry):
            raise ConfigError(
                f"{path}: row '{row_id}': a cumulative table keeps one preset and compares each row with the one before"
            )
        if "compare_to" in entry and (entry["compare_to"] not in ids or entry["compare_to"] == row_id):
            raise ConfigError(f"{path}: row '{row_id}': compare_to must name another row: {', '.join(map(str, ids))}")
        changes = checked_settings(entry.get("changes") or {}, f"{path} row '{row_id}'")
        if cumulative:
            accumulated.update(changes)
            settings, compare_to = dict(accumulated), (rows[-1].id if rows else None)
        else:
            own_preset = entry.get("preset", body["preset"]) == body["preset"]
            settings = {**common, **changes} if own_preset else changes
            compare_to = entry.get("compare_to", None if row_id == reference else reference)
        if "paper" not in entry:
            raise ConfigError(
                f"{path}: row '{row_id}' has no 'paper' field; give the paper's number, or null if it has none"
            )
        paper = entry["paper"]
        if paper is not None and not isinstance(paper, int | float):
            raise ConfigError(f"{path}: row '{row_id}': 'paper' must be a number or null, got {paper!r}")
        rows.append(
            Row(
                id=row_id,
                label=str(entry.get("label", row_id)),
                paper=None if paper is None else float(paper),
                preset=str(entry.get("preset", body["preset"])),
                settings=settings,
                compare_to=compare_to,
                endpoints=(
                    parse_endpoints(entry["endpoints"], f"{path}: row '{row_id}': endpoints")
                    if "endpoints" in entry
                    else default_endpoints
                ),
            )
        )
    return rows


def _with_primaries(
    path: Path, rows: list[Row], entries: list[dict[str, Any]], design: StudyDesign | None
) -> list[Row]:
    """Each compared row with its one primary comparison resolved (a row compared with none has none).

    A spec without a design is descriptive: none of its rows may have anything to test (a paper number
    against its compared row's, an endpoint or a claim).
    """
    papers = {row.id: row.paper for row in rows}
    if design is None:
        for row, entry in zip(rows, entries, strict=True):
            testable = row.compare_to and (
                (row.paper is not None and papers[row.compare_to] is not None) or row.endpoints or "claim" in entry
            )
            if testable:
                raise ConfigError(
                    f"{path}: row '{row.id}' has a comparison to test but the spec declares no 'design'; declare "
                    'one, e.g. design: {smallest_effect: "5 points", secondary: gated}'
                )
        return rows
    resolved = []
    for row, entry in zip(rows, entries, strict=True):
        if row.compare_to is None:
            if "claim" in entry or any(endpoint.primary for endpoint in row.endpoints):
                raise ConfigError(f"{path}: row '{row.id}' is compared with no row, so it has no primary comparison")
            resolved.append(row)
            continue
        mine, theirs = row.paper, papers[row.compare_to]
        primary = resolve_primary(
            f"{path}: row '{row.id}'",
            design,
            entry.get("claim"),
            [i for i, endpoint in enumerate(row.endpoints) if endpoint.primary],
            row.endpoints,
            None if mine is None or theirs is None else (mine - theirs) / 100,
        )
        resolved.append(dataclasses.replace(row, primary=primary))
    return resolved


def parse_endpoints(entries: Any, where: str) -> tuple[Endpoint, ...]:
    """Endpoints from a spec's list of mappings; any fault fails naming ``where`` (file and row) and the valid choices."""
    if not isinstance(entries, list):
        raise ConfigError(f"{where} must be a list of {{{', '.join(ENDPOINT_FIELDS)}}}")
    endpoints = []
    for entry in entries:
        if isinstance(entry, dict):
            for key in entry:
                if key not in (*ENDPOINT_FIELDS, *OPTIONAL_ENDPOINT_FIELDS):
                    raise unknown_key_error(
                        f"{where}: endpoint {entry.get('metric')}", key, ENDPOINT_FIELDS + OPTIONAL_ENDPOINT_FIELDS
                    )
        if not isinstance(entry, dict) or not set(ENDPOINT_FIELDS) <= set(entry):
            raise ConfigError(
                f"{where}: each endpoint needs the fields {', '.join(ENDPOINT_FIELDS)} (optional: "
                f"{', '.join(OPTIONAL_ENDPOINT_FIELDS)}); got {entry!r}"
            )
        metric, window, direction, source = (entry[name] for name in ENDPOINT_FIELDS)
        if metric not in METRICS:
            close = difflib.get_close_matches(str(metric), list(METRICS), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else f"; valid: {', '.join(METRICS)}"
            raise ConfigError(f"{where}: unknown endpoint metric '{metric}'{hint}")
        if not (
            isinstance(window, list)
            and len(window) == 2
            and all(isinstance(step, int) and not isinstance(step, bool) for step in window)
            and 0 <= window[0] <= window[1]
        ):
            raise ConfigError(
                f"{where}: endpoint {metric}: window must be [first, last] steps with 0 <= first <= last, got {window!r}"
            )
        if direction not in DIRECTIONS:
            raise ConfigError(
                f"{where}: endpoint {metric}: direction '{direction}' is not one of: {', '.join(DIRECTIONS)}"
            )
        if not isinstance(source, str) or not source.strip():
            raise ConfigError(f"{where}: endpoint {metric}: 'source' must cite the paper's figure or section")
        effect = (
            parse_effect(entry["smallest_effect"], metric, f"{where}: endpoint {metric}: smallest_effect")
            if "smallest_effect" in entry
            else None
        )
        primary = entry.get("primary", False)
        if not isinstance(primary, bool):
            raise ConfigError(f"{where}: endpoint {metric}: primary must be true or false, got {primary!r}")
        endpoints.append(Endpoint(metric, (window[0], window[1]), direction, source, effect, primary))
    return tuple(endpoints)


def parse_plan(entry: Any, metric: str, where: str) -> SeedPlan:
    """A spec's ``plan``: {pilot_seeds: n ≥ 2, budget: "<number> s|min|h", smallest_effect: of the table's metric}."""
    for key in entry if isinstance(entry, dict) else ():
        if key not in PLAN_FIELDS:
            raise unknown_key_error(where, key, PLAN_FIELDS)
    if not isinstance(entry, dict) or set(entry) != set(PLAN_FIELDS):
        missing = sorted(set(PLAN_FIELDS) - set(entry)) if isinstance(entry, dict) else list(PLAN_FIELDS)
        raise ConfigError(
            f"{where} needs exactly the fields {', '.join(PLAN_FIELDS)} "
            f"(missing: {', '.join(missing) or 'none'}); got {entry!r}"
        )
    pilot = entry["pilot_seeds"]
    if not isinstance(pilot, int) or isinstance(pilot, bool) or pilot < 2:
        raise ConfigError(
            f"{where}: pilot_seeds must be a whole number of at least 2 (a pilot's spread needs two seeds), "
            f"got {pilot!r}"
        )
    return SeedPlan(
        pilot,
        parse_duration(entry["budget"], f"{where}: budget"),
        parse_effect(entry["smallest_effect"], metric, f"{where}: smallest_effect"),
    )


def parse_duration(value: Any, where: str) -> float:
    """Seconds of ``"<number> <unit>"``, unit one of s, min, h; anything else fails naming ``where``."""
    match = QUANTITY.match(value) if isinstance(value, str) else None
    if not match or match[2] not in DURATION_UNITS or float(match[1]) <= 0:
        raise ConfigError(
            f'{where} must be a positive time with its unit ({", ".join(DURATION_UNITS)}), e.g. "6 h"; got {value!r}'
        )
    return float(match[1]) * DURATION_UNITS[match[2]]


def list_specs(ablations_dir: Path = ABLATIONS_DIR) -> None:
    """Print every spec with its rows as written (checking them would load the components, and torch with them)."""
    for name in available_specs(ablations_dir):
        body = read_yaml(ablations_dir / f"{name}.yaml")
        body = body if isinstance(body, dict) else {}
        rows = ", ".join(str(row.get("id")) for row in body.get("rows") or [] if isinstance(row, dict))
        print(f"{name} ({body.get('kind')}): {body.get('title')} -- rows: {rows}")


def check_specs(ablations_dir: Path = ABLATIONS_DIR) -> int:
    """Check every spec and print it with its rows; a broken spec is named on stderr (exit 2) and the rest still
    checked."""
    broken = 0
    for name in available_specs(ablations_dir):
        try:
            spec = read_spec(name, ablations_dir)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            broken += 1
            continue
        print(f"{name} ({spec.kind}): {spec.title} -- rows: {', '.join(r.id for r in spec.rows)}")
    return 2 if broken else 0


def row_config_text(spec: AblationSpec, row_id: str, budget: Budget) -> str:
    """The row's resolved config as YAML, as a campaign with ``budget`` runs it, under comment lines naming the
    row, the row it is compared with and its endpoints (scaled to the budget's step count)."""
    row = spec.row(row_id)
    lines = [
        f"# {spec.name} / {row.id}: {row.label} (compared with {row.compare_to})",
        (
            f"# budget: step scale {budget.step_scale:g}, evaluation points {budget.eval_points} "
            f"({budget.eval_scope}), overrides "
            f"{', '.join(budget.overrides) or 'none'}; endpoints:"
        ),
    ]
    lines += [f"#   {endpoint.scaled(budget.step_scale).describe()}" for endpoint in row.endpoints]
    return "\n".join(lines) + "\n" + yaml.safe_dump(config_to_dict(spec.config(row_id, budget)), sort_keys=False)


def campaign_budget(ablations: Mapping[str, Any] | None = None) -> Budget:
    """The budget a campaign runs its rows with: the workflow config's ``ablations`` section (by default the one in
    experiments/config.yaml)."""
    if ablations is None:
        ablations = read_yaml(WORKFLOW_CONFIG)["ablations"]
    return Budget(
        tuple(ablations["overrides"]),
        ablations["step_scale"],
        tuned_values(ablations.get("tuned") or {}),
        ablations.get("eval_points"),
        ablations.get("eval_scope", "all"),
    )


def tuned_values(
    tuned: Mapping[str, Any], where: str = "workflow config ablations.tuned"
) -> dict[str, tuple[str, ...]]:
    """Per preset, the ``key=value`` settings its rows start from: a list as given by hand, or a sweep's confirmed
    winner as its ``best_params.yaml`` gives it (``{sweep, configuration, verdict, settings}``,
    :mod:`reports.sweep_confirmation`). A sweep that confirmed no configuration better than the preset stops here,
    naming it: its search found nothing that held on fresh seeds."""
    values = {}
    for preset, entry in tuned.items():
        if isinstance(entry, Mapping):
            for key in entry:
                if key not in TUNED_FROM_SWEEP:
                    raise unknown_key_error(f"{where}.{preset}", key, TUNED_FROM_SWEEP)
            if entry.get("verdict") != CONFIRMED:
                sweep = entry.get("sweep")
                raise ConfigError(
                    f"{where}.{preset}: sweep '{sweep}' confirmed no configuration better than preset '{preset}' on "
                    f"fresh seeds ({entry.get('verdict')}; results/sweeps/{sweep}/confirmation.md): drop it to run the "
                    "preset as it stands"
                )
            entry = entry.get("settings") or []
        values[preset] = tuple(entry)
    return values


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """The command-line options of a campaign's :class:`Budget`."""
    parser.add_argument("--step-scale", type=float, help="campaign budget: times every step count")
    parser.add_argument(
        "--eval-points",
        type=int,
        help="campaign budget: held-out evaluations per run, evenly spaced (steps 0 and last)",
    )
    parser.add_argument(
        "--eval-scope",
        choices=EVAL_SCOPES,
        help="campaign budget: every evaluation of --eval-points (all), or only those an endpoint reads and the last",
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="campaign budget override")
    parser.add_argument(
        "--tuned", action="append", default=[], metavar="PRESET:KEY=VALUE", help="a tuned value of one preset's rows"
    )


def budget_from(args: argparse.Namespace) -> Budget:
    """The :class:`Budget` of the options :func:`add_budget_arguments` declared (none given: the full-length rows)."""
    tuned: dict[str, tuple[str, ...]] = {}
    for text in args.tuned:
        preset, _, setting = text.partition(":")
        tuned[preset] = (*tuned.get(preset, ()), setting)
    step_scale = 1.0 if args.step_scale is None else args.step_scale
    return Budget(tuple(args.set), step_scale, tuned, args.eval_points, args.eval_scope or "all")


def budget_options_given(args: argparse.Namespace) -> bool:
    """Whether any option of :func:`add_budget_arguments` was given."""
    given = (args.step_scale, args.eval_points, args.eval_scope)
    return any(value is not None for value in given) or bool(args.set or args.tuned)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.ablations", description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the specs and their rows")
    parser.add_argument("--check", action="store_true", help="check every spec (each row's config built), then list")
    parser.add_argument("--spec", help="spec name (see --list)")
    parser.add_argument("--ablations-dir", type=Path, default=ABLATIONS_DIR, help="folder of spec files")
    parser.add_argument(
        "--row", help="print this row's config as the campaign runs it (experiments/config.yaml's budget)"
    )
    parser.add_argument(
        "--full-length",
        action="store_true",
        help="with --row: the row at its full length, without the campaign's budget",
    )
    add_budget_arguments(parser)
    args = parser.parse_args(argv)
    try:
        if args.check:
            return check_specs(args.ablations_dir)
        if args.list or not args.spec:
            list_specs(args.ablations_dir)
        elif args.row:
            given = args.full_length or budget_options_given(args)
            budget = budget_from(args) if given else campaign_budget()
            print(row_config_text(read_spec(args.spec, args.ablations_dir), args.row, budget), end="")
        else:
            spec = read_spec(args.spec, args.ablations_dir)
            for row in spec.rows:
                print(f"{row.id}: {row.label} (paper {row.paper}; compared with {row.compare_to}) {row.settings}")
                if row.primary:
                    print(
                        f"    primary: {row.primary.describe(spec.metric, row.endpoints)}; smallest effect "
                        f"{row.primary.smallest_effect:g} in the metric's units"
                    )
                for endpoint in row.endpoints:
                    print(f"    endpoint: {endpoint.describe()}")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
