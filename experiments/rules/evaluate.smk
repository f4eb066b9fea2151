wildcard_constraints:
    benchmark="|".join(EVALUATION_BENCHMARKS),


rule benchmark_data:
    """Materialise a benchmark's problems (normalised records) so every score reads the same local copy."""
    input:
        benchmark_source,
    output:
        "results/benchmarks/{benchmark}.jsonl",
    log:
        "results/logs/benchmark_data/{benchmark}.log",
    conda:
        "../envs/harness.yml"
    params:
        origin=lambda wildcards, input: (
            f"--hub-id {config['evaluation']['hub_ids'][wildcards.benchmark]}"
            if wildcards.benchmark in config["evaluation"]["hub_ids"]
            else f"--data-dir {shlex.quote(str(Path(input[0]).parent))}" if input else ""
        ),
    message:
        "Materialising the {wildcards.benchmark} benchmark"
    shell:
        "python -m eval.benchmarks.prepare --benchmark {wildcards.benchmark} {params.origin} --out {output} > {log} 2>&1"


rule evaluate:
    """Score a model on one benchmark; the protocol is written next to the scores.

    The model is base_model (the model every run starts from) or a finished run under results/runs/
    (e.g. dapo_table1/dapo/seed0), scored with its final policy.
    """
    input:
        model=model_input,
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
        model=model_directory,
        options=EVALUATION_OPTIONS,
    message:
        "Scoring {wildcards.model} on {wildcards.benchmark}"
    shell:
        "python -m eval.run.evaluate --model {params.model} --benchmark {wildcards.benchmark} --problems {input.problems} "
        "--out results/eval/{wildcards.model}/{wildcards.benchmark} {params.options} > {log} 2>&1"


rule benchmark_report:
    """Render the scores of every configured model on every configured benchmark beside their protocols."""
    input:
        expand(
            "results/eval/{model}/{benchmark}/metrics.json",
            model=config["evaluation"]["models"],
            benchmark=config["evaluation"]["benchmarks"],
        ),
    output:
        markdown="results/reports/benchmarks.md",
        page=report("results/reports/benchmarks.html", category="Benchmarks"),
    log:
        "results/logs/report/benchmarks.log",
    conda:
        "../envs/harness.yml"
    params:
        models=config["evaluation"]["models"],
        benchmarks=config["evaluation"]["benchmarks"],
    message:
        "Reporting benchmark scores"
    shell:
        "python -m reports.benchmarks --eval results/eval --models {params.models} --benchmarks {params.benchmarks} "
        "--out results/reports > {log} 2>&1"
