"""Inference engines that turn benchmark prompts into response texts.

``hf`` (the default) is the harness's own batched sampler over a Hugging Face model; ``vllm`` runs
the same protocol through vLLM when the package is installed and a CUDA GPU is present (install
the ``vllm`` extra). ``auto`` picks vLLM where it can run and HF elsewhere. Both encode prompts
with the same tokenizer call (chat template included), stop at EOS, decode without special tokens,
and seed sampled responses from the protocol's seed; the engine's name and version go into the
protocol written beside every score, because scores move between engines and engine versions.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata

import torch

from algos.config.schema import ModelConfig
from algos.engine.accuracy import PROMPTS_PER_BATCH, responses
from algos.engine.models import ChatFormat, chat_format, encode_prompts, load_policy, load_tokenizer
from eval.tasks.records import Problem

BACKENDS = ("auto", "hf", "vllm")

Progress = Callable[[int], None]
"""Told of generation's progress in decode steps: :func:`generation_steps` of them for a generate call in all."""
Generate = Callable[[Sequence[Problem], bool, "int | None", Progress], tuple[list[str], list[int]]]
"""(problems, greedy, seed, progress) -> per problem, one response's text and its number of generated tokens; seed
is None for greedy decoding."""


def generation_steps(problems: int, max_new_tokens: int) -> int:
    """The decode steps a generate call over ``problems`` problems reports: ``max_new_tokens`` per batch."""
    return -(-problems // PROMPTS_PER_BATCH) * max_new_tokens


@dataclass(frozen=True)
class Engine:
    """A loaded model behind one generate function, and what to record about it."""

    name: str
    version: str
    device: str
    chat: ChatFormat | None
    generate: Generate


def vllm_missing() -> str | None:
    """Why vLLM cannot run here (None when it can)."""
    if importlib.util.find_spec("vllm") is None:
        return "the vllm package is not installed (pip install -e '.[vllm]')"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible"
    return None


def choose_backend(requested: str) -> str:
    """The engine that runs: ``auto`` becomes vllm where it can run, else hf; an impossible ``vllm`` is an error."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown backend '{requested}'; valid backends: {', '.join(BACKENDS)}")
    missing = vllm_missing()
    if requested == "auto":
        return "hf" if missing else "vllm"
    if requested == "vllm" and missing:
        raise ValueError(f"backend 'vllm' cannot run: {missing}; use backend 'hf' or 'auto'")
    return requested


def load_engine(
    model: str,
    backend: str,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    chat_template: str = "auto",
    device: str = "auto",
    system_prompt: str | None = None,
) -> Engine:
    """``model`` (local directory or hub id) loaded into the chosen engine with the protocol's decoding settings."""
    model_cfg = ModelConfig(name_or_path=model, chat_template=chat_template, system_prompt=system_prompt)
    tokenizer = load_tokenizer(model_cfg)
    chat = chat_format(model_cfg, tokenizer)
    if choose_backend(backend) == "vllm":
        return _vllm_engine(model, tokenizer, chat, max_new_tokens, temperature, top_p)
    target = torch.device(
        "cuda" if device == "auto" and torch.cuda.is_available() else "cpu" if device == "auto" else device
    )
    policy = load_policy(model_cfg).to(target)

    def generate(
        problems: Sequence[Problem], greedy: bool, seed: int | None, progress: Progress
    ) -> tuple[list[str], list[int]]:
        return responses(
            policy,
            tokenizer,
            problems,
            max_new_tokens,
            greedy=greedy,
            temperature=temperature,
            top_p=top_p,
            chat=chat,
            generator=None if seed is None else torch.Generator().manual_seed(seed),
            on_step=progress,
        )

    return Engine("hf", metadata.version("transformers"), str(target), chat, generate)


def _vllm_engine(
    model, tokenizer, chat: ChatFormat | None, max_new_tokens: int, temperature: float, top_p: float
) -> Engine:
    import vllm

    llm = vllm.LLM(model=model, tokenizer=model)

    def generate(
        problems: Sequence[Problem], greedy: bool, seed: int | None, progress: Progress
    ) -> tuple[list[str], list[int]]:
        ids, mask = encode_prompts(tokenizer, [p.prompt for p in problems], chat)  # (N, T_prompt), left-padded
        prompts = [{"prompt_token_ids": row[keep.bool()].tolist()} for row, keep in zip(ids, mask, strict=True)]
        # One seed per request (seed + index), so each sample is reproducible whatever vLLM batches together.
        params = [
            vllm.SamplingParams(
                n=1,
                temperature=0.0 if greedy else temperature,
                top_p=1.0 if greedy else top_p,
                max_tokens=max_new_tokens,
                seed=None if seed is None else seed + index,
                skip_special_tokens=True,
            )
            for index in range(len(prompts))
        ]
        outputs = llm.generate(prompts, params, use_tqdm=False)
        progress(generation_steps(len(problems), max_new_tokens))
        return [output.outputs[0].text for output in outputs], [len(output.outputs[0].token_ids) for output in outputs]

    return Engine("vllm", vllm.__version__, "cuda", chat, generate)
