"""Engine choice, and the vLLM engine's translation of a protocol, checked against a stand-in vllm module.

The stand-in records what the engine hands to vLLM; real vLLM needs a CUDA GPU and is not installed here.
"""

import importlib.machinery
import json
import sys
import types

import pytest
import torch

from algos.config.schema import ModelConfig
from algos.engine.models import encode_prompts, load_tokenizer
from eval.run import engines
from eval.run.engines import choose_backend, load_engine
from eval.run.evaluate import PROTOCOL_FILE, default_protocol, evaluate
from eval.tasks.records import Problem


def test_auto_is_hf_without_vllm_and_an_impossible_vllm_says_why(monkeypatch):
    monkeypatch.setattr(engines, "vllm_missing", lambda: "no CUDA GPU is visible")
    assert choose_backend("auto") == "hf" and choose_backend("hf") == "hf"
    with pytest.raises(ValueError, match="backend 'vllm' cannot run: no CUDA GPU is visible"):
        choose_backend("vllm")
    with pytest.raises(ValueError, match="valid backends: auto, hf, vllm"):
        choose_backend("onnx")
    monkeypatch.setattr(engines, "vllm_missing", lambda: None)
    assert choose_backend("auto") == "vllm"


def test_vllm_missing_names_the_package_or_the_gpu(monkeypatch):
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: None)
    assert "not installed" in engines.vllm_missing()
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert engines.vllm_missing() == "no CUDA GPU is visible"


@pytest.fixture()
def fake_vllm(monkeypatch):
    """A vllm module whose LLM answers each request with its prompt length and records every call."""
    calls = {"llm": [], "generate": []}

    class SamplingParams:
        def __init__(self, **kwargs):
            self.__dict__.update(kwargs)

    class LLM:
        def __init__(self, **kwargs):
            calls["llm"].append(kwargs)

        def generate(self, prompts, params, use_tqdm=True):
            calls["generate"].append((prompts, params))
            return [
                types.SimpleNamespace(
                    outputs=[
                        types.SimpleNamespace(text=f"answer {len(p['prompt_token_ids'])}", token_ids=[5, 6, 0][: i + 1])
                    ]
                )
                for i, p in enumerate(prompts)
            ]

    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.__version__ = "0.0-stand-in"
    module.LLM, module.SamplingParams = LLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return calls


def test_vllm_engine_gets_the_hf_prompt_ids_and_the_protocol_decoding(fake_vllm, tiny_base):
    engine = load_engine(str(tiny_base), "auto", max_new_tokens=12, temperature=0.9, top_p=0.7)
    assert (engine.name, engine.version, engine.device) == ("vllm", "0.0-stand-in", "cuda")
    problems = [
        Problem(id="a", prompt="1 + 2 = ?", answer="3"),
        Problem(id="b", prompt="4 * 5 = ? - 1 = ?", answer="19"),
    ]

    steps = []
    greedy = engine.generate(problems, True, None, steps.append)
    sampled = engine.generate(problems, False, 7, steps.append)
    assert steps == [12, 12]  # one batch each: its max_new_tokens decode steps

    tokenizer = load_tokenizer(ModelConfig(name_or_path=str(tiny_base)))
    ids, mask = encode_prompts(tokenizer, [p.prompt for p in problems], chat=None)
    expected = [row[keep.bool()].tolist() for row, keep in zip(ids, mask, strict=True)]
    assert greedy == sampled == ([f"answer {len(row)}" for row in expected], [1, 2])
    (greedy_prompts, greedy_params), (_, sampled_params) = fake_vllm["generate"]
    assert [p["prompt_token_ids"] for p in greedy_prompts] == expected  # unpadded, same encoding as hf
    assert all(p.temperature == 0.0 and p.seed is None and p.max_tokens == 12 for p in greedy_params)
    assert [(p.temperature, p.top_p, p.seed) for p in sampled_params] == [(0.9, 0.7, 7), (0.9, 0.7, 8)]
    assert fake_vllm["llm"] == [{"model": str(tiny_base), "tokenizer": str(tiny_base)}]


def test_the_engine_is_written_into_the_protocol(fake_vllm, tiny_base, tmp_path):
    protocol = default_protocol("chain", limit=2, samples=2, max_new_tokens=8)
    evaluate(str(tiny_base), protocol, tmp_path / "vllm", backend="auto")
    written = json.loads((tmp_path / "vllm" / PROTOCOL_FILE).read_text())
    assert written["engine"] == {"name": "vllm", "version": "0.0-stand-in"}
    assert written["hardware"]["device"] == "cuda"
    evaluate(str(tiny_base), protocol, tmp_path / "hf", device="cpu", backend="hf")
    assert json.loads((tmp_path / "hf" / PROTOCOL_FILE).read_text())["engine"]["name"] == "hf"
