# How closely two rows of one seed stay coupled under stream and keyed draws (`snakemake coupling`); the pairs,
# seeds and responses are common.smk's.


rule train_keyed:
    """Train one seed of one row under keyed draws, with the campaign's budget otherwise."""
    input:
        base=BASE_INPUT,
        budget=lambda wildcards: check_coupled_budget() or [],
    output:
        final="results/coupled/{spec}/{row}/seed{seed}/final_metrics.json",
    log:
        "results/logs/coupled/{spec}/{row}/seed{seed}.log",
    conda:
        "../envs/harness.yml"
    params:
        config_hash=row_config_hash,
        budget=lambda wildcards: f"{budget_options(wildcards)} --set {KEYED} --set tracking.backend=none",
        model=start_model,
        seeds="{seed}",
        train=TRAIN_COMMAND,
    wildcard_constraints:
        seed=r"\d+",
    threads: TRAIN_PROCESSES
    message:
        "Training {wildcards.spec} / {wildcards.row} / seed {wildcards.seed} under keyed draws"
    shell:
        TRAIN_SHELL.replace("results/runs", "results/coupled")


rule final_responses:
    """Regenerate the first problems of one run's final evaluation: each response's tokens and verdict."""
    input:
        lambda wildcards: f"{RUNS_OF[wildcards.draws]}/{wildcards.spec}/{wildcards.row}/seed{wildcards.seed}/final_metrics.json",
    output:
        "results/coupling/responses/{draws}/{spec}/{row}/seed{seed}.json",
    log:
        "results/logs/coupling/{draws}/{spec}/{row}/seed{seed}.log",
    conda:
        "../envs/harness.yml"
    params:
        run=lambda wildcards: f"{RUNS_OF[wildcards.draws]}/{wildcards.spec}/{wildcards.row}/seed{wildcards.seed}",
        problems=COUPLING["problems"],
    wildcard_constraints:
        draws="|".join(DRAWS),
        seed=r"\d+",
    message:
        "Regenerating the final responses of {wildcards.spec} / {wildcards.row} / seed {wildcards.seed} ({wildcards.draws})"
    shell:
        "OMP_NUM_THREADS=1 python -m algos.campaign.final_responses --run {params.run} --problems {params.problems} "
        "--out {output} > {log} 2>&1"


rule coupling_report:
    """Each pair's row difference under both kinds of draws: its spread over seeds and how much the rows share."""
    input:
        coupled_responses,
    output:
        markdown="results/reports/coupling.md",
        page=report("results/reports/coupling.html", category="Coupling"),
    log:
        "results/logs/report/coupling.log",
    conda:
        "../envs/harness.yml"
    params:
        pairs=" ".join(f"--pair {text}" for text in COUPLING["pairs"]),
        seeds=" ".join(map(str, COUPLED_SEEDS)),
    message:
        "Reporting the coupling of {params.pairs}"
    shell:
        "python -m reports.coupling {params.pairs} --seeds {params.seeds} --stream-runs results/runs "
        "--keyed-runs results/coupled --responses results/coupling/responses --out results/reports > {log} 2>&1"
