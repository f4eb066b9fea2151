# Helpers shared by the rule files.
import shlex

from algos.ablations import Budget, read_spec
from algos.presets import config_hash

BUDGET = Budget(tuple(config["ablations"]["overrides"]), config["ablations"]["step_scale"])
BUDGET_OPTIONS = " ".join([f"--step-scale {BUDGET.step_scale}", *(f"--set {shlex.quote(o)}" for o in BUDGET.overrides)])
for _spec in config["ablations"]["specs"]:
    read_spec(_spec).check_budget(BUDGET)  # a bad spec or budget fails here, before any job starts


def model_directory(wildcards):
    """The built-in base, or the final policy of the training run results/runs/<model>."""
    if wildcards.model == "base_model":
        return "results/base_model"
    return f"results/runs/{wildcards.model}/checkpoint/policy"


def spec_runs(spec):
    """Final-metrics files of every (row, seed) of one ablation spec."""
    return [
        f"results/runs/{spec}/{row.id}/seed{seed}/final_metrics.json"
        for row in read_spec(spec).rows
        for seed in range(config["ablations"]["seeds"])
    ]


def row_config_hash(wildcards):
    """Hash of one row's config as the campaign runs it: a rerun trigger that fires only for rows whose config changed."""
    return config_hash(read_spec(wildcards.spec).config(wildcards.row, BUDGET))
