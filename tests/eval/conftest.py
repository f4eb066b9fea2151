import os
from pathlib import Path

import pytest

from eval.benchmarks.loaders import BENCHMARKS_DIR_ENV


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    """The offline benchmark files named by $RL_BENCHMARKS_DIR (CI sets it); tests needing them skip without it."""
    configured = os.environ.get(BENCHMARKS_DIR_ENV)
    if not configured:
        pytest.skip(f"set {BENCHMARKS_DIR_ENV} to the offline benchmark files")
    path = Path(configured)
    if not path.is_dir():
        pytest.fail(f"{BENCHMARKS_DIR_ENV}={configured} is not a directory")
    return path


@pytest.fixture(scope="session")
def strong_isolation():
    """Bubblewrap isolation; skips where bubblewrap cannot run, unless REQUIRE_SANDBOX=1 (CI installs it)."""
    from eval.sandbox.host import detect_isolation

    isolation = detect_isolation()
    if not isolation.strong:
        if os.environ.get("REQUIRE_SANDBOX") == "1":
            pytest.fail(f"REQUIRE_SANDBOX=1 but {isolation.description}")
        pytest.skip(isolation.description)
    return isolation
