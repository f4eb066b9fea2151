"""Sampling and grading: the one path from problems to graded responses.

Prompts go through the model's chat format, each is repeated G times group by group (row i·G + j is
sample j of prompt i), the rows are generated greedily or sampled (optionally shared over the
processes of a run), decoded from exactly their generated tokens and graded by a verifier. Held-out
accuracy, the rollout and the task properties all sample through here; each keeps its own batching,
since a generation batch's size sets its padding widths and its draws from the random stream.

A verifier that returns None cannot score a response: it counts as incorrect and is marked
unscorable (:class:`Verdicts`), so that a reward can leave it out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from algos.engine.distributed import Processes, generate_share
from algos.engine.keyed_draws import DrawKey, KeyedDraws, row_keys
from algos.engine.models import ChatFormat, decode_responses, encode_prompts, end_token_ids
from algos.engine.sequences import SequenceBatch
from algos.engine.static_decoding import generate_static, resolve_engine
from eval.tasks.records import Problem, Verifier


@dataclass(frozen=True)
class Responses:
    """This process's rows of one generation batch, group by group: N = (its prompts) · G.

    sequences: prompts (N, T_prompt) left-padded and responses (N, T) right-padded, the end token in the
    response mask. truncated: (N,) bool, no end token within the budget. texts: each response decoded;
    answers: the reference answer of each row's problem. logprobs: (N, T) the sampler's log-probability of
    each response token, when asked for (:func:`~algos.engine.generation.generate`'s ``with_logprobs``).
    """

    sequences: SequenceBatch
    truncated: torch.Tensor
    texts: list[str]
    answers: list[str]
    logprobs: torch.Tensor | None = None

    @property
    def lengths(self) -> torch.Tensor:
        """Response lengths in tokens (the end token included), (N,)."""
        return self.sequences.response_mask.sum(dim=-1)


@dataclass(frozen=True)
class Verdicts:
    """A verifier's verdicts on N responses: correct (N,) bool, where it accepts the answer; scorable (N,) bool,
    where it gave a verdict at all (an unscorable response is not correct)."""

    correct: torch.Tensor
    scorable: torch.Tensor


def grade(
    verifier: Verifier, texts: Sequence[str], answers: Sequence[str], device: torch.device | None = None
) -> Verdicts:
    """``verifier``'s verdict on each of ``texts`` against its answer, as tensors on ``device``.

    A None verdict (the verifier cannot score the response) is incorrect and unscorable.
    """
    verdicts = [verifier(text, answer) for text, answer in zip(texts, answers, strict=True)]
    return Verdicts(
        correct=torch.tensor([bool(v) for v in verdicts], device=device),
        scorable=torch.tensor([v is not None for v in verdicts], device=device),
    )


@torch.no_grad()
def sample(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    max_new_tokens: int,
    *,
    group_size: int = 1,
    chat: ChatFormat | None = None,
    greedy: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    generator: torch.Generator | DrawKey | None = None,
    processes: Processes | None = None,
    with_logprobs: bool = False,
    on_step: Callable[[int], None] | None = None,
    engine: str = "auto",
) -> Responses:
    """``group_size`` responses to each of ``problems`` in one generation batch: this process's share of the groups.

    Greedy, or sampled at ``temperature`` and nucleus ``top_p`` from ``generator``: a stream, or a
    :class:`~algos.engine.keyed_draws.DrawKey` whose draws are keyed by (its seed, problem id, sample, position,
    token), the same for a problem wherever it stands in the batch; ``chat``: how prompts go
    through the chat template (None: raw). ``processes`` split the batch into contiguous shares of whole
    groups; every process draws the random numbers of the whole batch, so each row gets the tokens it
    would get in one process (:func:`~algos.engine.distributed.generate_share`). The model runs in eval
    mode and is left in the mode it was in. ``with_logprobs``: also keep the sampler's log-probability of
    every response token. ``on_step``: told of the decode steps (see :func:`~algos.engine.generation.generate`).
    ``engine``: ``rollout.engine``, the decoding loop (:func:`~algos.engine.static_decoding.resolve_engine`); both
    give the same tokens.
    """
    processes = processes or Processes()
    device = next(model.parameters()).device
    prompt_ids, prompt_mask = encode_prompts(tokenizer, [p.prompt for p in problems], chat)  # (P, T_prompt)
    prompt_ids = prompt_ids.repeat_interleave(group_size, dim=0).to(device)  # (P·G, T_prompt), group by group
    prompt_mask = prompt_mask.repeat_interleave(group_size, dim=0).to(device)
    mine = processes.share(len(problems))  # this process's groups
    rows = slice(mine.start * group_size, mine.stop * group_size)
    was_training = model.training
    model.eval()
    if isinstance(generator, DrawKey):
        generator = KeyedDraws(row_keys(generator, [p.id for p in problems], group_size), device)
    options = {
        "max_new_tokens": max_new_tokens,
        "eos_token_id": end_token_ids(tokenizer, model),
        "pad_token_id": tokenizer.pad_token_id,
        "temperature": temperature,
        "top_p": top_p,
        "greedy": greedy,
        "generator": generator,
        "with_logprobs": with_logprobs,
        "on_step": on_step,
    }
    chosen = resolve_engine(engine, model, processes.count)
    if chosen != "eager":
        result = generate_static(model, prompt_ids, prompt_mask, compiled=chosen == "compiled", **options)
    else:
        result = generate_share(processes, model, prompt_ids, prompt_mask, rows, **options)
    model.train(was_training)
    return Responses(
        sequences=SequenceBatch(prompt_ids[rows], prompt_mask[rows], result.response_ids, result.response_mask),
        truncated=result.truncated,
        texts=decode_responses(tokenizer, result.response_ids, result.lengths),
        answers=[p.answer for p in problems[mine] for _ in range(group_size)],
        logprobs=result.logprobs,
    )


def sample_batches(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    problems: Sequence[Problem],
    max_new_tokens: int,
    *,
    prompts_per_batch: int,
    **options: Any,
) -> Iterator[Responses]:
    """:func:`sample` over consecutive batches of ``prompts_per_batch`` problems, one :class:`Responses` per batch.

    ``options`` are :func:`sample`'s; a ``generator`` goes on from one batch to the next.
    """
    for start in range(0, len(problems), prompts_per_batch):
        yield sample(model, tokenizer, problems[start : start + prompts_per_batch], max_new_tokens, **options)
