"""End to end on a tiny budget: base model -> every row x seed of one spec -> its report; then reruns."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.requirements import needs_extra

ROOT = Path(__file__).resolve().parents[1]
pytestmark = needs_extra("workflow", command="snakemake")

TINY = {
    "base_model": {"args": "--worked-steps 20 --mixed-steps 5 --hidden-size 32 --layers 2"},
    "ablations": {
        "specs": ["dr_grpo_bias"],
        "seeds": 2,
        "sequential": False,  # the 3-seed overview's path; the sequential campaign has its own test
        "step_scale": 1.0,
        "eval_points": None,  # keeps run.eval_every=0 below: evaluations at the first and last step only
        "overrides": [
            "run.steps=2",
            "run.eval_every=0",
            "run.eval_problems=16",
            "rollout.prompts_per_step=4",
            "rollout.group_size=4",
            "tracking.backend=none",
        ],
    },
}


SCORED = {
    **TINY,
    "ablations": {**TINY["ablations"], "benchmarks": ["chain"]},
    "evaluation": {
        "benchmarks": ["chain"],
        "protocol": {"limit": 8, "samples": 2, "max_new_tokens": 24, "temperature": None, "top_p": None, "seed": 0},
    },
}
"""TINY with every run, and the base, scored on the built-in task's test split (8 problems, k = 2)."""


def command(workdir, *args):
    configfile = str(workdir / "tiny.yaml")
    return [
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "-d",
        str(workdir),
        "-c2",
        "-j2",
        *args,
        "--configfile",
        configfile,
    ]


ENVIRONMENT = {**os.environ, "PYTHONPATH": str(ROOT)}


def snakemake(workdir, *args, targets=("ablations",)):
    full = [*command(workdir, *args), "--", *targets]
    return subprocess.run(full, capture_output=True, text=True, timeout=600, env=ENVIRONMENT, check=False)


@pytest.mark.slow
def test_ablations_pipeline_end_to_end_then_reruns_only_what_is_missing(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(SCORED))
    both = ("ablations", "benchmarks")
    first = snakemake(tmp_path, targets=both)
    assert first.returncode == 0, first.stderr[-3000:]
    report = (tmp_path / "results" / "reports" / "dr_grpo_bias.md").read_text()
    assert "| Dr. GRPO | — |" in report and "(n=2)" in report and "## Provenance" in report
    assert "chain: mean [95% CI] (n)" in report and "chain (avg@2: greedy + k=2 at T=1" in report
    cells = re.findall(r"\(n=2\)(?:; no answer \d+\.\d %)? \|", report)
    assert "not scored" not in report and len(cells) >= 8  # both columns of every row
    assert "; no answer " in report  # the chain's share of sampled responses without an answer
    assert (tmp_path / "results" / "reports" / "dr_grpo_bias.html").is_file()
    scores = (tmp_path / "results" / "reports" / "benchmarks.md").read_text()
    assert "| base_model | chain |" in scores and "(avg@2)" in scores

    again = snakemake(tmp_path, "-n", targets=both)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    # an edited row reruns from scratch: its files and the report reflect the row as now written
    dr_grpo = tmp_path / "results" / "runs" / "dr_grpo_bias" / "dr_grpo"
    metrics_before = {seed: (dr_grpo / seed / "metrics.jsonl").read_text() for seed in ("seed0", "seed1")}
    edited = {**SCORED, "ablations": {**SCORED["ablations"], "tuned": {"dr_grpo": ["rollout.max_new_tokens=6"]}}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(edited))
    rerun = snakemake(tmp_path, targets=both)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    trained = re.findall(r"Training dr_grpo_bias / (\w+) / seeds 0, 1", rerun.stdout + rerun.stderr)
    assert trained == ["dr_grpo"]  # one job trains the row's block of seeds
    for seed, before in metrics_before.items():
        assert (dr_grpo / seed / "metrics.jsonl").read_text() != before
        assert yaml.safe_load((dr_grpo / seed / "config.yaml").read_text())["rollout"]["max_new_tokens"] == 6
    dr_grpo_lines = lambda text: [line for line in text.splitlines() if line.startswith("| Dr. GRPO |")]  # noqa: E731
    edited_report = (tmp_path / "results" / "reports" / "dr_grpo_bias.md").read_text()
    assert dr_grpo_lines(edited_report) and dr_grpo_lines(edited_report) != dr_grpo_lines(report)

    shutil.rmtree(tmp_path / "results" / "runs" / "dr_grpo_bias" / "grpo" / "seed1")
    plan = snakemake(tmp_path, "-n", targets=both)
    assert "Training dr_grpo_bias / grpo / seeds 0, 1" in plan.stdout  # seed 0 finishes from its last checkpoint
    assert plan.stdout.count("Training ") == 1 and "Reporting dr_grpo_bias" in plan.stdout
    assert "Scoring dr_grpo_bias/grpo/seed1 on chain" in plan.stdout


def _finished_jobs(workdir):
    """Outputs of each training job that Snakemake's log of the (first) invocation reports finished."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        return []
    text = logs[0].read_text()
    started = dict(re.findall(r"Job (\d+): Training dr_grpo_bias / (\w+ / seeds [\d, ]+)", text))
    blocks = [started[job].split(" / seeds ") for job in re.findall(r"Finished jobid: (\d+) \(Rule: train_", text)]
    return [
        [workdir / f"results/runs/dr_grpo_bias/{row}/seed{seed}/final_metrics.json" for seed in seeds.split(", ")]
        for row, seeds in blocks
    ]


@pytest.mark.slow
@pytest.mark.serial  # the kill lands by the clock: beside other tests the campaign may not have got that far
def test_a_killed_workflow_finishes_on_rerun_without_redoing_finished_runs(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    runs = tmp_path / "results" / "runs" / "dr_grpo_bias"
    workflow = subprocess.Popen(
        [*command(tmp_path), "--", "ablations"],
        env=ENVIRONMENT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, so the kill reaches the training jobs too
    )
    deadline = time.monotonic() + 300
    while not _finished_jobs(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(workflow.pid, signal.SIGKILL)
    workflow.wait()
    jobs = _finished_jobs(tmp_path)
    finished = {path: path.stat().st_mtime_ns for outputs in jobs for path in outputs}
    assert jobs and len(jobs) < 4, "the kill should land part-way through the campaign (4 jobs of 2 seeds)"

    assert snakemake(tmp_path, "--unlock").returncode == 0  # a killed Snakemake leaves its lock behind
    rerun = snakemake(tmp_path, "--rerun-incomplete")
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert {path: path.stat().st_mtime_ns for path in finished} == finished
    assert rerun.stdout.count("Training ") + rerun.stderr.count("Training ") == 4 - len(jobs)
    outputs = sorted(runs.glob("*/seed*/final_metrics.json"))
    assert len(outputs) == 8 and all("eval/test/accuracy_t1" in json.loads(p.read_text()) for p in outputs)
    assert "(n=2)" in (tmp_path / "results" / "reports" / "dr_grpo_bias.md").read_text()


SEQUENTIAL = {
    **TINY,
    "ablations": {**TINY["ablations"], "specs": ["dapo_table1"], "sequential": True, "max_seeds": 5},
}
"""TINY as DAPO Table 1's sequential design, capped at looks of 4 and 5 seeds a row."""


@pytest.mark.slow
def test_a_sequential_campaign_judges_each_look_and_trains_only_the_open_rows_next_seeds(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(SEQUENTIAL))
    first = snakemake(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    plans, runs = tmp_path / "results" / "plans", tmp_path / "results" / "runs" / "dapo_table1"
    assert sorted(p.parent.name for p in runs.glob("naive_grpo/seed*/final_metrics.json"))[:4] == [
        f"seed{s}" for s in range(15, 19)
    ]
    assert_only_open_rows_trained_on(json.loads((plans / "dapo_table1.look0.json").read_text()), runs)
    assert " of 2, n = " in (tmp_path / "results/reports/dapo_table1.md").read_text()  # where each primary stopped

    # one seed of the first row scores far off: its comparison cannot be decided at the first look (Δ about
    # 7 points, se about 7), so its two rows train the second look's seed, and only rows of open comparisons do
    final = runs / "naive_grpo" / "seed15" / "final_metrics.json"
    final.write_text(json.dumps({**json.loads(final.read_text()), "eval/test/accuracy_t1": 0.3}))
    again = snakemake(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    look = json.loads((plans / "dapo_table1.look0.json").read_text())
    assert {"naive_grpo", "overlong_filtering"} <= set(look["next_seeds"])
    assert_only_open_rows_trained_on(look, runs)
    assert json.loads((plans / "dapo_table1.look1.json").read_text())["finished"]  # the last look decides or ends
    assert "(look 2 of 2, n = 5)" in (tmp_path / "results/reports/dapo_table1.md").read_text()


def assert_only_open_rows_trained_on(look, runs):
    """The rows with a second look's seed are exactly those of the comparisons the first look left open."""
    open_rows = {row for c in look["comparisons"] if c["verdict"] is None for row in (c["row"], c["compared_with"])}
    assert set(look["next_seeds"]) == open_rows
    assert {p.parent.parent.name for p in runs.glob("*/seed19/final_metrics.json")} == open_rows


SIDE_BY_SIDE_ROWS = ("grpo", "dr_grpo")
"""Two rows of dr_grpo_bias, one seed each: two training jobs the workflow may start at once."""


def side_by_side_config(processes: int) -> dict:
    """TINY at one seed and one step a run, its rows' 16 mini-batches of one row made 2 (fewer collectives on two
    cores), trained in ``processes`` processes a job (experiments/accelerate/ddp.yaml)."""
    overrides = [o for o in TINY["ablations"]["overrides"] if not o.startswith("run.steps=")]
    ablations = {**TINY["ablations"], "seeds": 1, "overrides": [*overrides, "run.steps=1", "optim.mini_batches=2"]}
    return {**TINY, "ablations": ablations, "training": {"processes": processes}}


def training_jobs_overlap(workdir) -> bool:
    """Whether every training job of the workflow's log started before any of them finished."""
    text = next((workdir / ".snakemake" / "log").glob("*.snakemake.log")).read_text()
    events = re.findall(r"Job \d+: Training |Finished jobid: \d+ \(Rule: train_", text)
    started = [event for event in events if event.startswith("Job")]
    return len(started) == len(SIDE_BY_SIDE_ROWS) and events[: len(started)] == started


@pytest.mark.slow
def test_two_multi_process_training_jobs_run_side_by_side_and_train_as_one_process_would(tmp_path):
    """Under --cores 4, two jobs of two processes each start together, each on a rendezvous port free at its launch
    (accelerate's default port would refuse the second), and each run's metrics are the one-process run's."""
    from tests.algos.engine.test_distributed import assert_same_run
    from tests.cluster import campaign_command

    targets = [f"results/runs/dr_grpo_bias/{row}/seed0/final_metrics.json" for row in SIDE_BY_SIDE_ROWS]
    two, one = tmp_path / "two", tmp_path / "one"
    command_two = campaign_command(two, side_by_side_config(2), ["--cores", "4"], targets)
    together = subprocess.run(command_two, capture_output=True, text=True, timeout=600, env=ENVIRONMENT, check=False)
    assert together.returncode == 0, together.stderr[-3000:]
    assert training_jobs_overlap(two), "the two training jobs did not run side by side"
    shutil.copytree(two / "results" / "base_model", one / "results" / "base_model")  # the same start model
    (one / "tiny.yaml").write_text(yaml.safe_dump(side_by_side_config(1)))
    alone = snakemake(one, targets=targets)
    assert alone.returncode == 0, alone.stderr[-3000:]
    for row in SIDE_BY_SIDE_ROWS:
        run = Path("results/runs/dr_grpo_bias", row, "seed0")
        assert_same_run(one / run, two / run)
