"""A tiny campaign tracked in MLflow, browsed with `mlflow ui` exactly as the README starts it.

The server's REST API must list every spec as an experiment, every row as a parent run carrying the
report's aggregates, and every seed nested under its row; headless Chromium must render the runs view
with every row in it.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from algos.campaign.ablations import read_spec
from tests.ports import free_port
from tests.requirements import needs_extra
from tests.test_pipeline_smoke import ROOT, TINY, snakemake

pytestmark = [
    needs_extra("workflow", command="snakemake"),
    needs_extra("ui", module="flask"),
    pytest.mark.xdist_group("mlflow_ui"),  # in the whole suite, one worker runs the module's campaign
]

SPECS = ["dr_grpo_bias", "dapo_table1"]  # both have a GRPO row: the experiments must keep theirs apart
SEEDS = 2
TRACKED = {
    **TINY,
    "ablations": {
        **TINY["ablations"],
        "specs": SPECS,
        "eval_points": 3,
        "overrides": [
            "run.steps=1",
            *(
                o
                for o in TINY["ablations"]["overrides"]
                if not o.startswith(("tracking.", "run.eval_every", "run.steps"))
            ),
        ],
    },
}
"""TINY over two specs, one step a run, with MLflow on (the default store, sqlite:///mlflow.db in the working directory)."""

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


@pytest.mark.slow
def test_the_ui_lists_every_spec_row_and_seed_with_the_rows_aggregates(campaign, ui):
    experiments = {e["name"]: e for e in get(f"{ui}/api/2.0/mlflow/experiments/search?max_results=100")["experiments"]}
    for spec in SPECS:
        experiment = experiments[spec]
        experiment_tags = {t["key"]: t["value"] for t in experiment["tags"]}
        assert experiment_tags["mlflow.experimentKind"] == "custom_model_development"
        view = json.loads(experiment_tags["mlflow.sharedViewState.ablation-table"])
        assert view["orderByKey"] == "metrics.`row`" and "metrics.`table/mean`" in view["selectedColumns"]
        runs = search_runs(ui, experiment["experiment_id"])
        parents = {tags(run)["harness.parent_run"]: run for run in runs if "harness.parent_run" in tags(run)}
        rows = read_spec(spec).rows
        assert sorted(parents, key=lambda row: metrics(parents[row])["row"]) == [row.id for row in rows]
        assert len(runs) == len(rows) * (1 + SEEDS)
        for row in rows:
            check_row(campaign / "results/runs" / spec / row.id, row, parents[row.id], runs)


def check_row(row_dir, row, parent, runs):
    """The row's parent run: its seeds nested under it, and the report's aggregates recomputed from their files."""
    children = [run for run in runs if tags(run).get("mlflow.parentRunId") == parent["info"]["run_id"]]
    assert sorted(child["info"]["run_name"] for child in children) == [f"seed{s}" for s in range(SEEDS)]
    finals = [json.loads((row_dir / f"seed{s}/final_metrics.json").read_text()) for s in range(SEEDS)]
    logged = metrics(parent)
    assert logged["table/mean"] == pytest.approx(100 * sum(f["eval/test/accuracy_t1"] for f in finals) / SEEDS)
    assert logged["table/ci_low"] <= logged["table/mean"] <= logged["table/ci_high"]
    assert logged["table/n_seeds"] == SEEDS
    assert logged.get("paper") == row.paper and tags(parent)["row.label"] == row.label
    assert ("table/delta/mean" in logged) == (row.compare_to is not None)
    for endpoint in row.endpoints:
        assert any(re.fullmatch(rf"endpoint/{re.escape(endpoint.metric)}/steps \d+-\d+/mean", k) for k in logged)


@pytest.mark.skipif(
    shutil.which("chromium") is None and not os.environ.get("REQUIRE_BROWSER"),
    reason="needs Debian's chromium (REQUIRE_BROWSER=1 makes its absence a failure)",
)
@pytest.mark.slow
def test_chromium_renders_the_runs_view_with_every_row(campaign, ui, tmp_path):
    spec = read_spec(SPECS[0])
    record = json.loads((campaign / f"results/reports/{spec.name}.mlflow.json").read_text())
    page = f"{ui}/{record['runs_view']}"
    browser = [shutil.which("chromium") or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*browser, "--dump-dom", page], capture_output=True, text=True, timeout=120, check=True)
    for row in spec.rows:
        assert f">{row.id}<" in dom.stdout, f"row {row.id} is not in the rendered runs view"
    assert "Model training" in dom.stdout and "table/mean" in dom.stdout
    screenshot = Path(os.environ.get("MLFLOW_UI_SCREENSHOT", tmp_path / "runs_view.png"))
    subprocess.run([*browser, f"--screenshot={screenshot}", page], capture_output=True, timeout=120, check=True)
    assert screenshot.read_bytes().startswith(b"\x89PNG") and screenshot.stat().st_size > 20_000
