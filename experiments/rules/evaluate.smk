wildcard_constraints:
    benchmark="|".join(config["evaluation"]["benchmarks"]),
    model="[^/]+",


rule benchmark_data:
    """Materialise a benchmark's problems (normalised records) so every score reads the same local copy."""
    output:
        "results/benchmarks/{benchmark}.jsonl",
    log:
        "results/logs/benchmark_data/{benchmark}.log",
    conda:
        "../envs/harness.yml"
    params:
        source=(
            f"RL_BENCHMARKS_DIR={config['evaluation']['source_dir']} "
            if config["evaluation"]["source_dir"]
            else ""
        ),
    message:
        "Materialising the {wildcards.benchmark} benchmark"
    shell:
        "{params.source}python -m eval.prepare --benchmark {wildcards.benchmark} --out {output} > {log} 2>&1"


rule evaluate:
    """Score a model (base_model, or a run in results/runs/) on one benchmark; the protocol is written next to the scores."""
    input:
        model=model_directory,
        problems="results/benchmarks/{benchmark}.jsonl",
    output:
        metrics="results/eval/{model}/{benchmark}/metrics.json",
        records="results/eval/{model}/{benchmark}/records.jsonl",
        protocol="results/eval/{model}/{benchmark}/protocol.json",
    log:
        "results/logs/evaluate/{model}/{benchmark}.log",
    conda:
        "../envs/harness.yml"
    params:
        options=" ".join(
            f"--{key.replace('_', '-')} {value}"
            for key, value in config["evaluation"]["protocol"].items()
            if value is not None
        ),
    message:
        "Scoring {wildcards.model} on {wildcards.benchmark}"
    shell:
        "python -m eval.evaluate --model {input.model} --benchmark {wildcards.benchmark} --problems {input.problems} "
        "--out results/eval/{wildcards.model}/{wildcards.benchmark} {params.options} > {log} 2>&1"
