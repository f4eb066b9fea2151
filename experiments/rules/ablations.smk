wildcard_constraints:
    # A spec file's name: never "<spec>.design" of a fixed design's plan, nor another report's name ("calibration", "coupling").
    spec="|".join(re.escape(name) for name in available_specs()),


ONE_THREAD_A_PROCESS = " ".join(
    f"{variable}=1"
    for variable in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "GOTO_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    )
)
"""Every thread variable Snakemake sets to a job's threads, set to 1. A job's threads are its processes, and under
accelerate each process would take all of them: MKL with a thread to spare spins between its calls, and two
2-process jobs side by side on 2 cores took 2 min 8 s instead of 14 s (docs/training.md)."""
TRAIN_SHELL = (
    "mkdir -p results/runs/{wildcards.spec}/{wildcards.row} && "
    f"{ONE_THREAD_A_PROCESS} {{params.train}} --spec {{wildcards.spec}} --row {{wildcards.row}} --seeds {{params.seeds}} "
    "--runs results/runs --model {params.model} {params.budget} > {log} 2>&1"
)
"""A training job: one process trains its seeds of one row, one after the other (algos.campaign.seed_block), on
one thread per process."""

for _block, _seeds in enumerate(SEED_BLOCKS):

    rule:
        """Train a block of seeds of one ablation row, in one process, from the built-in base (or the configured model).

        A changed row config reruns only that row, from scratch: the old runs' checkpoints and files are discarded.
        """
        name:
            f"train_block_{_block}"
        input:
            base=BASE_INPUT,
        output:
            [f"results/runs/{{spec}}/{{row}}/seed{seed}/final_metrics.json" for seed in _seeds],
        log:
            f"results/logs/train/{{spec}}/{{row}}/seeds{_seeds[0]}-{_seeds[-1]}.log",
        conda:
            "../envs/harness.yml"
        params:
            config_hash=row_config_hash,
            budget=budget_options,
            model=start_model,
            seeds=" ".join(map(str, _seeds)),
            train=TRAIN_COMMAND,
        threads: TRAIN_PROCESSES
        message:
            f"Training {{wildcards.spec}} / {{wildcards.row}} / seeds {', '.join(map(str, _seeds))}"
        shell:
            TRAIN_SHELL


rule train_row:
    """Train one seed of one ablation row outside the blocks (a calibration's or a seed plan's further seeds)."""
    input:
        base=BASE_INPUT,
    output:
        final="results/runs/{spec}/{row}/seed{seed}/final_metrics.json",
    log:
        "results/logs/train/{spec}/{row}/seed{seed}.log",
    conda:
        "../envs/harness.yml"
    params:
        config_hash=row_config_hash,
        budget=budget_options,
        model=start_model,
        seeds="{seed}",
        train=TRAIN_COMMAND,
    wildcard_constraints:
        seed=r"\d+",
    threads: TRAIN_PROCESSES
    message:
        "Training {wildcards.spec} / {wildcards.row} / seeds {wildcards.seed}"
    shell:
        TRAIN_SHELL


for _block, ((_first, _last), _specs) in enumerate(sequential_blocks().items()):

    rule:
        """Train the seeds one look of a sequential design adds to one row, in one process (algos.campaign.seed_block)."""
        name:
            f"train_look_block_{_block}"
        input:
            base=BASE_INPUT,
        output:
            [f"results/runs/{{spec}}/{{row}}/seed{seed}/final_metrics.json" for seed in range(_first, _last + 1)],
        log:
            f"results/logs/train/{{spec}}/{{row}}/seeds{_first}-{_last}.log",
        conda:
            "../envs/harness.yml"
        params:
            config_hash=row_config_hash,
            budget=budget_options,
            model=start_model,
            seeds=" ".join(map(str, range(_first, _last + 1))),
            train=TRAIN_COMMAND,
        wildcard_constraints:
            spec="|".join(re.escape(name) for name in _specs),
        threads: TRAIN_PROCESSES
        message:
            f"Training {{wildcards.spec}} / {{wildcards.row}} / seeds {_first}-{_last} (a look of its sequential design)"
        shell:
            TRAIN_SHELL


workflow.ruleorder(
    *(f"train_block_{block}" for block in range(len(SEED_BLOCKS))),
    *(f"train_look_block_{block}" for block in range(len(sequential_blocks()))),
    "train_row",
)  # blocks first


rule ablation_report:
    """Render one spec's Markdown and HTML report from its runs' own files (and the spec's declared endpoints)."""
    input:
        lambda wildcards: spec_runs(wildcards.spec),
        design_input,
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        markdown="results/reports/{spec}.md",
        page=report("results/reports/{spec}.html", category="Ablation reports", labels={"spec": "{spec}"}),
    log:
        "results/logs/report/{spec}.log",
    conda:
        "../envs/harness.yml"
    params:
        seeds=config["ablations"]["seeds"],
        benchmarks=ABLATION_BENCHMARK_OPTIONS,
        adjust=config["ablations"]["adjust"],
        plan=plan_option,
    message:
        "Reporting {wildcards.spec}"
    shell:
        "python -m reports.ablation --spec {wildcards.spec} --runs results/runs --out results/reports "
        "--seeds {params.seeds} --adjust {params.adjust} {params.plan} {params.benchmarks} > {log} 2>&1"


rule track_rows:
    """Put each row's aggregate (the report's numbers) on its MLflow parent run, so the UI's runs table is the spec's table."""
    input:
        lambda wildcards: spec_runs(wildcards.spec),
        design_input,
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        "results/reports/{spec}.mlflow.json",
    log:
        "results/logs/report/{spec}.mlflow.log",
    conda:
        "../envs/harness.yml"
    params:
        seeds=config["ablations"]["seeds"],
        plan=plan_option,
    message:
        "Logging the rows of {wildcards.spec} to MLflow"
    shell:
        "python -m reports.tracked_rows --spec {wildcards.spec} --runs results/runs --seeds {params.seeds} "
        "{params.plan} --out {output} > {log} 2>&1"


rule fixed_design:
    """Write a spec's fixed design (the seeds its basis sizes each row for) as the plan its reports read."""
    input:
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        "results/plans/{spec}.design.json",
    log:
        "results/logs/plan/{spec}.design.log",
    conda:
        "../envs/harness.yml"
    params:
        problems=lambda wildcards: design_record(wildcards.spec)["problems"],
    message:
        "Writing the fixed design of {wildcards.spec} from its basis"
    shell:
        "python -m reports.seed_design --spec {wildcards.spec} --problems {params.problems} --write-plan {output} "
        "> {log} 2>&1"


rule sequential_design:
    """Write a spec's group-sequential design (each primary's looks, sized from its basis) as the plan its looks read."""
    input:
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        "results/plans/{spec}.sequential.json",
    log:
        "results/logs/plan/{spec}.sequential.log",
    conda:
        "../envs/harness.yml"
    params:
        problems=lambda wildcards: sequential_record(wildcards.spec)["problems"],
        cap=f"--max-seeds {config['ablations']['max_seeds']}" if config["ablations"]["max_seeds"] else "",
    message:
        "Writing the sequential design of {wildcards.spec} from its basis"
    shell:
        "python -m reports.seed_design --spec {wildcards.spec} --problems {params.problems} --sequential {params.cap} "
        "--write-plan {output} > {log} 2>&1"


checkpoint sequential_look:
    """Judge one look of a sequential spec: every primary still open on the seeds it needs; the look file names the
    rows the next look trains (a checkpoint: the graph grows only the undecided rows' seeds)."""
    input:
        lambda wildcards: row_runs(wildcards.spec, look_seeds(wildcards.spec, int(wildcards.look))),
        plan="results/plans/{spec}.sequential.json",
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        "results/plans/{spec}.look{look}.json",
    log:
        "results/logs/plan/{spec}.look{look}.log",
    conda:
        "../envs/harness.yml"
    wildcard_constraints:
        look=r"\d+",
    message:
        "Judging look {wildcards.look} of {wildcards.spec}"
    shell:
        "python -m reports.sequential_look --spec {wildcards.spec} --runs results/runs --plan {input.plan} "
        "--look {wildcards.look} --out {output} > {log} 2>&1"


checkpoint seed_plan:
    """Plan a spec's seeds from its pilot runs (Stein's two-stage procedure, within the spec's budget)."""
    input:
        pilot_runs,
        spec=local(f"{ABLATIONS_DIR}/{{spec}}.yaml"),
    output:
        "results/plans/{spec}.json",
    log:
        "results/logs/plan/{spec}.log",
    conda:
        "../envs/harness.yml"
    params:
        adjust=config["ablations"]["adjust"],
    message:
        "Planning the seeds of {wildcards.spec} from its pilot"
    shell:
        "python -m reports.plan_seeds --spec {wildcards.spec} --runs results/runs --adjust {params.adjust} "
        "--out {output} > {log} 2>&1"


rule train_control:
    """Train one seed of the calibration's positive control: its row with the control's changes."""
    input:
        base=BASE_INPUT,
    output:
        final="results/controls/{spec}/{row}/seed{seed}/final_metrics.json",
    log:
        "results/logs/control/{spec}/{row}/seed{seed}.log",
    conda:
        "../envs/harness.yml"
    params:
        config_hash=row_config_hash,
        budget=lambda wildcards: f"{budget_options(wildcards)} {CONTROL_OPTIONS}",
        model=start_model,
        seeds="{seed}",
        train=TRAIN_COMMAND,
    wildcard_constraints:
        seed=r"\d+",
    threads: TRAIN_PROCESSES
    message:
        "Training the positive control of {wildcards.spec} / {wildcards.row} / seed {wildcards.seed}"
    shell:
        TRAIN_SHELL.replace("results/runs", "results/controls")


rule calibration_report:
    """The calibration of the report procedure on one row's many seeds: the A/A and the positive control."""
    input:
        row_runs(
            config["calibration"]["spec"], {config["calibration"]["row"]: config["calibration"]["seeds"]}
        ),
        [
            f"results/controls/{config['calibration']['spec']}/{config['calibration']['row']}/seed{seed}/final_metrics.json"
            for seed in range(config["calibration"]["seeds"] if config["calibration"]["control"] else 0)
        ],
    output:
        markdown="results/reports/calibration.md",
        page=report("results/reports/calibration.html", category="Calibration"),
    log:
        "results/logs/report/calibration.log",
    conda:
        "../envs/harness.yml"
    params:
        spec=config["calibration"]["spec"],
        row=config["calibration"]["row"],
        seeds=config["calibration"]["seeds"],
        splits=config["calibration"]["splits"],
        half=config["ablations"]["seeds"],
        adjust=config["ablations"]["adjust"],
        control=(
            f"--control-runs results/controls --direction {config['calibration']['control_direction']}"
            if config["calibration"]["control"]
            else ""
        ),
    message:
        "Calibrating the verdicts on {params.seeds} seeds of {params.spec} / {params.row}"
    shell:
        "python -m reports.calibration --spec {params.spec} --row {params.row} --runs results/runs "
        "--seeds {params.seeds} --half {params.half} --splits {params.splits} --adjust {params.adjust} "
        "{params.control} --out results/reports > {log} 2>&1"
