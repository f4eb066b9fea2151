"""A tiny campaign tracked in MLflow, browsed with `mlflow ui` exactly as the README starts it.

The server's REST API must list every spec as an experiment, every row as a parent run carrying the
report's aggregates, and every seed nested under its row; headless Chromium must render the runs view
with every row in it.
"""

import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.test_pipeline_smoke import ROOT, TINY, snakemake

pytestmark = [
    pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs the 'workflow' extra"),
    pytest.mark.skipif(importlib.util.find_spec("flask") is None, reason="needs the 'ui' extra (MLflow's server)"),
]

SPEC = "dr_grpo_bias"
ROWS = ["grpo", "no_length_normalisation", "no_std_scaling", "dr_grpo"]
SEEDS = 2
TRACKED = {
    **TINY,
    "ablations": {
        **TINY["ablations"],
        "eval_points": 3,
        "overrides": [o for o in TINY["ablations"]["overrides"] if not o.startswith(("tracking.", "run.eval_every"))],
    },
}
"""TINY with MLflow on (the default local store, sqlite:///mlflow.db in the working directory)."""

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=2200,900",
    "--virtual-time-budget=20000",  # the page's scripts and API calls finish within this (virtual) time
)


def readme_ui_command() -> list[str]:
    """The `mlflow ui ...` line of the README's code blocks, without its comment."""
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("mlflow ui ")]
    assert len(lines) == 1, "the README should start the UI with one `mlflow ui ...` line"
    return shlex.split(lines[0].split("#")[0])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tracked")
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(TRACKED))
    done = snakemake(workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


@pytest.fixture(scope="module")
def ui(campaign):
    """The README's `mlflow ui` over the campaign's store, on a free loopback port: its base URL."""
    port = free_port()
    command = readme_ui_command()
    at = command.index("--port") + 1 if "--port" in command else len(command)
    command = [*command[:at], *([] if "--port" in command else ["--port"]), str(port), *command[at + 1 :]]
    server = subprocess.Popen(
        command, cwd=campaign, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            get(f"{base}/api/2.0/mlflow/experiments/search?max_results=100")
            break
        except OSError:
            assert server.poll() is None and time.monotonic() < deadline, "mlflow ui did not answer"
            time.sleep(0.5)
    yield base
    os.killpg(server.pid, signal.SIGTERM)
    server.wait(timeout=30)


def search_runs(base: str, experiment_id: str) -> list[dict]:
    return post(f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [experiment_id], "max_results": 1000})["runs"]


def tags(run: dict) -> dict[str, str]:
    return {tag["key"]: tag["value"] for tag in run["data"].get("tags", [])}


def metrics(run: dict) -> dict[str, float]:
    return {metric["key"]: metric["value"] for metric in run["data"].get("metrics", [])}


def test_the_ui_lists_every_spec_row_and_seed_with_the_rows_aggregates(campaign, ui):
    experiments = {e["name"]: e for e in get(f"{ui}/api/2.0/mlflow/experiments/search?max_results=100")["experiments"]}
    assert SPEC in experiments
    experiment = experiments[SPEC]
    experiment_tags = {t["key"]: t["value"] for t in experiment["tags"]}
    assert experiment_tags["mlflow.experimentKind"] == "custom_model_development"
    view = json.loads(experiment_tags["mlflow.sharedViewState.ablation-table"])
    assert view["orderByKey"] == "metrics.`row`" and "metrics.`table/mean`" in view["selectedColumns"]
    runs = search_runs(ui, experiment["experiment_id"])
    parents = {tags(run)["harness.parent_run"]: run for run in runs if "harness.parent_run" in tags(run)}
    assert list(sorted(parents, key=lambda row: metrics(parents[row])["row"])) == ROWS  # the table's order
    for row, parent in parents.items():
        children = [run for run in runs if tags(run).get("mlflow.parentRunId") == parent["info"]["run_id"]]
        assert sorted(child["info"]["run_name"] for child in children) == [f"seed{s}" for s in range(SEEDS)]
        finals = [
            json.loads((campaign / f"results/runs/{SPEC}/{row}/seed{s}/final_metrics.json").read_text())
            for s in range(SEEDS)
        ]
        expected = 100 * sum(final["eval/test/accuracy_t1"] for final in finals) / SEEDS
        logged = metrics(parent)
        assert logged["table/mean"] == pytest.approx(expected)
        assert logged["table/ci_low"] <= logged["table/mean"] <= logged["table/ci_high"]
        assert logged["table/n_seeds"] == SEEDS
        assert tags(parent)["row.preset"] and "mlflow.note.content" in tags(parent)
        if row != "grpo":  # every other row is compared with GRPO and declares an endpoint
            assert {"table/delta/mean", "table/p_improvement"} <= set(logged)
            assert any(re.fullmatch(r"endpoint/.+/steps \d+-\d+/mean", key) for key in logged)


@pytest.mark.skipif(
    shutil.which("chromium") is None and not os.environ.get("REQUIRE_BROWSER"),
    reason="needs Debian's chromium (REQUIRE_BROWSER=1 makes its absence a failure)",
)
def test_chromium_renders_the_runs_view_with_every_row(campaign, ui, tmp_path):
    record = json.loads((campaign / f"results/reports/{SPEC}.mlflow.json").read_text())
    page = f"{ui}/{record['runs_view']}"
    browser = [shutil.which("chromium") or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True)
    for row in ROWS:
        assert f">{row}<" in dom.stdout, f"row {row} is not in the rendered runs view"
    assert "Model training" in dom.stdout and "table/mean" in dom.stdout
    screenshot = Path(os.environ.get("MLFLOW_UI_SCREENSHOT", tmp_path / "runs_view.png"))
    subprocess.run([*browser, f"--screenshot={screenshot}", page], capture_output=True, timeout=120, check=True)
    assert screenshot.read_bytes().startswith(b"\x89PNG") and screenshot.stat().st_size > 20_000
