# Helpers shared by the rule files.
import functools
import json
import os
import re
import shlex
import sys
from pathlib import Path

from algos.campaign.ablations import (
    ABLATIONS_DIR,
    Budget,
    available_specs,
    campaign_budget,
    read_spec,
)
from algos.campaign.launch import accelerate_config_file, launch_arguments
from algos.campaign.preflight import check_database, check_slurm, check_tracking, resource_values
from algos.campaign.sweeps import PRESET_CONFIGURATION, available_sweeps, read_sweep
from algos.config.presets import ConfigError, config_hash
from algos.config.schema import TrackingConfig
from algos.trainer.tracking import tracking_uri
from reports.analysis.runs import seed_list
from reports.coupling import DRAWS, parse_pair
from reports.planning.fixed_design import check_basis, design_plan, read_basis
from reports.planning.sequential_plan import declared_plan, plan_change
from reports.planning.stein_plan import read_plan
from eval.benchmarks.loaders import BENCHMARK_FILES, BENCHMARKS, BENCHMARKS_DIR_ENV

spec_named = functools.cache(read_spec)  # every job's params read the same specs: parse each once
BASE_INPUT = [] if config["model"] else "results/base_model"  # a hub model needs no base built
try:
    BUDGET = campaign_budget(config["ablations"])
except ConfigError as error:  # e.g. tuned values of a sweep that confirmed no better configuration
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2)


def budget_options(wildcards):
    """The campaign's budget as one row's command-line options.

    Only the row's own preset's tuned values are passed, so tuning one preset leaves every other row's
    params, and so its runs, as they are.
    """
    preset = spec_named(wildcards.spec).row(wildcards.row).preset
    return shlex.join(BUDGET.options(preset))


CONTROL_OPTIONS = " ".join(
    f"--set {shlex.quote(text)}" for text in [*config["calibration"]["control"], "tracking.backend=none"]
)
"""The positive control's changes, as overrides on top of the campaign's budget; its runs stay out of MLflow, whose
parent runs are the spec's rows."""
for _spec in config["ablations"]["specs"]:
    spec_named(_spec).check_budget(BUDGET)  # a bad spec or budget fails here, before any job starts
spec_named(config["calibration"]["spec"]).check_budget(
    Budget(BUDGET.overrides + tuple(config["calibration"]["control"]), BUDGET.step_scale, BUDGET.tuned)
)  # likewise a bad control change
for _preset in BUDGET.tuned:
    BUDGET.tuned_settings(_preset)  # likewise an unknown tuned key
TRAIN_PROCESSES = config["training"]["processes"]
if TRAIN_PROCESSES == 1:
    TRAIN_COMMAND = "python -m algos.campaign.seed_block"
else:
    try:
        _accelerate_config = accelerate_config_file(config["training"]["accelerate_config"])
    except ConfigError as error:  # before any job, in one line
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2)
    TRAIN_COMMAND = (
        f"accelerate launch {shlex.join(launch_arguments(_accelerate_config, TRAIN_PROCESSES))} "
        "-m algos.campaign.seed_block"
    )
"""How a training job starts: one process for its block of seeds, or ``training.processes`` under accelerate, on a
rendezvous port free at launch (two such jobs side by side never fight over one)."""
SEED_BLOCKS = [
    list(range(first, min(first + config["ablations"]["block_size"], config["ablations"]["seeds"])))
    for first in range(0, config["ablations"]["seeds"], config["ablations"]["block_size"])
]
"""The seeds 0..ablations.seeds-1 in blocks of ablations.block_size, each block trained by one job; any other
seed (a calibration's or a seed plan's beyond them) is a job of its own."""
SWEEP_STORAGE_OPTION = f"--storage {shlex.quote(config['sweeps']['storage'])}" if config["sweeps"]["storage"] else ""
for _sweep in config["sweeps"]["specs"]:
    read_sweep(_sweep)  # likewise a bad search space


EVALUATION_BENCHMARKS = list(dict.fromkeys(config["evaluation"]["benchmarks"] + config["ablations"]["benchmarks"]))
EVALUATION_OPTIONS = " ".join(
    [
        f"--backend {config['evaluation']['backend']}",
        *(
            f"--{key.replace('_', '-')} {value}"
            for key, value in config["evaluation"]["protocol"].items()
            if value is not None
        ),
    ]
)

ABLATION_BENCHMARK_OPTIONS = (
    f"--eval results/eval --benchmarks {' '.join(config['ablations']['benchmarks'])}"
    if config["ablations"]["benchmarks"]
    else ""
)


def benchmark_source(wildcards):
    """The benchmark's file in the benchmark folder (evaluation.source_dir, else $RL_BENCHMARKS_DIR), the input of its
    materialisation; where it is not there the workflow stops before any job starts, saying where to put it."""
    name = wildcards.benchmark
    spec = BENCHMARKS.get(name)
    if spec is None or spec.file is None or name in config["evaluation"]["hub_ids"]:
        return []  # the built-in task, HumanEval (its own package) or a hub copy
    folder = config["evaluation"]["source_dir"] or os.environ.get(BENCHMARKS_DIR_ENV)
    if folder and Path(folder, spec.file).is_file():
        return str(Path(folder, spec.file))
    where = f"the benchmark folder {folder} has no {spec.file}" if folder else f"{BENCHMARKS_DIR_ENV} is not set"
    print(
        f"error: the {name} benchmark is read from {spec.file}, but {where}: set {BENCHMARKS_DIR_ENV} (or the "
        f"workflow config's evaluation.source_dir) to the folder holding {', '.join(BENCHMARK_FILES)}, or name a hub "
        "copy in evaluation.hub_ids",
        file=sys.stderr,
    )
    raise SystemExit(2)  # during the DAG's construction: before any job starts


def model_input(wildcards):
    """What scoring a model waits for: the start model (built-in base or nothing), a packaged model's
    directory, or the run's final metrics."""
    if wildcards.model == "base_model":
        return BASE_INPUT
    if wildcards.model in config["packaged_models"]:
        return f"results/models/{wildcards.model}"
    return f"results/runs/{wildcards.model}/final_metrics.json"


def model_directory(wildcards):
    """The model to score: the configured model or the built-in base, a packaged model converted under
    results/models/, or the final policy of results/runs/<model>."""
    if wildcards.model == "base_model":
        return config["model"] or "results/base_model"
    if wildcards.model in config["packaged_models"]:
        return f"results/models/{wildcards.model}"
    return f"results/runs/{wildcards.model}/checkpoint/policy"


_designs = [key for key in ("plan", "basis", "sequential") if config["ablations"][key]]
if len(_designs) > 1:
    raise ValueError(
        f"config ablations: {', '.join(_designs)} are true together; choose one seed design (sequential: each spec's "
        "group-sequential design, the default; plan: Stein's two-stage plan from a pilot; basis: the fixed design each "
        "spec's basis sizes) and set the others false"
    )


def planned(spec):
    """Whether the campaign runs this spec's seed plan (ablations.plan and a 'plan' in the spec)."""
    return config["ablations"]["plan"] and spec_named(spec).plan is not None


def designed(spec):
    """Whether the campaign runs this spec's fixed design (ablations.basis and a basis in the spec's design)."""
    design = spec_named(spec).design
    return config["ablations"]["basis"] and design is not None and design.basis is not None


@functools.cache
def design_record(spec):
    """The spec's fixed design at the campaign's final evaluation size (reports.planning.fixed_design.design_plan)."""
    named = spec_named(spec)
    run = named.config(named.rows[0].id, BUDGET).run
    return design_plan(named, read_basis(named.design.basis), run.final_eval_problems or run.eval_problems)


def sequential(spec):
    """Whether the campaign runs this spec's group-sequential design (ablations.sequential and one in the spec)."""
    design = spec_named(spec).design
    return config["ablations"]["sequential"] and design is not None and design.sequential is not None


@functools.cache
def sequential_record(spec):
    """What the spec's group-sequential plan declares at the campaign's final evaluation size and seed cap (its looks,
    first seed, level...), its basis checked. Each primary's looks, sized from the basis, are the plan job's: their
    boundaries take seconds to compute, which every start of the workflow would pay."""
    named = spec_named(spec)
    run = named.config(named.rows[0].id, BUDGET).run
    check_basis(named, read_basis(named.design.basis))
    return declared_plan(named, run.final_eval_problems or run.eval_problems, cap=config["ablations"]["max_seeds"])


for _spec in config["ablations"]["specs"]:
    if sequential(_spec):  # a bad cap, or a campaign under way whose looks would change: one line, before any job
        try:
            _change = plan_change(Path(f"results/plans/{_spec}.sequential.json"), sequential_record(_spec))
        except (ConfigError, ValueError) as error:
            _change = str(error)
        if _change:
            print(f"error: {_change}", file=sys.stderr)
            raise SystemExit(2)


def look_seeds(spec, look):
    """row -> the seeds look ``look`` (0-based) of a sequential spec reads: every row at the first look; later, the
    rows the previous look left running (its look file, a checkpoint's output)."""
    plan = sequential_record(spec)
    if look == 0:
        first, count = plan["first_seed"], plan["looks"][0]
        return {row.id: list(range(first, first + count)) for row in spec_named(spec).rows}
    previous = checkpoints.sequential_look.get(spec=spec, look=look - 1).output[0]
    return json.loads(Path(previous).read_text())["next_seeds"]


def final_look(spec):
    """The look file of the look that decided a sequential spec's last primary (or its last look)."""
    for look in range(len(sequential_record(spec)["looks"])):
        path = checkpoints.sequential_look.get(spec=spec, look=look).output[0]
        if json.loads(Path(path).read_text())["finished"]:
            return path
    return path


def seeds_of(spec):
    """row -> the seeds it runs: 0..ablations.seeds-1, the fixed design's (numbered after its basis' seeds), the
    seed plan's once its pilot has run, or those a sequential design's looks have asked for so far."""
    rows = spec_named(spec).rows
    if sequential(spec):
        return json.loads(Path(final_look(spec)).read_text())["seeds_read"]
    if designed(spec):
        return design_record(spec)["seeds"]
    if not planned(spec):
        return {row.id: range(config["ablations"]["seeds"]) for row in rows}
    return read_plan(Path(checkpoints.seed_plan.get(spec=spec).output[0])).seeds


def row_runs(spec, seeds):
    """Final-metrics files of each row's seeds (seeds: row -> a count n, meaning 0..n-1, or the seeds), and their
    scores on ablations.benchmarks."""
    runs = [f"{spec}/{row}/seed{seed}" for row, given in seeds.items() for seed in seed_list(given)]
    return [f"results/runs/{run}/final_metrics.json" for run in runs] + [
        f"results/eval/{run}/{benchmark}/metrics.json" for run in runs for benchmark in config["ablations"]["benchmarks"]
    ]


def spec_runs(spec):
    """Every run a spec's report reads (with a seed plan, known once the pilot's plan is written)."""
    return row_runs(spec, seeds_of(spec))


def pilot_runs(wildcards):
    """The seed plan's pilot: seeds 0..plan.pilot_seeds-1 of every row."""
    spec = spec_named(wildcards.spec)
    return row_runs(spec.name, {row.id: spec.plan.pilot_seeds for row in spec.rows})


def plan_option(wildcards):
    """The report's --plan option for a planned, designed or sequential spec (empty otherwise)."""
    if sequential(wildcards.spec):
        return f"--plan results/plans/{wildcards.spec}.sequential.json"
    if designed(wildcards.spec):
        return f"--plan results/plans/{wildcards.spec}.design.json"
    return f"--plan results/plans/{wildcards.spec}.json" if planned(wildcards.spec) else ""


def design_input(wildcards):
    """The plan file a designed or sequential spec's reports read, with a sequential spec's last look (nothing
    otherwise)."""
    if sequential(wildcards.spec):
        return [f"results/plans/{wildcards.spec}.sequential.json", final_look(wildcards.spec)]
    return f"results/plans/{wildcards.spec}.design.json" if designed(wildcards.spec) else []


def sequential_blocks():
    """(first, last) seed ranges the sequential specs' looks add, each trained by one job per row: look k adds the
    seeds between look k-1's count and its own. -> {(first, last): [specs]}."""
    blocks = {}
    for spec in config["ablations"]["specs"]:
        if not sequential(spec):
            continue
        plan = sequential_record(spec)
        counts = [0, *plan["looks"]]
        for before, after in zip(counts, counts[1:]):
            blocks.setdefault((plan["first_seed"] + before, plan["first_seed"] + after - 1), []).append(spec)
    return blocks


def row_config_hash(wildcards):
    """Hash of one row's config as the campaign runs it: a rerun trigger that fires only for rows whose config changed."""
    return config_hash(spec_named(wildcards.spec).config(wildcards.row, BUDGET))


def sweep_slots(sweep):
    """Records of every trial slot of one sweep."""
    return [f"results/sweeps/{sweep}/slots/slot{slot}.json" for slot in range(read_sweep(sweep).trials)]


def confirmed_sweeps():
    """The configured sweeps that declare a confirmation stage (and the comparison of searches' sweep, whose preset
    runs the comparison reads)."""
    sweeps = dict.fromkeys([*config["sweeps"]["specs"], config["sweeps"]["comparison"]["sweep"]])
    return [sweep for sweep in sweeps if read_sweep(sweep).confirmation is not None]


def confirmation_runs(sweep):
    """Every fresh-seed run of a sweep's confirmation, once its plan (a checkpoint) names the configurations."""
    plan = json.loads(Path(checkpoints.sweep_confirmation_plan.get(sweep=sweep).output[0]).read_text())
    return [
        f"results/sweeps/{sweep}/confirmation/{entry['name']}/seed{seed}/final_metrics.json"
        for entry in plan["configurations"]
        for seed in plan["seeds"]
    ]


COMPARISON = config["sweeps"]["comparison"]
if COMPARISON["sweep"] not in available_sweeps() or read_sweep(COMPARISON["sweep"]).confirmation is None:
    print(
        f"error: workflow config sweeps.comparison.sweep '{COMPARISON['sweep']}' is not a sweep that declares a "
        f"confirmation; sweeps: {', '.join(available_sweeps())}",
        file=sys.stderr,
    )
    raise SystemExit(2)
COMPARISON_SEEDS = read_sweep(COMPARISON["sweep"]).confirmation.seed_numbers[: COMPARISON["fresh_seeds"]]
"""The fresh seeds every study's winner of the comparison of searches is retrained on: the first of the sweep's
confirmation seeds, so that the preset's runs of the sweep's own confirmation are the comparison's too."""


def comparison_studies(sweep):
    """The study directories of the comparison of searches: one per sampler/pruner and sampler seed."""
    return [
        f"results/search/{sweep}/{'-'.join(search.split('/'))}/seed{seed}"  # sampler/pruner -> sampler-pruner
        for search in COMPARISON["searches"]
        for seed in COMPARISON["seeds"]
    ]


def comparison_inputs(sweep):
    """Every study's winner on the fresh seeds (once the winners' file, a checkpoint, names them), and the preset's
    runs of the sweep's confirmation on the same seeds."""
    winners = json.loads(Path(checkpoints.search_winners.get(sweep=sweep).output[0]).read_text())
    runs = [
        f"{study}/confirmation/{winner}/seed{fresh}/final_metrics.json"
        for study, winner in winners.items()
        if winner != PRESET_CONFIGURATION  # a study that completed no trial found nothing: the preset's runs are its
        for fresh in COMPARISON_SEEDS
    ]
    preset = f"results/sweeps/{sweep}/confirmation/{PRESET_CONFIGURATION}"
    return runs + [f"{preset}/seed{fresh}/final_metrics.json" for fresh in COMPARISON_SEEDS]


def sweep_outputs(sweep):
    """What the sweep target builds of one sweep: its search report, and its confirmation where it declares one."""
    confirmed = [f"results/sweeps/{sweep}/confirmation.html"] if sweep in confirmed_sweeps() else []
    return [f"results/sweeps/{sweep}/report.html", *confirmed]


def start_model(wildcards, input):
    """What a training run starts from: the configured hub model, or the built-in base (the rule's input)."""
    return config["model"] or input.base


def check_reachable_or_exit():
    """Before the first job (not in a dry run): the stores the jobs will write to answer, and under the SLURM executor
    SLURM accepts a job with the account and partition the jobs get; else one line naming the setting, exit 2."""
    tracking_setting = "workflow config tracking.uri" if config["tracking"]["uri"] else "MLFLOW_TRACKING_URI"
    try:
        check_tracking(tracking_uri(TrackingConfig()), tracking_setting)  # what every job's tracker resolves
        if config["sweeps"]["storage"]:
            check_database(config["sweeps"]["storage"], "workflow config sweeps.storage")
        if workflow.executor_plugin is not None and workflow.executor_plugin.name == "slurm":
            settings = workflow.resource_settings
            every = [resource_values(getattr(settings.default_resources, "args", None) or [])]  # None: none given
            for overrides in settings.overwrite_resources.values():  # name -> a Resource, whose raw value was given
                every.append({**every[0], **{name: str(getattr(value, "raw", value)) for name, value in overrides.items()}})
            for resources in {tuple(sorted(given.items())): given for given in every}.values():
                check_slurm(resources, "SLURM resources (the profile's default-resources, --default-resources, --set-resources)")
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


# The coupling of rows under stream and keyed draws (coupling.smk).
COUPLING = config["coupling"]
try:
    COUPLED_PAIRS = [parse_pair(text) for text in COUPLING["pairs"]]
except ConfigError as error:
    print(f"error: workflow config coupling.pairs: {error}", file=sys.stderr)
    raise SystemExit(2)
COUPLED_SEEDS = list(range(COUPLING["first_seed"], COUPLING["first_seed"] + COUPLING["seeds"]))
KEYED = "rollout.draws=keyed"
RUNS_OF = {"stream": "results/runs", "keyed": "results/coupled"}
"""Where each kind of draws' runs are: the stream runs are the campaign's own."""


@functools.cache
def check_coupled_budget():
    """Each pair's spec under the campaign's budget and keyed draws, once; else one line naming the pair, exit 2.

    Called from the coupling rules' inputs, so that only the coupling target depends on it: a campaign whose budget
    suits its own specs runs whatever the coupling's pairs are.
    """
    keyed = Budget(BUDGET.overrides + (KEYED,), BUDGET.step_scale, BUDGET.tuned)
    for pair in COUPLED_PAIRS:
        try:
            spec_named(pair.spec).check_budget(keyed)
        except ConfigError as error:
            print(f"error: workflow config coupling.pairs ({pair.spec}): {error}", file=sys.stderr)
            raise SystemExit(2) from None


def coupled_responses(wildcards=None):
    """Every regenerated final evaluation the coupling report reads: each pair's two rows, seed and kind of draws."""
    check_coupled_budget()
    return [
        f"results/coupling/responses/{draws}/{pair.spec}/{row}/seed{seed}.json"
        for pair in COUPLED_PAIRS
        for row in (pair.row, pair.reference)
        for draws in DRAWS
        for seed in COUPLED_SEEDS
    ]
