"""The config commands list and explain themselves, and the workflow's jobs that only read files (looks, plans,
reports, tracking) start, without loading torch or transformers: each is seconds quicker."""

import re
import subprocess
import sys

import pytest

from algos.config.presets import PROJECT_ROOT

LIGHT_COMMANDS = [
    ("algos.config.presets", "--list"),
    ("algos.config.presets", "--help"),
    ("algos.campaign.ablations", "--list"),
    ("algos.campaign.ablations", "--help"),
    ("algos.campaign.sweeps", "--list"),
    ("algos.campaign.sweeps", "--help"),
]


READING_JOBS = [
    "reports.sequential_look",
    "reports.seed_design",
    "reports.plan_seeds",
    "reports.ablation",
    "reports.tracked_rows",
    "reports.calibration",
    "reports.coupling",
    "reports.benchmarks",
    "reports.sweep",
    "reports.sweep_confirmation",
    "reports.search_comparison",
    "algos.campaign.archive",
    "algos.campaign.sweep_confirmation",
]
"""The entry points of the workflow's jobs that read files and train nothing (and the campaign's archive)."""


def imported_by(*command: str) -> list[str]:
    """The modules ``python -X importtime <command>`` imported, the command having exited 0 with some output."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", *command],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip()
    return re.findall(r"\|\s+(\S+)$", run.stderr, re.MULTILINE)


@pytest.mark.parametrize(("module", "flag"), LIGHT_COMMANDS)
def test_listing_and_help_do_not_import_torch(module, flag):
    imported = imported_by("-m", module, flag)
    assert "torch" not in imported and "transformers" not in imported


@pytest.mark.parametrize("module", READING_JOBS)
def test_a_job_that_only_reads_files_starts_without_torch(module):
    imported = imported_by("-m", module, "--help")
    assert "torch" not in imported and "transformers" not in imported
