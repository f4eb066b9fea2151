"""The stores a cluster's jobs share, for real: PostgreSQL and an MLflow tracking server on it
(experiments/cluster/shared_stores.sh), a one-node SLURM (experiments/cluster/one_node_slurm.sh). A burst of
training jobs logging to the server at once loses nothing, even when the server's workers stall for longer than
its supervisor waits by default; sweep trials submitted as SLURM jobs share one Optuna
study in PostgreSQL, take distinct trial numbers and are pruned by each other's values; a rejected account or
partition, a tracking server that does not answer and a wrong database password each stop the workflow before its
first job. Needs root; REQUIRE_SLURM=1 turns a skip into a failure."""

import contextlib
import json
import signal
import subprocess
import threading
import time

import optuna
import psutil
import pytest

from algos.campaign.tracking_burst import run_burst
from tests.cluster import SLURM_PROFILE, STORES_SETTINGS, campaign_command, slurm_states, submitted_jobs
from tests.ports import free_port
from tests.requirements import needs_extra
from tests.test_pipeline_smoke import ENVIRONMENT, TINY

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("cluster"),  # one worker runs both modules: they start and stop the same services
    needs_extra("workflow", command="snakemake"),
]
BURST_JOBS = 16
STALL_AFTER, STALL_SECONDS = 20.0, 12.0
"""The burst's first 20 s in, every worker of the tracking server stops for 12 s: as a machine that the burst keeps
busy starves them, but longer than the server's supervisor would wait by its own default (5 s)."""
SWEEP = "storage_check"
SMALL_BASE = "--worked-steps 80 --mixed-steps 20 --hidden-size 32 --layers 2 --min-steps 1 --max-steps 3"
"""A base that solves a few of the check sweep's short problems (6 % of its validation split, greedily)."""


def _stall_the_servers_workers(stalled: list[int]) -> None:
    """Stop every worker process of the tracking server for STALL_SECONDS, then let them go on; counts them."""
    server = psutil.Process(int((STORES_SETTINGS.parent / "mlflow.pid").read_text()))
    workers = [child for child in server.children(recursive=True) if "spawn_main" in " ".join(child.cmdline())]
    assert workers, "the tracking server has no worker processes to stall"
    for worker in workers:
        worker.send_signal(signal.SIGSTOP)
    time.sleep(STALL_SECONDS)
    for worker in workers:
        with contextlib.suppress(psutil.NoSuchProcess):  # killed meanwhile: the test names that
            worker.send_signal(signal.SIGCONT)
    stalled.append(len(workers))


def test_a_burst_of_training_jobs_loses_nothing_on_the_tracking_server(store_settings, tiny_base, tmp_path, capsys):
    uri = store_settings["tracking"]["uri"]
    server_log = STORES_SETTINGS.parent / "mlflow.log"
    logged_before = len(server_log.read_text().splitlines())
    stalled = []
    stall = threading.Timer(STALL_AFTER, _stall_the_servers_workers, [stalled])
    stall.start()
    report = run_burst(uri, BURST_JOBS, str(tiny_base), tmp_path, ["task.min_steps=1", "task.max_steps=3"])
    stall.join()
    with capsys.disabled():  # into CI's log: the counts
        print("\nburst:", json.dumps(report))
    killed = [line for line in server_log.read_text().splitlines()[logged_before:] if "died" in line]
    assert stalled and stalled[0] > 0, "the server's workers were not stalled"
    assert killed == [], "the server's supervisor killed stalled workers, and the requests they served"
    assert report["failed_jobs"] == {}
    assert report["runs"] == report["finished"] == {"expected": BURST_JOBS, "logged": BURST_JOBS}
    for counted in ("metric_values", "params", "tags", "artifacts"):
        assert report[counted]["expected"] > 0 and report[counted]["logged"] == report[counted]["expected"], counted
    assert report["lost"] == 0


def test_sweep_trials_as_slurm_jobs_share_one_study_in_postgresql(one_node_slurm, store_settings, tmp_path, capsys):
    storage = store_settings["sweeps"]["storage"]
    if SWEEP in optuna.study.get_all_study_names(storage):
        optuna.delete_study(study_name=SWEEP, storage=storage)  # an earlier run's trials
    config = {
        **TINY,
        **store_settings,
        "base_model": {"args": SMALL_BASE},
        "sweeps": {"specs": [SWEEP], "storage": storage},
    }
    slots = [f"results/sweeps/{SWEEP}/slots/slot{slot}.json" for slot in range(4)]
    submitted = []
    for targets in (slots[:2], ["sweep"]):  # the gentle slots first, then the wrecking ones beside the report
        result = subprocess.run(
            campaign_command(tmp_path, config, SLURM_PROFILE, targets),
            capture_output=True,
            text=True,
            timeout=900,
            env=ENVIRONMENT,
            check=False,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        submitted += submitted_jobs(result.stdout + result.stderr)
    assert len(submitted) == 6  # the base, four trials, the report
    states = slurm_states(submitted)
    with capsys.disabled():  # into CI's log: the jobs as SLURM's accounting saw them
        print("", *(f"sacct: job {job} {states.get(job)}" for job in submitted), sep="\n")
    assert all(states.get(job) == "COMPLETED" for job in submitted), {job: states.get(job) for job in submitted}

    trials = optuna.load_study(study_name=SWEEP, storage=storage).get_trials(deepcopy=False)
    assert sorted(trial.number for trial in trials) == [0, 1, 2, 3]
    records = [json.loads((tmp_path / slot).read_text()) for slot in slots]
    assert sorted(record["trial"] for record in records) == [0, 1, 2, 3]
    by_number = {trial.number: trial for trial in trials}
    for record in records:
        trial = by_number[record["trial"]]
        gentle = record["params"]["optim.lr"] == 1.0e-6
        assert trial.state.name == ("COMPLETE" if gentle else "PRUNED"), record
        if not gentle:  # stopped at its first evaluation, below what the completed trials had there
            assert list(trial.intermediate_values) == [1]
            completed = [t.intermediate_values[1] for t in trials if t.state.name == "COMPLETE"]
            assert trial.intermediate_values[1] < min(completed)
    assert (tmp_path / f"results/sweeps/{SWEEP}/report.html").is_file()

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store_settings["tracking"]["uri"])  # the trials' runs logged to the server
    experiment = client.get_experiment_by_name(f"sweep-{SWEEP}")
    names = {run.info.run_name for run in client.search_runs([experiment.experiment_id], max_results=1000)}
    assert {f"trial{number}" for number in range(4)} <= names


def wrong_password(url: str) -> str:
    credentials, host = url.split("://", 1)[1].rsplit("@", 1)
    return f"postgresql://{credentials.split(':', 1)[0]}:not-the-password@{host}"


@pytest.mark.parametrize(
    "case, setting",
    [
        ("partition", "slurm_partition 'nowhere' is refused by SLURM"),
        ("account", "slurm_account 'nobody-pays' is refused by SLURM"),
        ("tracking", "workflow config tracking.uri: no MLflow tracking server answers at http://127.0.0.1:"),
        ("storage", "workflow config sweeps.storage: postgresql://rl_harness:***@"),
    ],
)
def test_a_setting_the_cluster_refuses_stops_the_workflow_before_any_job(
    one_node_slurm, store_settings, tmp_path, capsys, case, setting
):
    config, resources = {**TINY, **store_settings}, []
    if case in ("partition", "account"):
        resources = ["--set-resources", "base_model:slurm_partition=nowhere"] if case == "partition" else []
        resources = resources or ["--default-resources", "slurm_account=nobody-pays", "slurm_partition=main"]
    if case == "tracking":
        config["tracking"] = {"uri": f"http://127.0.0.1:{free_port()}"}
    if case == "storage":
        config["sweeps"] = {"specs": [SWEEP], "storage": wrong_password(store_settings["sweeps"]["storage"])}
    before = set(slurm_states())
    command = campaign_command(tmp_path, config, [*SLURM_PROFILE, *resources])
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=ENVIRONMENT, check=False)
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1 and setting in errors[0], result.stderr[-2000:]
    with capsys.disabled():  # into CI's log: the message
        print(f"\n{case}: {errors[0]}")
    if case == "storage":
        assert "password authentication failed" in errors[0] and "not-the-password" not in result.stderr
    assert not submitted_jobs(result.stdout + result.stderr) and set(slurm_states()) == before
    assert not (tmp_path / "results").exists()
