"""What a test needs beyond the core install, and what happens where it is missing: a skip that names it, or a
failure where the environment says it is there. CI sets REQUIRE_EXTRAS, REQUIRE_BENCHMARKS, REQUIRE_SLURM,
REQUIRE_POSTGRES (and the older REQUIRE_* of the models, peers, sandbox and browser) for everything it installs,
so a broken install step fails instead of skipping."""

import importlib.util
import os
import shutil
from typing import NoReturn

import pytest


def unavailable(reason: str, requirement: str) -> NoReturn:
    """Skip the test, or fail it where the environment variable ``requirement`` is 1."""
    if os.environ.get(requirement) == "1":
        pytest.fail(f"{requirement}=1 but {reason}")
    pytest.skip(f"{reason} ({requirement}=1 makes this a failure)")


def _missing(extra: str, module: str | None, command: str | None) -> str | None:
    if module is not None and importlib.util.find_spec(module) is None:
        return f"needs the '{extra}' extra (no module {module})"
    if command is not None and shutil.which(command) is None:
        return f"needs the '{extra}' extra (no command {command})"
    return None


def require_extra(extra: str, *, module: str | None = None, command: str | None = None) -> None:
    """Inside a test or fixture: skip where the optional ``extra`` is not installed (REQUIRE_EXTRAS=1: fail)."""
    reason = _missing(extra, module, command)
    if reason:
        unavailable(reason, "REQUIRE_EXTRAS")


def needs_extra(extra: str, *, module: str | None = None, command: str | None = None) -> pytest.MarkDecorator:
    """A test module's mark: skip it where ``extra`` is not installed; under REQUIRE_EXTRAS=1 collecting it fails."""
    reason = _missing(extra, module, command)
    if reason and os.environ.get("REQUIRE_EXTRAS") == "1":
        raise RuntimeError(f"REQUIRE_EXTRAS=1 but this test module {reason}")
    return pytest.mark.skipif(reason is not None, reason=f"{reason} (REQUIRE_EXTRAS=1 makes this a failure)")
