# The pipeline's table of contents: configuration, rule files and targets.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "experiments/config.yaml"


validate(config, "experiments/config.schema.yaml")


include: "experiments/rules/configs.smk"
include: "experiments/rules/base_model.smk"


rule all:
    input:
        expand("results/configs/{preset}.yaml", preset=config["presets"]),
