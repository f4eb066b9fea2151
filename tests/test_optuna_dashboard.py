"""A finished sweep's study browsed with optuna-dashboard exactly as the README starts it: the server answers with the
study and its trials."""

import json
import os
import shlex
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from algos.campaign.sweeps import read_sweep
from tests.ports import free_port
from tests.requirements import needs_extra

ROOT = Path(__file__).resolve().parents[1]
pytestmark = needs_extra("ui", command="optuna-dashboard")


def readme_dashboard_command() -> list[str]:
    """The `optuna-dashboard ...` line of the README's code blocks, without its comment."""
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("optuna-dashboard ")]
    assert len(lines) == 1, "the README should start the dashboard with one `optuna-dashboard ...` line"
    return shlex.split(lines[0].split("#")[0])


def get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_the_readmes_dashboard_serves_a_finished_sweeps_study(tmp_path):
    command = readme_dashboard_command()
    journal = next(argument for argument in command[1:] if argument.endswith("study.journal"))
    spec = read_sweep(Path(journal).parent.name)
    study = spec.study(None, tmp_path / Path(journal).parent)  # the sweep's own storage: its journal file
    study.optimize(lambda trial: sum(hash(str(d.suggest(trial))) % 7 for d in spec.space), n_trials=3)
    port = free_port()
    if "--port" in command:  # the README's port is for a person; the test takes one that is free
        at = command.index("--port")
        command = command[:at] + command[at + 2 :]
    server = subprocess.Popen(
        [*command, "--port", str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                studies = get(f"http://127.0.0.1:{port}/api/studies")["study_summaries"]
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "optuna-dashboard did not answer"
                time.sleep(0.3)
        assert [summary["study_name"] for summary in studies] == [spec.name]
        detail = get(f"http://127.0.0.1:{port}/api/studies/{studies[0]['study_id']}")
        assert len(detail["trials"]) == 3 and {p["name"] for p in detail["trials"][0]["params"]} == {
            d.key for d in spec.space
        }
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
