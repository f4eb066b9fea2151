"""What the cluster tests share beside their fixtures (tests/conftest.py: a one-node SLURM and the shared stores): the
settings they add to the SLURM profile, the snakemake command of a campaign under a profile, and what SLURM says of
the jobs."""

import os
import re
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

SLURM_SCRIPT = ROOT / "experiments" / "cluster" / "one_node_slurm.sh"
STORES_SCRIPT = ROOT / "experiments" / "cluster" / "shared_stores.sh"
STORES_SETTINGS = Path(os.environ.get("RL_STORES_DIR", "/var/lib/rl-harness-stores")) / "stores.yaml"
"""Where the stores' script, run as root, writes their workflow settings."""
TEST_RESOURCES = [
    "--default-resources", "slurm_account=rl-harness", "slurm_partition=main", "runtime=30", "mem_mb=2000",
    "cpus_per_task=1",
    "--latency-wait", "5",
    "--slurm-init-seconds-before-status-checks", "2",
]  # fmt: skip
"""What the tests set beside experiments/profiles/slurm: the one-node cluster's account and partition, small jobs,
and a first status check after 2 s instead of 40 (each round without a finished job waits 10 s longer)."""
SLURM_PROFILE = ["--profile", str(ROOT / "experiments/profiles/slurm"), *TEST_RESOURCES]


def campaign_command(workdir, config, profile, targets=("ablations",)):
    """The snakemake command running ``config`` in ``workdir`` under ``profile`` (written there as tiny.yaml)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(config))
    command = ["snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), *profile]
    return [*command, "--configfile", str(workdir / "tiny.yaml"), "--", *targets]


def slurm_states(jobs: Sequence[str] = (), wait_s: float = 120.0) -> dict[str, str]:
    """job id -> state of every job SLURM's accounting knows (since 1970: sacct's default is since today's midnight),
    once it knows each of ``jobs`` or ``wait_s`` has passed: the controller sends its records to the accounting
    daemon on its own time."""
    query = ["sacct", "-X", "-n", "-P", "-o", "JobID,State", "-S", "1970-01-01"]
    end = time.monotonic() + wait_s
    while True:
        lines = subprocess.run(query, capture_output=True, text=True, check=True)
        states = dict(line.split("|") for line in lines.stdout.splitlines() if line)
        if all(job in states for job in jobs) or time.monotonic() > end:
            return states
        time.sleep(1.0)


def submitted_jobs(output: str) -> list[str]:
    """The SLURM job ids a snakemake run's output says it submitted."""
    return re.findall(r"submitted with SLURM jobid (\d+)", output)
