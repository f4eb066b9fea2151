"""The default run leaves the slow tests out, and the whole suite (what CI runs) runs every test exactly once: no
test is left to run nowhere."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHOLE_SUITE = ROOT / "tests" / "whole_suite.sh"


def collected(*options: str) -> set[str]:
    """The test ids ``python -m pytest --collect-only`` selects with ``options``."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *options],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return {line for line in run.stdout.splitlines() if "::" in line}


def test_ci_runs_the_whole_suite_and_the_default_leaves_out_only_the_slow_tests():
    assert "bash tests/whole_suite.sh" in (ROOT / ".ci" / "run").read_text()
    assert "bash tests/whole_suite.sh" in (ROOT / "README.md").read_text()
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "-m 'not slow'" in options["addopts"] and "--strict-markers" in options["addopts"]
    selections = re.findall(r'python -m pytest -m "([^"]+)"', WHOLE_SUITE.read_text())
    assert selections == ["not serial", "serial"]


@pytest.mark.slow
def test_the_whole_suites_two_runs_select_every_test_once():
    everything = collected("-m", "")
    parallel, alone = collected("-m", "not serial"), collected("-m", "serial")
    assert parallel | alone == everything and not parallel & alone
    default = collected()
    assert default < everything and not default & collected("-m", "slow")
