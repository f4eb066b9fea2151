rule sweep_trial:
    """Run one trial of a sweep's persistent Optuna study; parallel jobs share the study, so trials run side by side."""
    input:
        base=BASE_INPUT,
    output:
        record="results/sweeps/{sweep}/slots/slot{slot}.json",
    log:
        "results/logs/sweeps/{sweep}/slot{slot}.log",
    conda:
        "../envs/harness.yml"
    params:
        model=start_model,
        storage=SWEEP_STORAGE_OPTION,
    wildcard_constraints:
        slot=r"\d+",
    threads: 1
    message:
        "Sweep {wildcards.sweep}: one trial (slot {wildcards.slot})"
    shell:
        "OMP_NUM_THREADS={threads} python -m algos.campaign.sweeps --sweep {wildcards.sweep} --slot {wildcards.slot} "
        "--out results/sweeps/{wildcards.sweep} --model {params.model} {params.storage} > {log} 2>&1"


rule sweep_report:
    """Render a sweep's search report (history, importances, slices, best trials)."""
    input:
        lambda wildcards: sweep_slots(wildcards.sweep),
    output:
        page=report("results/sweeps/{sweep}/report.html", category="Sweeps", labels={"sweep": "{sweep}"}),
        markdown="results/sweeps/{sweep}/report.md",
    log:
        "results/logs/sweeps/{sweep}/report.log",
    conda:
        "../envs/harness.yml"
    params:
        storage=SWEEP_STORAGE_OPTION,
    message:
        "Reporting sweep {wildcards.sweep}"
    shell:
        "python -m reports.sweep --sweep {wildcards.sweep} --out results/sweeps/{wildcards.sweep} {params.storage} > {log} 2>&1"


checkpoint sweep_confirmation_plan:
    """Choose a finished search's best trials to confirm on fresh seeds, beside the preset's own configuration."""
    input:
        lambda wildcards: sweep_slots(wildcards.sweep),
    output:
        "results/sweeps/{sweep}/confirmation/plan.json",
    log:
        "results/logs/sweeps/{sweep}/confirmation_plan.log",
    conda:
        "../envs/harness.yml"
    message:
        "Sweep {wildcards.sweep}: choosing the trials to confirm"
    shell:
        "python -m algos.campaign.sweep_confirmation plan --sweep {wildcards.sweep} --out results/sweeps/{wildcards.sweep} "
        "> {log} 2>&1"


for _index, _sweep in enumerate(confirmed_sweeps()):

    rule:
        """Train one confirmed configuration's fresh seeds (a trial's or the preset's), one after the other in one process."""
        name:
            f"sweep_confirm_{_index}"
        input:
            plan=f"results/sweeps/{_sweep}/confirmation/plan.json",
            base=BASE_INPUT,
        output:
            [
                f"results/sweeps/{_sweep}/confirmation/{{configuration}}/seed{seed}/final_metrics.json"
                for seed in read_sweep(_sweep).confirmation.seed_numbers
            ],
        log:
            f"results/logs/sweeps/{_sweep}/confirmation_{{configuration}}.log",
        conda:
            "../envs/harness.yml"
        params:
            model=start_model,
        wildcard_constraints:
            configuration=r"preset|trial\d+",
        threads: 1
        message:
            f"Sweep {_sweep}: confirming {{wildcards.configuration}} on fresh seeds"
        shell:
            f"OMP_NUM_THREADS={{threads}} python -m algos.campaign.sweep_confirmation train --sweep {_sweep} "
            f"--configuration {{wildcards.configuration}} --out results/sweeps/{_sweep} --model {{params.model}} > {{log}} 2>&1"


rule sweep_confirmation_report:
    """Judge each confirmed trial against the preset on the fresh seeds; write best_params.yaml from a confirmed winner only."""
    input:
        lambda wildcards: confirmation_runs(wildcards.sweep),
    output:
        page=report("results/sweeps/{sweep}/confirmation.html", category="Sweeps", labels={"sweep": "{sweep}"}),
        markdown="results/sweeps/{sweep}/confirmation.md",
        record="results/sweeps/{sweep}/confirmation.json",
        best="results/sweeps/{sweep}/best_params.yaml",
    log:
        "results/logs/sweeps/{sweep}/confirmation_report.log",
    conda:
        "../envs/harness.yml"
    message:
        "Reporting the confirmation of sweep {wildcards.sweep}"
    shell:
        "python -m reports.sweep_confirmation --sweep {wildcards.sweep} --out results/sweeps/{wildcards.sweep} > {log} 2>&1"


# A comparison of searches (workflow config sweeps.comparison): each sampler/pruner with each sampler seed is a study
# of its own under results/search/<sweep>/<sampler>-<pruner>/seed<k>/, its winner confirmed on fresh seeds.


rule search_trial:
    """Run one trial of one study of the comparison of searches (the sweep under another sampler and pruner)."""
    input:
        base=BASE_INPUT,
    output:
        "results/search/{sweep}/{sampler}-{pruner}/seed{seed}/slots/slot{slot}.json",
    log:
        "results/logs/search/{sweep}/{sampler}-{pruner}/seed{seed}/slot{slot}.log",
    conda:
        "../envs/harness.yml"
    params:
        model=start_model,
    wildcard_constraints:
        sampler="tpe|random",
        pruner="median|wilcoxon|successive_halving|hyperband|none",
        seed=r"\d+",
        slot=r"\d+",
    threads: 1
    message:
        "Search {wildcards.sampler}/{wildcards.pruner}, seed {wildcards.seed}, of {wildcards.sweep}: one trial"
    shell:
        "OMP_NUM_THREADS={threads} python -m algos.campaign.sweeps --sweep {wildcards.sweep} --slot {wildcards.slot} "
        "--out results/search/{wildcards.sweep}/{wildcards.sampler}-{wildcards.pruner}/seed{wildcards.seed} "
        "--search {wildcards.sampler}/{wildcards.pruner}/{wildcards.seed} --model {params.model} > {log} 2>&1"


rule search_winner:
    """Name a finished study's best trial, to be confirmed on the comparison's fresh seeds."""
    input:
        lambda wildcards: [
            f"results/search/{wildcards.sweep}/{wildcards.sampler}-{wildcards.pruner}/seed{wildcards.seed}/slots/slot{slot}.json"
            for slot in range(read_sweep(wildcards.sweep).trials)
        ],
    output:
        "results/search/{sweep}/{sampler}-{pruner}/seed{seed}/confirmation/plan.json",
    log:
        "results/logs/search/{sweep}/{sampler}-{pruner}/seed{seed}/winner.log",
    conda:
        "../envs/harness.yml"
    params:
        fresh=COMPARISON["fresh_seeds"],
    message:
        "Search {wildcards.sampler}/{wildcards.pruner}, seed {wildcards.seed}, of {wildcards.sweep}: its winner"
    shell:
        "python -m algos.campaign.sweep_confirmation plan --sweep {wildcards.sweep} --top 1 --seeds {params.fresh} "
        "--out results/search/{wildcards.sweep}/{wildcards.sampler}-{wildcards.pruner}/seed{wildcards.seed} > {log} 2>&1"


checkpoint search_winners:
    """Every study's winner in one file, once every study of the comparison has finished its search."""
    input:
        lambda wildcards: [f"{study}/confirmation/plan.json" for study in comparison_studies(wildcards.sweep)],
    output:
        "results/search/{sweep}/winners.json",
    log:
        "results/logs/search/{sweep}/winners.log",
    conda:
        "../envs/harness.yml"
    params:
        studies=lambda wildcards: " ".join(comparison_studies(wildcards.sweep)),
    message:
        "Comparison of searches of {wildcards.sweep}: every study's winner"
    shell:
        "python -m algos.campaign.sweep_confirmation winners --studies {params.studies} --out {output} > {log} 2>&1"


rule search_confirm:
    """Train a study's winner on the comparison's fresh seeds (out of MLflow)."""
    input:
        plan="results/search/{sweep}/{search}/seed{seed}/confirmation/plan.json",
        base=BASE_INPUT,
    output:
        [
            f"results/search/{{sweep}}/{{search}}/seed{{seed}}/confirmation/{{configuration}}/seed{fresh}/final_metrics.json"
            for fresh in COMPARISON_SEEDS
        ],
    log:
        "results/logs/search/{sweep}/{search}/seed{seed}/confirmation_{configuration}.log",
    conda:
        "../envs/harness.yml"
    params:
        model=start_model,
    wildcard_constraints:
        search=r"(tpe|random)-\w+",
        seed=r"\d+",
        configuration=r"trial\d+",
    threads: 1
    message:
        "Search {wildcards.search}, seed {wildcards.seed}, of {wildcards.sweep}: confirming {wildcards.configuration}"
    shell:
        "OMP_NUM_THREADS={threads} python -m algos.campaign.sweep_confirmation train --sweep {wildcards.sweep} "
        "--configuration {wildcards.configuration} --out results/search/{wildcards.sweep}/{wildcards.search}/seed{wildcards.seed} "
        "--model {params.model} --set tracking.backend=none > {log} 2>&1"


rule search_comparison_report:
    """Each search's cost and its winners' confirmed objective, per core-hour: the table docs/sweeps.md shows."""
    input:
        lambda wildcards: comparison_inputs(wildcards.sweep),
    output:
        page=report("results/search/{sweep}/comparison.html", category="Sweeps", labels={"comparison": "{sweep}"}),
        markdown="results/search/{sweep}/comparison.md",
        record="results/search/{sweep}/comparison.json",
    log:
        "results/logs/search/{sweep}/comparison.log",
    conda:
        "../envs/harness.yml"
    params:
        searches=" ".join(COMPARISON["searches"]),
        seeds=" ".join(map(str, COMPARISON["seeds"])),
    message:
        "Comparing the searches of sweep {wildcards.sweep}"
    shell:
        "python -m reports.search_comparison --sweep {wildcards.sweep} --searches {params.searches} --seeds {params.seeds} "
        "--results results > {log} 2>&1"
