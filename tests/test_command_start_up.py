"""The config commands list and explain themselves without loading torch: a listing is seconds quicker."""

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


@pytest.mark.parametrize(("module", "flag"), LIGHT_COMMANDS)
def test_listing_and_help_do_not_import_torch(module, flag):
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", module, flag],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip()
    imported = re.findall(r"\|\s+(\S+)$", run.stderr, re.MULTILINE)
    assert "torch" not in imported and "transformers" not in imported
