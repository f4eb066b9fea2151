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
