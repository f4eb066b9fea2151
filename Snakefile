# The pipeline's table of contents: configuration, rule files and targets.
import os
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: f"{workflow.basedir}/experiments/config.yaml"


os.environ.update(RL_KERNELS=str(config.get("kernels", "portable")))  # before algos is imported: it pins by it

from algos.campaign.workflow_config import check_or_exit

check_or_exit(config, Path(workflow.basedir, "experiments/config.schema.yaml"))  # one line and exit 2 on a fault
validate(config, "experiments/config.schema.yaml")  # which fills in the schema's defaults
if config["tracking"]["uri"]:
    os.environ.update(MLFLOW_TRACKING_URI=config["tracking"]["uri"])  # every job's, on a cluster too: jobs parse this file


envvars:
    "RL_KERNELS",  # passed on to every job, also on a cluster


include: "experiments/rules/common.smk"
include: "experiments/rules/configs.smk"
include: "experiments/rules/base_model.smk"
include: "experiments/rules/models.smk"
include: "experiments/rules/evaluate.smk"
include: "experiments/rules/ablations.smk"
include: "experiments/rules/sweeps.smk"
include: "experiments/rules/coupling.smk"


onstart:
    check_reachable_or_exit()  # the tracking store, the sweeps' storage, SLURM's account and partition


rule all:
    """Every preset resolved into results/configs/, then the base scored on every configured benchmark and reported."""
    input:
        expand("results/configs/{preset}.yaml", preset=config["presets"]),
        "results/reports/benchmarks.html",


rule ablations:
    """Every configured ablation spec: each row trained with every seed (or its seed plan's), then its report."""
    input:
        lambda wildcards: [run for spec in config["ablations"]["specs"] for run in spec_runs(spec)],
        expand("results/reports/{spec}.html", spec=config["ablations"]["specs"]),
        expand("results/reports/{spec}.mlflow.json", spec=config["ablations"]["specs"]),


rule models:
    """Every configured packaged model converted to a model directory under results/models/."""
    input:
        expand("results/models/{name}", name=config["packaged_models"]),


rule calibration:
    """One row trained with many seeds; the verdict procedure's false-positive rate on its A/A splits."""
    input:
        "results/reports/calibration.html",


rule coupling:
    """Pairs of rows trained with the same seeds under stream and keyed draws: how closely each pair stays coupled."""
    input:
        "results/reports/coupling.html",


rule compare:
    """Every preset trained on the built-in task with every seed, side by side in one report."""
    input:
        "results/reports/presets.html",
        "results/reports/presets.mlflow.json",


rule sweep:
    """Every configured sweep: its trials as parallel jobs over one persistent study, its report, then the confirmation of
    its best trials on fresh seeds (best_params.yaml only from a confirmed winner)."""
    input:
        [output for sweep in config["sweeps"]["specs"] for output in sweep_outputs(sweep)],


rule search_comparison:
    """The comparison of searches: each sampler/pruner's studies, their winners confirmed on fresh seeds, per core-hour."""
    input:
        f"results/search/{config['sweeps']['comparison']['sweep']}/comparison.html",


rule report:
    """Every configured spec's report, up to date with its runs and spec file (the ablation_report rule's outputs)."""
    input:
        expand("results/reports/{spec}.html", spec=config["ablations"]["specs"]),


rule benchmarks:
    """Score every configured model on every configured benchmark, then the benchmark report."""
    input:
        "results/reports/benchmarks.html",
