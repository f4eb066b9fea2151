"""Held-out accuracy of a policy: generate one response per problem and grade it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.engine.distributed import Processes, generate_share
from algos.engine.models import ChatFormat, decode_responses, encode_prompts, end_token_ids
from eval.tasks.records import Problem, Verifier


@torch.no_grad()
def responses(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    max_new_tokens: int,
    greedy: bool,
    temperature: float = 1.0,
    chat: ChatFormat | None = None,
    batch_size: int = 128,
    generator: torch.Generator | None = None,
    top_p: float = 1.0,
    processes: Processes | None = None,
) -> tuple[list[str], list[int]]:
    """One response per problem, greedy or sampled at ``temperature`` and nucleus ``top_p``: its text and its
    number of generated tokens (the end token included).

    ``processes``: the processes of a multi-process run, which split every batch of problems and all
    get every text (the same texts as one process's).
    """
    processes = processes or Processes()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    texts: list[str] = []
    tokens: list[int] = []
    for start in range(0, len(problems), batch_size):
        chunk = problems[start : start + batch_size]
        prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in chunk], chat)
        result = generate_share(
            processes,
            model,
            prompt_ids.to(device),
            prompt_mask.to(device),
            processes.share(len(chunk)),
            max_new_tokens=max_new_tokens,
            eos_token_id=end_token_ids(tokenizer, model),
            pad_token_id=tokenizer.pad_token_id,
            temperature=temperature,
            top_p=top_p,
            greedy=greedy,
            generator=generator,
        )
        texts += processes.gather(decode_responses(tokenizer, result.response_ids, result.lengths))
        tokens += processes.gather(result.lengths.tolist())
    model.train(was_training)
    return texts, tokens


def accuracy(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    verifier: Verifier,
    max_new_tokens: int,
    greedy: bool,
    temperature: float = 1.0,
    chat: ChatFormat | None = None,
    batch_size: int = 128,
    generator: torch.Generator | None = None,
    processes: Processes | None = None,
) -> float:
    """Fraction of ``problems`` answered correctly: greedy decoding, or one sample at ``temperature``."""
    texts, _ = responses(
        model,
        tokenizer,
        problems,
        max_new_tokens,
        greedy,
        temperature,
        chat,
        batch_size,
        generator,
        processes=processes,
    )
    return share_correct(texts, problems, verifier)


def share_correct(texts: Sequence[str], problems: Sequence[Problem], verifier: Verifier) -> float:
    """Fraction of ``texts`` that ``verifier`` accepts as answers to the matching ``problems``."""
    return sum(verifier(text, p.answer) for text, p in zip(texts, problems, strict=True)) / len(problems)
