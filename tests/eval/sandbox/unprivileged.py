"""Running a command as an unprivileged user (uid and gid 65534) from a root test process."""

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
NOBODY = 65534


AS_NOBODY = [
    "setpriv",
    "--reuid",
    str(NOBODY),
    "--regid",
    str(NOBODY),
    "--clear-groups",
    "env",
    "-i",
    "PATH=/usr/bin:/bin",
]
"""The prefix that runs a command as uid and gid 65534 with no supplementary groups and an empty environment."""


def unprivileged(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``command`` run under :data:`AS_NOBODY`."""
    return subprocess.run([*AS_NOBODY, *command], capture_output=True, text=True, **kwargs)


def unprivileged_python() -> list[str]:
    """An interpreter of this version that uid 65534 can run, with this project and its packages importable."""
    path = os.pathsep.join([str(PROJECT), *site.getsitepackages()])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for interpreter in (os.path.realpath(sys.executable), shutil.which(version, path="/usr/bin:/usr/local/bin")):
        if (
            interpreter
            and unprivileged([f"PYTHONPATH={path}", interpreter, "-c", "import eval.sandbox.host"]).returncode == 0
        ):
            return [f"PYTHONPATH={path}", interpreter]
    reason = f"uid {NOBODY} can run no {version} that imports this project from {PROJECT}"
    if os.environ.get("REQUIRE_SANDBOX") == "1":
        pytest.fail(f"REQUIRE_SANDBOX=1 but {reason}")
    pytest.skip(reason)
