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
    """Render a sweep's report (history, importances, slices, best trials) and its best_params.yaml."""
    input:
        lambda wildcards: sweep_slots(wildcards.sweep),
    output:
        page=report("results/sweeps/{sweep}/report.html", category="Sweeps", labels={"sweep": "{sweep}"}),
        markdown="results/sweeps/{sweep}/report.md",
        best="results/sweeps/{sweep}/best_params.yaml",
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
