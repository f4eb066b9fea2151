"""The checks a workflow runs before its first job: each refusal one line naming the setting and the reason. The real
stores and SLURM are in tests/test_shared_stores.py (root); here servers that refuse, ports nobody answers on and
SLURM commands that answer as SLURM does."""

import http.server
import socket
import stat
import threading

import pytest

from algos.campaign.preflight import check_database, check_slurm, check_tracking, resource_values
from algos.config.presets import ConfigError
from tests.requirements import require_extra


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def refusing_server():
    """An HTTP server answering every request with 403, as a proxy in front of a tracking server might."""

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_error(403, "Forbidden")

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_tracking_server_that_does_not_answer_is_named_with_its_setting():
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConfigError) as raised:
        check_tracking(uri, "workflow config tracking.uri")
    message = str(raised.value)
    assert message.startswith(f"workflow config tracking.uri: no MLflow tracking server answers at {uri} (")
    assert "Connection refused" in message and "\n" not in message


def test_a_server_that_refuses_mlflow_requests_is_reported_with_its_status(refusing_server):
    with pytest.raises(
        ConfigError, match=r"^MLFLOW_TRACKING_URI: the server at .* refused an MLflow request \(HTTP 403"
    ):
        check_tracking(refusing_server, "MLFLOW_TRACKING_URI")


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "file:///tmp/mlruns", "mlruns"])
def test_local_stores_need_no_check(uri):
    check_tracking(uri, "tracking.uri")


def test_a_database_that_refuses_hides_the_password_and_gives_the_drivers_reason():
    require_extra("cluster", module="psycopg2")
    url = f"postgresql://harness:secret-word@127.0.0.1:{free_port()}/optuna"
    with pytest.raises(ConfigError) as raised:
        check_database(url, "workflow config sweeps.storage")
    message = str(raised.value)
    assert message.startswith("workflow config sweeps.storage: postgresql://harness:***@127.0.0.1:")
    assert "refused the connection" in message and "Connection refused" in message
    assert "secret-word" not in message and "\n" not in message


def test_a_database_url_without_its_driver_or_not_a_url_says_so():
    with pytest.raises(ConfigError, match=r"mysql://u:\*\*\*@db/x needs a database driver that is not installed"):
        check_database("mysql://u:p@db/x", "sweeps.storage")
    with pytest.raises(ConfigError, match=r"^sweeps.storage: 'not a url' is not a database URL"):
        check_database("not a url", "sweeps.storage")
    check_database("sqlite:///optuna.db", "sweeps.storage")  # a local file: nothing to reach


def test_resource_assignments_read_as_snakemake_writes_them():
    given = ["tmpdir=system_tmpdir", "slurm_account='lab'", 'slurm_partition="gpu"', "mem_mb=4000"]
    assert resource_values(given) == {
        "tmpdir": "system_tmpdir",
        "slurm_account": "lab",
        "slurm_partition": "gpu",
        "mem_mb": "4000",
    }


def fake_slurm(folder, monkeypatch, sbatch_error: str, partitions: str, accounts: str) -> None:
    """sbatch, sinfo and sacctmgr on PATH answering as a SLURM whose sbatch --test-only refuses with sbatch_error."""
    commands = {
        "sbatch": f"echo '{sbatch_error}' >&2; exit 1" if sbatch_error else "echo 'sbatch: Job 1 to start' >&2",
        "sinfo": f"printf '{partitions}'",
        "sacctmgr": f"printf '{accounts}'",
    }
    for name, body in commands.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")


def test_slurm_refusing_a_partition_names_it_and_the_partitions_there(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, "allocation failure: Invalid partition name specified", "main\\ngpu\\n", "")
    with pytest.raises(ConfigError) as raised:
        check_slurm({"slurm_account": "lab", "slurm_partition": "cpu"}, "SLURM resources")
    assert str(raised.value) == (
        "SLURM resources: slurm_partition 'cpu' is refused by SLURM (Invalid partition name specified); "
        "partitions here: main, gpu"
    )


def test_slurm_refusing_an_account_names_it_and_the_users_accounts(tmp_path, monkeypatch):
    refusal = "allocation failure: Invalid account or account/partition combination specified"
    fake_slurm(tmp_path, monkeypatch, refusal, "main\\n", "lab\\nteaching\\n")
    with pytest.raises(ConfigError) as raised:
        check_slurm({"slurm_account": "labb", "slurm_partition": "main"}, "SLURM resources")
    message = str(raised.value)
    assert message.startswith("SLURM resources: slurm_account 'labb' is refused by SLURM (Invalid account or")
    assert message.endswith(": lab, teaching")


def test_slurm_accepting_the_job_or_no_slurm_resources_pass(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, "", "main\\n", "lab\\n")
    check_slurm({"slurm_account": "lab", "slurm_partition": "main"}, "SLURM resources")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    check_slurm({"mem_mb": "4000"}, "SLURM resources")  # nothing to submit with: no sbatch needed
    with pytest.raises(ConfigError, match="sbatch, which is not on PATH"):
        check_slurm({"slurm_partition": "main"}, "SLURM resources")
