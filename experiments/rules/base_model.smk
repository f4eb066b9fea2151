rule base_model:
    """Train the built-in base (a tiny Llama-architecture LM) from scratch on worked solutions of the synthetic task."""
    output:
        model=directory("results/base_model"),
    log:
        "results/logs/base_model.log",
    conda:
        "../envs/harness.yml"
    message:
        "Building the built-in base model (supervised warm-up from scratch)"
    params:
        recipe=config["base_model"]["args"],
    threads: 4  # capped at --cores; a model this small gains little from more
    shell:
        "OMP_NUM_THREADS={threads} python -m algos.trainer.sft --out {output.model} {params.recipe} > {log} 2>&1"
