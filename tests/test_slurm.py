"""The SLURM profile against a real SLURM: a one-node cluster on this machine (experiments/cluster/one_node_slurm.sh),
a tiny campaign submitted through experiments/profiles/slurm as SLURM jobs, the same runs as under the local
profile, and a job cancelled with scancel finished by rerunning the same command. Needs root (the daemons) and
Debian's SLURM and MariaDB packages (the script installs them); REQUIRE_SLURM=1 turns a skip into a failure."""

import subprocess
import time

import pytest

from algos.trainer.run_files import replayable_metrics
from tests.cluster import SLURM_PROFILE, campaign_command, slurm_states, submitted_jobs
from tests.requirements import needs_extra
from tests.test_pipeline_smoke import ENVIRONMENT, ROOT, TINY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("cluster"),  # one worker runs both modules: they start and stop the same services
    needs_extra("workflow", command="snakemake"),
]


def campaign(workdir, *profile):
    command = campaign_command(workdir, TINY, profile)
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=ENVIRONMENT, check=False)


def test_a_tiny_campaign_runs_as_slurm_jobs_and_gives_the_local_profiles_runs(one_node_slurm, tmp_path, capsys):
    on_slurm = campaign(tmp_path / "slurm", *SLURM_PROFILE)
    assert on_slurm.returncode == 0, on_slurm.stderr[-3000:]
    submitted = submitted_jobs(on_slurm.stdout + on_slurm.stderr)
    assert len(submitted) >= 6  # the base, four rows' seed blocks, the report
    states = slurm_states(submitted)
    with capsys.disabled():  # into CI's log: the jobs as SLURM's accounting saw them
        print("", *(f"sacct: job {job} {states.get(job)}" for job in submitted), sep="\n")
    assert all(states.get(job) == "COMPLETED" for job in submitted), {job: states.get(job) for job in submitted}

    local = campaign(tmp_path / "local", "--profile", str(ROOT / "experiments/profiles/local"))
    assert local.returncode == 0, local.stderr[-3000:]
    runs = sorted(path.parent.relative_to(tmp_path / "local") for path in (tmp_path / "local").rglob("metrics.jsonl"))
    assert len(runs) == 8  # 4 rows x 2 seeds
    for run in runs:
        assert replayable_metrics(tmp_path / "slurm" / run) == replayable_metrics(tmp_path / "local" / run), run


def test_a_job_cancelled_with_scancel_is_finished_by_rerunning_the_same_command(one_node_slurm, tmp_path):
    longer = [text for text in TINY["ablations"]["overrides"] if not text.startswith("run.steps=")]
    config = {
        **TINY,
        "ablations": {**TINY["ablations"], "overrides": [*longer, "run.steps=8", "run.checkpoint_every=2"]},
    }
    targets = [f"results/runs/dr_grpo_bias/grpo/seed{seed}/final_metrics.json" for seed in (0, 1)]  # one row's job
    command = campaign_command(tmp_path, config, SLURM_PROFILE, targets)
    run = tmp_path / "results" / "runs" / "dr_grpo_bias" / "grpo" / "seed0"
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENVIRONMENT)
    cancelled = None
    for _ in range(1200):  # until the row's job has written a checkpoint, at most 10 min
        jobs = subprocess.run(
            ["squeue", "-h", "-t", "running", "-o", "%i %k"], capture_output=True, text=True, check=True
        ).stdout.split("\n")
        mine = [line.split()[0] for line in jobs if "rule_train_block_0_wildcards_dr_grpo_bias_grpo" in line]
        if mine and (run / "checkpoint" / "state.pt").is_file():
            cancelled = mine[0]
            subprocess.run(["scancel", cancelled], check=True)
            break
        if first.poll() is not None:
            break
        time.sleep(0.5)
    output = first.communicate(timeout=600)[0]
    assert cancelled is not None, output[-3000:]
    assert first.returncode != 0 and not (run / "final_metrics.json").exists(), output[-3000:]
    started = (run / "run.json").stat().st_mtime_ns

    again = subprocess.run(command, capture_output=True, text=True, timeout=900, env=ENVIRONMENT, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (run / "final_metrics.json").is_file()
    assert (run / "run.json").stat().st_mtime_ns == started  # written once, when the run began: it resumed
    steps = [row["step"] for row in replayable_metrics(run)]
    assert steps == sorted(set(steps)) and steps[-1] == 8
