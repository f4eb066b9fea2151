import os
from pathlib import Path

import pytest

from eval.benchmarks import BENCHMARKS_DIR_ENV


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
