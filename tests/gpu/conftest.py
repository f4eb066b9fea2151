"""The GPU suite (``pytest -m gpu``): skipped with its reason where no CUDA device is visible, and an error
there under ``REQUIRE_GPU=1`` (``experiments/gpu/check.sh`` sets it on the GPU machine)."""

import os
from pathlib import Path

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before any CUDA work: deterministic cuBLAS

import pytest
import torch
from accelerate.state import AcceleratorState

SUITE = Path(__file__).parent
NO_CUDA = "no CUDA device is visible: the GPU suite runs on a GPU machine (bash experiments/gpu/check.sh)"


def pytest_collection_modifyitems(config, items):
    ours = [item for item in items if SUITE in item.path.parents]
    if not ours or torch.cuda.is_available():
        return
    if os.environ.get("REQUIRE_GPU") == "1":
        raise pytest.UsageError(f"REQUIRE_GPU=1 but {NO_CUDA}")
    for item in ours:
        item.add_marker(pytest.mark.skip(reason=NO_CUDA))


@pytest.fixture(autouse=True)
def float32_and_fresh_accelerator():
    """Models' own precision, and no accelerate state (its device and precision) left by another test."""
    torch.set_default_dtype(torch.float32)
    AcceleratorState._reset_state(reset_partial_state=True)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
