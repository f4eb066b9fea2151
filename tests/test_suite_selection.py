"""The default run leaves the slow tests out, and the whole suite (what CI runs) runs every test exactly once: no
test is left to run nowhere."""

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHOLE_SUITE = ROOT / "tests" / "whole_suite.sh"


def markers_of_every_test(tmp_path) -> dict[str, set[str]]:
    """Test id -> marker names, for every test ``python -m pytest -m ""`` collects (one collection)."""
    listing = tmp_path / "markers.json"
    pytest_run(["--collect-only", "-q", "-m", "", "-p", "tests.marker_listing"], ROOT, MARKER_LISTING=str(listing))
    return {test: set(names) for test, names in json.loads(listing.read_text()).items()}


def pytest_run(options: list[str], cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    """``python -m pytest`` with ``options`` in ``cwd`` (this checkout importable), asserted to pass."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *options],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **environment},
        timeout=900,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run


def selected(expression: str, markers: dict[str, set[str]]) -> set[str]:
    """The tests a ``-m`` expression of marker names, ``not``, ``and``, ``or`` and brackets selects."""
    names = set(re.findall(r"[A-Za-z_]\w*", expression)) - {"not", "and", "or"}
    return {
        test
        for test, own in markers.items()
        if eval(expression, {"__builtins__": {}}, {name: name in own for name in names})
    }


def test_ci_runs_the_whole_suite_and_the_default_leaves_out_only_the_slow_tests():
    assert "bash tests/whole_suite.sh" in (ROOT / ".ci" / "run").read_text()
    assert "bash tests/whole_suite.sh" in (ROOT / "README.md").read_text()
    assert "--strict-markers" in pytest_addopts() and default_selection() == "not slow"
    assert whole_suite_selections() == ["not serial", "serial"]
    assert "--dist loadgroup" in WHOLE_SUITE.read_text()  # the tests of one xdist_group share a worker


def default_selection() -> str:
    """The ``-m`` expression of pyproject.toml's addopts: what ``python -m pytest`` runs."""
    (expression,) = re.findall(r"-m '([^']+)'", pytest_addopts())
    return expression


def pytest_addopts() -> str:
    """pyproject.toml's pytest ``addopts``."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]


def whole_suite_selections() -> list[str]:
    """The ``-m`` expressions of tests/whole_suite.sh's two pytest runs, in order."""
    return re.findall(r'python -m pytest -m "([^"]+)"', WHOLE_SUITE.read_text())


@pytest.mark.slow
def test_the_whole_suites_two_runs_select_every_test_once(tmp_path):
    markers = markers_of_every_test(tmp_path)
    everything = set(markers)
    parallel, alone = (selected(expression, markers) for expression in whole_suite_selections())
    assert parallel | alone == everything and not parallel & alone
    default = selected(default_selection(), markers)
    assert default < everything and not default & selected("slow", markers)
    assert len(selected("serial", markers)) < len(everything) / 4  # most tests run two at a time


def test_the_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    (tmp_path / "test_grouped.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.xdist_group('together')\n@pytest.mark.parametrize('n', range(4))\n"
        "def test_grouped(n):\n    pass\n\n"
        "@pytest.mark.parametrize('n', range(4))\ndef test_alone(n):\n    pass\n"
    )
    run = pytest_run(["-n", "2", "--dist", "loadgroup", "-v", str(tmp_path)], tmp_path)
    workers = re.findall(r"\[(gw\d)\] .*PASSED test_grouped.py::test_grouped\[\d\]@together", run.stdout)
    assert len(workers) == 4 and len(set(workers)) == 1, run.stdout[-2000:]
