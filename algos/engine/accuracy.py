"""Held-out accuracy of a policy: one response per problem, graded by the task's verifier."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.engine.distributed import Processes
from algos.engine.keyed_draws import DrawKey
from algos.engine.models import ChatFormat
from algos.engine.sampling import grade, sample_batches
from eval.tasks.records import Problem, Verifier

PROMPTS_PER_BATCH = 128
"""Problems :func:`responses` generates together by default."""


def responses(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    max_new_tokens: int,
    greedy: bool,
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    chat: ChatFormat | None = None,
    generator: torch.Generator | DrawKey | None = None,
    processes: Processes | None = None,
    prompts_per_batch: int = PROMPTS_PER_BATCH,
    on_step: Callable[[int], None] | None = None,
    engine: str = "auto",
) -> tuple[list[str], list[int]]:
    """One response per problem, greedy or sampled at ``temperature`` and nucleus ``top_p``: its text and its
    number of generated tokens (the end token included).

    ``processes``: the processes of a multi-process run, which split every batch of problems and all
    get every text (the same texts as one process's). ``prompts_per_batch``: problems generated together,
    which sets each batch's padding widths and its draws from ``generator``. ``on_step``: told of the decode
    steps, ``max_new_tokens`` a batch (see :func:`~algos.engine.generation.generate`). ``engine``: the decoding
    loop (``rollout.engine``).
    """
    processes = processes or Processes()
    texts: list[str] = []
    tokens: list[int] = []
    for part in sample_batches(
        model,
        tokenizer,
        problems,
        max_new_tokens,
        prompts_per_batch=prompts_per_batch,
        chat=chat,
        greedy=greedy,
        temperature=temperature,
        top_p=top_p,
        generator=generator,
        processes=processes,
        on_step=on_step,
        engine=engine,
    ):
        texts += processes.gather(part.texts)
        tokens += processes.gather(part.lengths.tolist())
    return texts, tokens


def accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    verifier: Verifier,
    max_new_tokens: int,
    greedy: bool,
    *,
    temperature: float = 1.0,
    chat: ChatFormat | None = None,
    generator: torch.Generator | DrawKey | None = None,
    processes: Processes | None = None,
    prompts_per_batch: int = 128,
    engine: str = "auto",
) -> float:
    """Fraction of ``problems`` answered correctly: greedy decoding, or one sample at ``temperature``.

    A response the verifier cannot score (a None verdict) counts as wrong. ``engine``: the decoding loop.
    """
    texts, _ = responses(
        model,
        tokenizer,
        problems,
        max_new_tokens,
        greedy=greedy,
        temperature=temperature,
        chat=chat,
        generator=generator,
        processes=processes,
        prompts_per_batch=prompts_per_batch,
        engine=engine,
    )
    verdicts = grade(verifier, texts, [p.answer for p in problems])
    return int(verdicts.correct.sum()) / len(problems)
