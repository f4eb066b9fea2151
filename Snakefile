# The pipeline's table of contents: configuration, rule files and targets.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "experiments/config.yaml"


validate(config, "experiments/config.schema.yaml")


include: "experiments/rules/common.smk"
include: "experiments/rules/configs.smk"
include: "experiments/rules/base_model.smk"
include: "experiments/rules/evaluate.smk"
include: "experiments/rules/ablations.smk"


rule all:
    input:
        expand("results/configs/{preset}.yaml", preset=config["presets"]),
        expand("results/eval/base_model/{benchmark}/metrics.json", benchmark=config["evaluation"]["benchmarks"]),


rule ablations:
    """Train every row of every configured ablation spec with every seed."""
    input:
        ablation_runs,


rule evaluate_base:
    """Score the built-in base on every configured benchmark."""
    input:
        expand("results/eval/base_model/{benchmark}/metrics.json", benchmark=config["evaluation"]["benchmarks"]),
