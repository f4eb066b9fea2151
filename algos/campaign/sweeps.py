"""Hyperparameter sweeps as data: a preset, a search space over config keys, an objective and a budget.

A spec in ``experiments/sweeps/`` reads::

    title: "DAPO: learning rate x clip-higher x group size"
    preset: dapo
    objective: {metric: eval/validation/accuracy_t1, direction: maximize}
    space:
      optim.lr: {distribution: log_uniform, low: 3.0e-5, high: 1.0e-3}
      policy_loss.clip_eps_high: {distribution: uniform, low: 0.2, high: 0.4}
      rollout.group_size: {distribution: categorical, choices: [4, 8, 16]}
    trials: 12
    seeds: 2
    sampler: {name: tpe, seed: 0, startup_trials: 4}
    pruner: {name: median, startup_trials: 4, warmup_steps: 5}
    budget: [run.steps=20, run.eval_every=5]
    confirmation: {top: 3, seeds: 12, first_seed: 100, metric: eval/test/accuracy_t1, margin: "2.5 points",
                   budget: ["run.eval_splits=[validation, test]", run.final_eval_problems=1024]}

The study is a persistent Optuna study (a journal file next to the trials by default, so parallel
workflow jobs share it; or any storage URL, e.g. a database for a cluster). Each workflow job runs
one *slot*: it asks the study for a trial, trains it with every seed, and tells the study the mean
objective. The first seed reports its held-out evaluations as the trial's intermediate values, so
the median pruner can stop unpromising trials early; with ``pruner: {name: wilcoxon}`` each seed's objective
is reported instead, and a trial whose seeds fall behind the best trial's, seed by seed, stops early. A slot that was interrupted marks its unfinished
trial failed and asks for a new one, so a resumed study continues with new trial numbers.

The objective is a held-out split's accuracy (the validation split by default), never the test
split the tables report. Every value in the space is checked against the config when the spec is
read: an unknown key, low > high, empty choices or a value the config refuses fails at once.

The ``confirmation`` (:mod:`algos.campaign.sweep_confirmation`) retrains the ``top`` best completed trials and the
preset's own configuration on ``seeds`` fresh seeds from ``first_seed`` (after every seed the search used), under
the search's budget and the confirmation's own ``budget``, and compares each with the preset on ``metric`` (the
split the tables report), paired by seed: better, equivalent within ``margin``, worse or undecided, at a
family-wise ``level`` over the ``top`` comparisons. Only a configuration confirmed better becomes tuned values.

Command line: ``python -m algos.campaign.sweeps --list``; ``python -m algos.campaign.sweeps --sweep dapo_default
--slot 0 --out results/sweeps/dapo_default`` runs one trial.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from pydantic import ValidationError

from algos.campaign.study_design import check_fields, parse_effect
from algos.config.presets import (
    PROJECT_ROOT,
    ConfigError,
    checked_settings,
    load_config,
    read_spec_file,
    read_yaml,
    unknown_key_error,
    yaml_names,
)
from algos.config.schema import RLConfig

SWEEPS_DIR = PROJECT_ROOT / "experiments" / "sweeps"
DIMENSION_FIELDS = {
    **{kind: ("distribution", "low", "high") for kind in ("log_uniform", "uniform", "int_uniform")},
    "categorical": ("distribution", "choices"),
}
"""Each distribution of a searched key and the fields it takes."""
DISTRIBUTIONS = tuple(DIMENSION_FIELDS)
DIRECTIONS = ("maximize", "minimize")
SAMPLER_KEYS = {"tpe": ("name", "seed", "startup_trials"), "random": ("name", "seed")}
SAMPLERS = tuple(SAMPLER_KEYS)
PRUNER_KEYS = {
    "median": ("name", "startup_trials", "warmup_steps"),
    "wilcoxon": ("name", "p_threshold", "startup_seeds"),
    "successive_halving": ("name", "min_resource", "reduction_factor"),
    "hyperband": ("name", "min_resource", "reduction_factor"),
    "none": ("name",),
}
"""Each pruner and the keys it takes: the median pruner compares a trial's held-out evaluations with the
earlier trials' at the same step; the Wilcoxon pruner (Optuna's ``WilcoxonPruner``) compares its seeds'
objective values, seed by seed, with the best trial's by a signed-rank test, and stops it once p falls
below ``p_threshold`` (after ``startup_seeds`` seeds); successive halving (Optuna's ``SuccessiveHalvingPruner``)
keeps the top 1/``reduction_factor`` of the trials at each rung of steps from ``min_resource`` on, and Hyperband
(``HyperbandPruner``) runs several such brackets, its maximum resource the run's steps."""
PRUNERS = tuple(PRUNER_KEYS)
REQUIRED = ("title", "preset", "space", "trials")
FIELDS = (*REQUIRED, "objective", "seeds", "sampler", "pruner", "budget", "confirmation")
CONFIRMATION_FIELDS = ("top", "seeds", "first_seed", "metric", "margin", "level", "budget")
REQUIRED_CONFIRMATION_FIELDS = ("top", "seeds", "first_seed", "margin")
STUDY_SEED_STRIDE = 1000
"""Sampler seeds a study of a comparison of searches owns: study k's jobs draw with seeds k·1000 + slot."""
PRESET_CONFIGURATION = "preset"
"""The name of the preset's own configuration among the confirmed ones (the others are ``trial<n>``)."""
OBJECTIVE_FIELDS = ("metric", "direction")
JOURNAL_FILE = "study.journal"
OBJECTIVE = re.compile(r"^eval/(?P<split>[a-z0-9_]+)/accuracy_(?P<mode>greedy|t1)$")


@dataclass(frozen=True)
class Dimension:
    """One searched config key: a range (``low``..``high``) or a list of ``choices``."""

    key: str
    distribution: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()

    def suggest(self, trial: optuna.Trial) -> Any:
        if self.distribution == "categorical":
            return trial.suggest_categorical(self.key, list(self.choices))
        if self.distribution == "int_uniform":
            return trial.suggest_int(self.key, int(self.low), int(self.high))
        return trial.suggest_float(self.key, self.low, self.high, log=self.distribution == "log_uniform")

    def corners(self) -> list[Any]:
        """The values that bound the space: every choice, or both ends of the range."""
        if self.distribution == "categorical":
            return list(self.choices)
        return [self.low, self.high]


@dataclass(frozen=True)
class Confirmation:
    """A sweep's confirmation stage: the ``top`` best completed trials and the preset's configuration retrained with
    seeds ``first_seed`` .. ``first_seed + seeds - 1``, under the search's budget then ``budget``; each compared with
    the preset on ``metric``, paired by seed, at a family-wise ``level`` over the ``top`` comparisons (Bonferroni),
    equivalence within ±``margin`` (the metric's units)."""

    top: int
    seeds: int
    first_seed: int
    metric: str
    margin: float
    level: float
    budget: tuple[str, ...]

    @property
    def seed_numbers(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))


@dataclass(frozen=True)
class SweepSpec:
    """A study: what is searched, what is optimised, and how each trial is run."""

    name: str
    title: str
    preset: str
    space: tuple[Dimension, ...]
    metric: str
    direction: str
    trials: int
    seeds: int
    sampler: Mapping[str, Any]
    pruner: Mapping[str, Any]
    budget: tuple[str, ...]
    confirmation: Confirmation | None = None

    def config(self, params: Mapping[str, Any], seed: int = 0, extra: tuple[str, ...] = ()) -> RLConfig:
        """The trial's config: preset, budget, the trial's parameters, ``extra`` overrides, and the seed."""
        return load_config(self.preset, overrides=(*self.budget, *extra, f"seed={seed}"), settings=dict(params))

    def confirmation_config(self, params: Mapping[str, Any], seed: int, extra: tuple[str, ...] = ()) -> RLConfig:
        """A confirmation run's config: the trial's under the confirmation's budget (``params`` {} for the preset)."""
        return self.config(params, seed, (*self.confirmation.budget, *extra))

    def make_sampler(self, slot: int) -> optuna.samplers.BaseSampler:
        """The sampler of one workflow job. Its seed is offset by the slot, so that parallel jobs that
        see the same history do not propose the same parameters."""
        seed = int(self.sampler.get("seed", 0)) + slot
        if self.sampler["name"] == "random":
            return optuna.samplers.RandomSampler(seed=seed)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=int(self.sampler.get("startup_trials", 4)))

    def make_pruner(self) -> optuna.pruners.BasePruner:
        if self.pruner["name"] == "none":
            return optuna.pruners.NopPruner()
        if self.pruner["name"] == "wilcoxon":
            return optuna.pruners.WilcoxonPruner(
                p_threshold=float(self.pruner.get("p_threshold", 0.1)),
                n_startup_steps=int(self.pruner.get("startup_seeds", 2)),
            )
        given = {key: int(self.pruner[key]) for key in ("min_resource", "reduction_factor") if key in self.pruner}
        if self.pruner["name"] == "successive_halving":  # Optuna's defaults where the spec gives none
            return optuna.pruners.SuccessiveHalvingPruner(**given)
        if self.pruner["name"] == "hyperband":
            return optuna.pruners.HyperbandPruner(max_resource=self.config({}).run.steps, **given)
        return optuna.pruners.MedianPruner(
            n_startup_trials=int(self.pruner.get("startup_trials", 4)),
            n_warmup_steps=int(self.pruner.get("warmup_steps", 0)),
        )

    def searched_by(self, sampler: str, pruner: str, seed: int) -> SweepSpec:
        """The same sweep searched by another sampler and pruner (each with the spec's keys where it names the same
        one, else Optuna's defaults): one study of a comparison of searches, its sampler seeded from ``seed``.

        A job's sampler seed is the spec's seed plus its slot (:meth:`make_sampler`), so studies seeded 1, 2, 3 would
        share most of their draws, shifted by one slot (and with the spec's own study, seeded 0). Study ``seed``
        therefore starts at ``seed`` × :data:`STUDY_SEED_STRIDE`: its slots' seeds never meet another study's."""
        if sampler not in SAMPLERS or pruner not in PRUNERS:
            raise ConfigError(
                f"a search is a sampler ({', '.join(SAMPLERS)}) and a pruner ({', '.join(PRUNERS)}); got {sampler}/{pruner}"
            )
        base = self.sampler if self.sampler["name"] == sampler else {"name": sampler}
        samplers = {**base, "seed": seed * STUDY_SEED_STRIDE}
        pruners = self.pruner if self.pruner["name"] == pruner else {"name": pruner}
        if pruner == "wilcoxon" and self.seeds < 2:
            raise ConfigError(f"sweep '{self.name}': the wilcoxon pruner compares seeds, and it has {self.seeds}")
        return dataclasses.replace(self, sampler=samplers, pruner=pruners)

    def study(self, storage: str | None, out: Path, slot: int = 0) -> optuna.Study:
        """The persistent study (created on first use): ``storage`` URL, or a journal file in ``out``."""
        return optuna.create_study(
            study_name=self.name,
            storage=open_storage(storage, out),
            sampler=self.make_sampler(slot),
            pruner=self.make_pruner(),
            direction=self.direction,
            load_if_exists=True,
        )


def open_storage(url: str | None, out: Path) -> optuna.storages.BaseStorage | str:
    """A storage URL as given, or (None) a journal file in ``out`` that parallel local jobs share."""
    if url:
        return url
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    out.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(out / JOURNAL_FILE)))


def available_sweeps(sweeps_dir: Path = SWEEPS_DIR) -> list[str]:
    """Names of the sweep specs in ``sweeps_dir``."""
    return yaml_names(sweeps_dir)


def read_sweep(name: str, sweeps_dir: Path = SWEEPS_DIR) -> SweepSpec:
    """Parse and check a sweep spec; every bound of the space is built into a config to prove it valid."""
    path, body = read_spec_file(sweeps_dir, name, "sweep", REQUIRED, FIELDS)
    objective = body.get("objective") or {}
    for key in objective if isinstance(objective, dict) else ():
        if key not in OBJECTIVE_FIELDS:
            raise unknown_key_error(f"{path}: objective", key, OBJECTIVE_FIELDS)
    metric = str(objective.get("metric", "eval/validation/accuracy_t1"))
    direction = str(objective.get("direction", "maximize"))
    if direction not in DIRECTIONS:
        raise ConfigError(f"{path}: objective direction '{direction}' is not one of: {', '.join(DIRECTIONS)}")
    sampler, pruner = dict(body.get("sampler") or {"name": "tpe"}), dict(body.get("pruner") or {"name": "median"})
    for what, given, keys in (("sampler", sampler, SAMPLER_KEYS), ("pruner", pruner, PRUNER_KEYS)):
        valid = keys.get(given.get("name"), _every_key(keys))
        for key in given:  # a misspelt key first: a misspelt 'name' is one too
            if key not in valid:
                raise unknown_key_error(f"{path}: {what} {given.get('name', '')}".rstrip(), key, valid)
        if given.get("name") not in keys:
            raise ConfigError(f"{path}: {what} '{given.get('name')}' is not one of: {', '.join(keys)}")
    if pruner["name"] == "wilcoxon" and body.get("seeds", 1) < 2:
        raise ConfigError(f"{path}: the wilcoxon pruner compares seeds; give the sweep 'seeds' of at least 2")
    for what, count in (("trials", body["trials"]), ("seeds", body.get("seeds", 1))):
        if not isinstance(count, int) or count < 1:
            raise ConfigError(f"{path}: '{what}' must be a positive integer, got {count!r}")
    budget = body.get("budget") or []
    if not isinstance(budget, list) or not all(isinstance(text, str) for text in budget):
        raise ConfigError(f"{path}: 'budget' must be a list of key=value overrides")
    spec = SweepSpec(
        name=name,
        title=str(body["title"]),
        preset=str(body["preset"]),
        space=tuple(_dimensions(path, body["space"])),
        metric=metric,
        direction=direction,
        trials=body["trials"],
        seeds=body.get("seeds", 1),
        sampler=sampler,
        pruner=pruner,
        budget=tuple(budget),
    )
    _check_values(path, spec)
    if "confirmation" in body:
        spec = dataclasses.replace(spec, confirmation=_confirmation(path, body["confirmation"], spec))
    return spec


def _confirmation(path: Path, entry: Any, spec: SweepSpec) -> Confirmation:
    """The spec's ``confirmation`` mapping (see :class:`Confirmation`); any fault fails naming the file and the key."""
    where = f"{path}: confirmation"
    check_fields(entry, where, CONFIRMATION_FIELDS, REQUIRED_CONFIRMATION_FIELDS)
    for key, least in (("top", 1), ("seeds", 2), ("first_seed", spec.seeds)):
        value = entry[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            why = f" (after the search's seeds 0-{spec.seeds - 1})" if key == "first_seed" else ""
            raise ConfigError(f"{where}: {key} must be an integer of at least {least}{why}; got {value!r}")
    level = entry.get("level", 0.05)
    if not isinstance(level, float) or not 0 < level < 1:
        raise ConfigError(f"{where}: level must be a number between 0 and 1; got {level!r}")
    budget = entry.get("budget") or []
    if not isinstance(budget, list) or not all(isinstance(text, str) for text in budget):
        raise ConfigError(f"{where}: 'budget' must be a list of key=value overrides")
    metric = str(entry.get("metric", "eval/test/accuracy_t1"))
    confirmation = Confirmation(
        top=entry["top"],
        seeds=entry["seeds"],
        first_seed=entry["first_seed"],
        metric=metric,
        margin=parse_effect(entry["margin"], metric, f"{where}: margin"),
        level=level,
        budget=tuple(budget),
    )
    try:
        base = dataclasses.replace(spec, confirmation=confirmation).confirmation_config({}, 0)
    except (ConfigError, ValidationError, ValueError) as exc:
        raise ConfigError(f"{where}: the budget does not give a valid config: {exc}") from None
    match = OBJECTIVE.match(metric)
    if not match or match["split"] not in base.run.eval_splits or match["mode"] not in base.run.eval_modes:
        raise ConfigError(
            f"{where}: metric '{metric}' is not eval/<split>/accuracy_<mode> of a split ({', '.join(base.run.eval_splits)}) "
            f"and mode ({', '.join(base.run.eval_modes)}) the confirmation's budget evaluates"
        )
    return confirmation


def _every_key(keys_by_name: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Every key any of the named choices takes, once each: what a choice not yet known may take."""
    return tuple(dict.fromkeys(key for keys in keys_by_name.values() for key in keys))


def _dimensions(path: Path, space: Any) -> list[Dimension]:
    if not isinstance(space, dict) or not space:
        raise ConfigError(f"{path}: 'space' must map config keys to distributions")
    dimensions = []
    for key, entry in space.items():
        where = f"{path}: space key '{key}'"
        checked_settings({key: None}, f"{path} space")  # an unknown key fails here, with suggestions
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: give a mapping with 'distribution' (one of: {', '.join(DISTRIBUTIONS)})")
        valid = DIMENSION_FIELDS.get(entry.get("distribution"), _every_key(DIMENSION_FIELDS))
        for field in entry:  # a misspelt field first: a misspelt 'distribution' is one too
            if field not in valid:
                raise unknown_key_error(where, field, valid)
        if entry.get("distribution") not in DISTRIBUTIONS:
            raise ConfigError(f"{where}: 'distribution' must be one of: {', '.join(DISTRIBUTIONS)}")
        kind = entry["distribution"]
        if kind == "categorical":
            choices = entry.get("choices")
            if not isinstance(choices, list) or not choices:
                raise ConfigError(f"{where}: a categorical distribution needs a non-empty list of 'choices'")
            dimensions.append(Dimension(key, kind, choices=tuple(choices)))
            continue
        low, high = entry.get("low"), entry.get("high")
        if not all(isinstance(bound, int | float) and math.isfinite(bound) for bound in (low, high)):
            raise ConfigError(f"{where}: a {kind} distribution needs numeric 'low' and 'high'")
        if low > high:
            raise ConfigError(f"{where}: low ({low}) is greater than high ({high})")
        if kind == "log_uniform" and low <= 0:
            raise ConfigError(f"{where}: a log_uniform distribution needs low > 0, got {low}")
        if kind == "int_uniform" and not (float(low).is_integer() and float(high).is_integer()):
            raise ConfigError(f"{where}: an int_uniform distribution needs integer bounds")
        dimensions.append(Dimension(key, kind, low=low, high=high))
    return dimensions


def _check_values(path: Path, spec: SweepSpec) -> None:
    try:
        base = spec.config({})
    except (ConfigError, ValidationError, ValueError) as exc:
        raise ConfigError(f"{path}: the preset and budget do not give a valid config: {exc}") from None
    match = OBJECTIVE.match(spec.metric)
    if not match or match["split"] not in base.run.eval_splits or match["mode"] not in base.run.eval_modes:
        raise ConfigError(
            f"{path}: objective metric '{spec.metric}' is not eval/<split>/accuracy_<mode> of an evaluated split "
            f"({', '.join(base.run.eval_splits)}) and mode ({', '.join(base.run.eval_modes)})"
        )
    if not base.run.eval_every:
        raise ConfigError(f"{path}: the budget needs run.eval_every > 0 so that trials report intermediate values")
    for dimension in spec.space:
        for value in dimension.corners():
            try:
                spec.config({dimension.key: value})
            except (ConfigError, ValidationError, ValueError) as exc:
                raise ConfigError(
                    f"{path}: space key '{dimension.key}' allows {value!r}, which is invalid: {exc}"
                ) from None


def run_slot(
    spec: SweepSpec, slot: int, out: Path, storage: str | None = None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Run one trial of the study in workflow slot ``slot`` and return its record (also written to
    ``out/slots/slot<slot>.json``). Trial runs go to ``out/trials/trial<n>/seed<s>/``; ``extra``
    overrides (e.g. the model to start from) apply to every run."""
    # Training loads torch and transformers: imported here, so that listing the sweeps and --help stay quick.
    from algos.trainer import run_files
    from algos.trainer.tracking import tag_run
    from algos.trainer.train import StopTraining, train

    study = spec.study(storage, out, slot)
    slots = out / "slots"
    slots.mkdir(parents=True, exist_ok=True)
    marker = slots / f"asked{slot}.json"
    if marker.exists():  # an earlier attempt of this slot was interrupted
        number = json.loads(marker.read_text())["trial"]
        unfinished = [t for t in study.get_trials(deepcopy=False) if t.number == number]
        if unfinished and unfinished[0].state == optuna.trial.TrialState.RUNNING:
            study.tell(number, state=optuna.trial.TrialState.FAIL)
    trial = study.ask()
    run_files.write_json(marker, {"trial": trial.number})
    params = {dimension.key: dimension.suggest(trial) for dimension in spec.space}
    shared = (*extra, f"tracking.experiment=sweep-{spec.name}", f"tracking.parent_run={spec.name}")
    values: list[float] = []
    state = "COMPLETE"

    by_seed = spec.pruner["name"] == "wilcoxon"

    def report(step: int, metrics: Mapping[str, float]) -> None:
        """The first seed's held-out evaluations, step by step (the median pruner's intermediate values)."""
        trial.report(metrics[spec.metric], step)
        if trial.should_prune():
            raise StopTraining(f"trial {trial.number} pruned at step {step}")

    runs = []
    try:
        for seed in range(spec.seeds):
            name = f"trial{trial.number}" + (f"/seed{seed}" if spec.seeds > 1 else "")
            cfg = spec.config(params, seed, (*shared, f"tracking.run_name={name}"))
            run = out / "trials" / f"trial{trial.number}" / f"seed{seed}"
            runs.append(run)
            result = train(cfg, run, preset=spec.preset, on_evaluation=report if seed == 0 and not by_seed else None)
            values.append(result.metrics[spec.metric])
            if by_seed:  # each seed's objective, paired by seed with the best trial's (the Wilcoxon pruner)
                trial.report(values[-1], seed)
                if seed < spec.seeds - 1 and trial.should_prune():
                    raise StopTraining(f"trial {trial.number} pruned after seed {seed}")
    except StopTraining:
        state, value = "PRUNED", None
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    except BaseException:
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        raise
    else:
        value = sum(values) / len(values)
        study.tell(trial, value)
    for run in runs:
        tag_run(cfg.tracking, run_files.tracker_run_id(run), {"optuna.trial": str(trial.number), "optuna.state": state})
    record = {
        "sweep": spec.name,
        "slot": slot,
        "trial": trial.number,
        "state": state,
        "params": params,
        "metric": spec.metric,
        "seed_values": values,
        "value": value,
        "runs": [str(run) for run in runs],
    }
    run_files.write_json(slots / f"slot{slot}.json", record)
    return record


def read_records(out: Path) -> list[dict[str, Any]]:
    """The finished slots' records under the study's directory ``out`` (one per trial), by trial number."""
    records = [json.loads(path.read_text()) for path in (out / "slots").glob("slot*.json")]
    return sorted(records, key=lambda record: record["trial"])


def best_records(spec: SweepSpec, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Completed trials, best objective first (ties: the earlier trial first)."""
    complete = [record for record in records if record["state"] == "COMPLETE"]
    sign = -1.0 if spec.direction == "maximize" else 1.0
    return sorted(complete, key=lambda record: (sign * record["value"], record["trial"]))


def searched_spec(spec: SweepSpec, search: str) -> SweepSpec:
    """The spec under a search written ``sampler/pruner/seed`` (:meth:`SweepSpec.searched_by`)."""
    parts = search.split("/")
    if len(parts) != 3 or not parts[2].isdigit():
        raise ConfigError(f"a search is written sampler/pruner/seed (e.g. tpe/median/1); got '{search}'")
    return spec.searched_by(parts[0], parts[1], int(parts[2]))


def as_overrides(params: Mapping[str, Any]) -> list[str]:
    """``key=value`` overrides of a trial's parameters (what ``ablations.tuned`` takes)."""
    return [f"{key}={value}" for key, value in params.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.campaign.sweeps", description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the sweep specs")
    parser.add_argument("--sweep", help="sweep name (see --list)")
    parser.add_argument("--slot", type=int, help="run one trial in this workflow slot")
    parser.add_argument("--out", type=Path, help="the study's directory (journal, slots, trial runs)")
    parser.add_argument("--storage", help="Optuna storage URL (default: a journal file in --out)")
    parser.add_argument("--model", help="model every trial starts from (default: the config's model.name_or_path)")
    parser.add_argument(
        "--search",
        metavar="SAMPLER/PRUNER/SEED",
        help="run the study with this sampler, pruner and sampler seed instead of the spec's (a comparison of searches; "
        "its runs stay out of MLflow)",
    )
    args = parser.parse_args(argv)
    try:
        if args.list or not args.sweep:
            for name in available_sweeps():
                body = read_yaml(SWEEPS_DIR / f"{name}.yaml")  # as written: checking it would load the components
                body = body if isinstance(body, dict) else {}
                keys = ", ".join(map(str, body.get("space") or {}))
                print(f"{name}: {body.get('title')} -- {body.get('preset')}, {body.get('trials')} trials over {keys}")
        elif args.slot is None or args.out is None:
            spec = read_sweep(args.sweep)
            print(f"{spec.name}: {spec.title}; space: {[d.key for d in spec.space]}")
        else:
            spec, extra = read_sweep(args.sweep), (f"model.name_or_path={args.model}",) if args.model else ()
            if args.search:
                spec, extra = searched_spec(spec, args.search), (*extra, "tracking.backend=none")
            print(json.dumps(run_slot(spec, args.slot, args.out, args.storage, extra), indent=2))
    except (ConfigError, FileNotFoundError) as exc:  # a model that is not there included
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
