"""What a campaign's jobs will reach, checked before the first job starts: the MLflow tracking store, the sweeps'
Optuna storage and, under the SLURM executor, the account and partition jobs are submitted with.

On a cluster these are settings nobody tries until a job runs: a tracking server that is down, a database password
mistyped, a partition the cluster does not have. Each check raises a ConfigError of one line naming the setting and
what was refused; the workflow stops on it with exit status 2 before it submits anything (the Snakefile's
``onstart``). Local stores (a SQLite file, the journal file) need no check.
"""

from __future__ import annotations

import getpass
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping

from algos.config.presets import ConfigError

TIMEOUT_SECONDS = 10
LOCAL_SCHEMES = ("sqlite", "file", "")
"""Stores on this machine's file system: nothing to reach."""
SLURM_RESOURCES = ("slurm_account", "slurm_partition")


def check_tracking(uri: str, setting: str) -> None:
    """A tracking server answers at ``uri`` as an MLflow server, or the database ``uri`` names accepts a connection."""
    scheme = uri.split(":", 1)[0].lower() if "://" in uri else ""
    if scheme in ("http", "https"):
        _check_mlflow_server(uri.rstrip("/"), setting)
    elif scheme not in LOCAL_SCHEMES and not scheme.startswith("databricks"):
        check_database(uri, setting)


def _check_mlflow_server(uri: str, setting: str) -> None:
    probe = f"{uri}/api/2.0/mlflow/experiments/search?max_results=1"
    try:
        with urllib.request.urlopen(probe, timeout=TIMEOUT_SECONDS) as response:
            response.read()
    except urllib.error.HTTPError as error:
        raise ConfigError(
            f"{setting}: the server at {uri} refused an MLflow request (HTTP {error.code} {error.reason}); is it an "
            "MLflow tracking server this user may write to?"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ConfigError(
            f"{setting}: no MLflow tracking server answers at {uri} ({reason}); start it (e.g. "
            "experiments/cluster/shared_stores.sh start) or correct the setting"
        ) from None


def check_database(url: str, setting: str) -> None:
    """A SQLAlchemy database URL (an Optuna storage, an MLflow backend store) accepts a connection and a query."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
    from sqlalchemy.pool import NullPool

    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ConfigError(
            f"{setting}: '{url}' is not a database URL (dialect://user:password@host:port/database)"
        ) from None
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite":
        return
    timeout = {"connect_timeout": TIMEOUT_SECONDS} if parsed.get_backend_name() in ("postgresql", "mysql") else {}
    try:
        engine = create_engine(parsed, connect_args=timeout, poolclass=NullPool)
    except (NoSuchModuleError, ModuleNotFoundError) as error:
        raise ConfigError(
            f"{setting}: {shown} needs a database driver that is not installed ({error}); for PostgreSQL "
            "pip install -e '.[cluster]'"
        ) from None
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
    except SQLAlchemyError as error:
        raise ConfigError(f"{setting}: {shown} refused the connection: {_first_reason(error)}") from None
    finally:
        engine.dispose()


def _first_reason(error: Exception) -> str:
    """The driver's own words, on one line (psycopg2 puts the server's reason after the address it tried)."""
    text = str(getattr(error, "orig", None) or error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = next((line for line in lines if "FATAL:" in line), lines[0] if lines else type(error).__name__)
    return re.sub(r"\s+", " ", reason.split("FATAL:", 1)[-1]).strip()


def resource_values(assignments: Iterable[str]) -> dict[str, str]:
    """``name=value`` resource assignments (Snakemake's ``--default-resources``) as a mapping, quotes removed."""
    values = {}
    for assignment in assignments:
        name, _, value = assignment.partition("=")
        values[name.strip()] = value.strip().strip("'\"")
    return values


def check_slurm(resources: Mapping[str, str], setting: str) -> None:
    """SLURM accepts a job with the account and partition in ``resources`` (``sbatch --test-only``, nothing queued)."""
    account, partition = (resources.get(name) for name in SLURM_RESOURCES)
    if not (account or partition):
        return
    if shutil.which("sbatch") is None:
        raise ConfigError(f"{setting}: the SLURM executor submits with sbatch, which is not on PATH here")
    command = ["sbatch", "--test-only", "--time=1", "--wrap=true"]
    command += [f"--account={account}"] * bool(account) + [f"--partition={partition}"] * bool(partition)
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if result.returncode == 0:
        return
    reason = _sbatch_reason(result.stderr)
    partitions = _listed(["sinfo", "-h", "-o", "%R"])
    if partition and partitions and partition not in partitions:
        raise ConfigError(
            f"{setting}: slurm_partition '{partition}' is refused by SLURM ({reason}); partitions here: "
            f"{', '.join(partitions)}"
        )
    if account:
        user = getpass.getuser()
        accounts = _listed(["sacctmgr", "-n", "-P", "list", "associations", f"user={user}", "format=account"])
        known = f"; accounts of user {user}: {', '.join(accounts)}" if accounts else ""
        raise ConfigError(f"{setting}: slurm_account '{account}' is refused by SLURM ({reason}){known}")
    raise ConfigError(f"{setting}: SLURM refuses a job here ({reason})")


def _sbatch_reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "no reason given"
    return re.sub(r"^(sbatch: error: |allocation failure: )", "", last)


def _listed(command: list[str]) -> list[str]:
    """The distinct non-empty lines a SLURM query prints ([] where it fails)."""
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return []
    if result.returncode != 0:
        return []
    return list(dict.fromkeys(line.strip() for line in result.stdout.splitlines() if line.strip()))
