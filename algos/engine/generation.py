"""Batched autoregressive sampling with a KV cache over left-padded prompts.

Prompts are left-padded so every row's next token is written at the same column; position ids
count real tokens only (``cumsum(mask) - 1``), so a padded prompt is encoded exactly as it would be
alone. Sampling draws from an explicit ``torch.Generator``: the same generator state gives the same
responses, and the same tokens as ``transformers``' ``generate`` from the same random state. A
prompt repeated in the batch (the G samples of a group) is encoded once and its cache entries are
copied to every row that holds it. A batch may be split over processes (:class:`BatchShard`); each
row still gets the tokens it would get in the whole batch.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache, PreTrainedModel

from algos.core.logprobs import token_logprobs
from algos.engine.keyed_draws import KeyedDraws

Draws = torch.Generator | KeyedDraws
"""Where a sampler's exponentials come from: a stream generator, or draws keyed by their place."""


@dataclass(frozen=True)
class Generation:
    """Responses to N prompts.

    response_ids: (N, T) right-padded with the pad id after the end. response_mask: (N, T) 1 on
    real response tokens, the end-of-sequence token included. truncated: (N,) bool, no end token
    within the budget. logprobs: (N, T) log-probability of each token under the sampling logits divided
    by the temperature (0 after the end), when asked for.
    """

    response_ids: torch.Tensor
    response_mask: torch.Tensor
    truncated: torch.Tensor
    logprobs: torch.Tensor | None = None

    @property
    def lengths(self) -> torch.Tensor:
        """Response lengths in tokens, (N,)."""
        return self.response_mask.sum(dim=-1)


@dataclass(frozen=True)
class BatchShard:
    """The rows one process generates of a batch that several processes generate together.

    offset: the first of its rows in the whole batch; total: rows of the whole batch (all processes);
    all_ended(ended): whether every process's rows have ended, given whether this process's have.
    Each step draws the random numbers of all ``total`` rows and keeps this process's, and the
    loop runs until every process's rows have ended, so the draws are the whole batch's.
    """

    offset: int
    total: int
    all_ended: Callable[[bool], bool]

    def draw_rows(self, probs: torch.Tensor) -> tuple[torch.Tensor, slice]:
        """The whole batch's (total, V) distributions with ``probs`` (N, V) in place, and where they are."""
        mine = slice(self.offset, self.offset + probs.shape[0])
        whole = torch.zeros(self.total, probs.shape[1], dtype=probs.dtype, device=probs.device)
        whole[:, 0] = 1.0  # other processes' rows: any valid distribution (the draws do not depend on it)
        whole[mine] = probs
        return whole, mine


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword ``model``'s forward takes its KV cache by: ``cache`` where the installed transformers renamed
    it, else ``past_key_values`` (``model`` may be wrapped by DDP or peft)."""
    inner = getattr(model, "module", model)
    if hasattr(inner, "get_base_model"):
        inner = inner.get_base_model()
    return _forward_cache_keyword(type(inner))


@functools.cache
def _forward_cache_keyword(model_class: type) -> str:
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counting real tokens only: (N, T) mask -> (N, T), 0 on left padding."""
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows to encode and where each row's prompt is among them.

    prompt_ids, prompt_mask: (N, T_prompt). Returns ``first`` (U,), the first row holding each of the U
    distinct prompts, and ``inverse`` (N,), the index into ``first`` of every row's prompt, so that
    ``prompt_ids[first][inverse]`` equals ``prompt_ids``.
    """
    keys = torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], dim=-1)  # (N, 2 T_prompt)
    _, inverse = torch.unique(keys, dim=0, return_inverse=True)
    rows = torch.arange(len(inverse), device=inverse.device)
    first = torch.full((int(inverse.max()) + 1,), len(inverse), device=inverse.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin"), inverse


def encode_prompts_once(
    model: PreTrainedModel, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, cache: DynamicCache
) -> torch.Tensor:
    """Run the prompts through ``model`` into ``cache``, each distinct prompt once; the last position's logits.

    prompt_ids, prompt_mask: (N, T_prompt), left-padded. Afterwards ``cache`` holds N rows, one per
    prompt row, as if all N had been encoded. Returns logits (N, V) predicting the first response
    token; gradients flow through both the logits and the cache.
    """
    first, inverse = distinct_prompts(prompt_ids, prompt_mask)
    mask = prompt_mask[first].long()
    output = model(
        input_ids=prompt_ids[first],
        attention_mask=mask,
        position_ids=position_ids(mask),
        logits_to_keep=1,
        **{cache_keyword(model): cache},
    )
    cache.batch_select_indices(inverse)
    return output.logits[:, -1][inverse]


def sample_tokens(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    generator: Draws | None,
    shard: BatchShard | None = None,
) -> torch.Tensor:
    """One token per row from softmax(logits / temperature) restricted to the top-p nucleus: (N, V) -> (N,).

    The draw is ``torch.multinomial``'s for one sample, argmax(p / E) with E one exponential draw per (row,
    token), written out because ``multinomial`` first checks its input on the host, a synchronisation with
    the device per call: the same tokens from the same generator state, and the same state afterwards.
    With a ``shard``, the rows are drawn as part of the whole batch: the draws fill every (row, token) of
    the input whatever the probabilities, so the draws of these rows equal their draws in one process's batch.
    With :class:`~algos.engine.keyed_draws.KeyedDraws` each E is a function of its row's key, the position and the
    token (the same race, the same distribution).
    """
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the first token always survives).
        outside = sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p
        sorted_probs = sorted_probs.masked_fill(outside, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    if shard is None:
        return _exponential_race(probs, generator)
    whole, mine = shard.draw_rows(probs)
    return _exponential_race(whole, generator)[mine]


def _exponential_race(probs: torch.Tensor, generator: Draws | None) -> torch.Tensor:
    """One index per row drawn from ``probs`` (N, V), as ``torch.multinomial(probs, 1)`` draws it: (N,)."""
    if isinstance(generator, KeyedDraws):
        return (probs / generator.exponentials(probs)).argmax(dim=-1)
    return (probs / torch.empty_like(probs).exponential_(1, generator=generator)).argmax(dim=-1)


@torch.no_grad()
def generate(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    max_new_tokens: int,
    eos_token_id: int | Sequence[int],
    pad_token_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    generator: Draws | None = None,
    shard: BatchShard | None = None,
    with_logprobs: bool = False,
    on_step: Callable[[int], None] | None = None,
) -> Generation:
    """Sample (or greedily decode) up to ``max_new_tokens`` per prompt, stopping rows at their end token.

    prompt_ids, prompt_mask: (N, T_prompt), left-padded. eos_token_id: the end token, or every token
    that ends a response (see :func:`~algos.engine.models.end_token_ids`); the one that ended a
    response is part of it (in its mask), whatever the pad id. Rows that have ended leave the batch once
    they are a quarter of it, so the forward passes shrink with the live rows. Every step still draws
    one token for each of the N rows (an ended row's draw is replaced by the pad id), so the random
    stream, and with it every live row's tokens, is the same as when all N rows are run to the end.
    With a ``shard`` these N rows are one process's part of a larger batch (see :class:`BatchShard`);
    at least one row then stays in the batch, so every process runs a forward pass at every step.
    ``with_logprobs``: also return each token's log-probability under the logits it was drawn from,
    divided by ``temperature`` (the scoring pass's convention; the nucleus cut-off is not renormalised).
    ``on_step(n)``: told of every decode step (n = 1), and at the end of the steps the batch no longer needed, so a
    call reports ``max_new_tokens`` in all (a progress bar's ticks).
    """
    rows = prompt_ids.shape[0]
    device = prompt_ids.device
    cache = DynamicCache(config=model.config)
    # (A, T_prompt + step) for the A rows in the batch; None while every position is visible
    attention = None if bool(prompt_mask.all()) else prompt_mask.long()
    in_batch = torch.arange(rows, device=device)  # (A,) their row numbers
    batch_logits = encode_prompts_once(model, prompt_ids, prompt_mask, cache)  # (A, V)
    logits = torch.zeros_like(batch_logits)  # (N, V); rows out of the batch keep their last logits
    next_position = position_ids(prompt_mask)[:, -1:] + 1  # (A, 1)
    finished = torch.zeros(rows, dtype=torch.bool, device=device)
    end_ids = torch.as_tensor(eos_token_id, device=device).reshape(-1)  # (E,)
    tokens, alive, logprobs = [], [], []
    for step in range(max_new_tokens):
        logits[in_batch] = batch_logits
        token = logits.argmax(dim=-1) if greedy else sample_tokens(logits, temperature, top_p, generator, shard)
        token = token.masked_fill(finished, pad_token_id)
        tokens.append(token)
        alive.append(~finished)
        if with_logprobs:
            logprobs.append(token_logprobs(logits / temperature, token).masked_fill(finished, 0.0))
        finished = finished | torch.isin(token, end_ids)
        ended_here = bool(finished.all())
        if (shard.all_ended(ended_here) if shard is not None else ended_here) or step == max_new_tokens - 1:
            if on_step is not None:
                on_step(max_new_tokens - step)
            break
        if on_step is not None:
            on_step(1)
        ended = finished[in_batch]  # (A,)
        if 4 * int(ended.sum()) >= len(in_batch):
            keep = (~ended).nonzero().squeeze(-1)
            if keep.numel() == 0:  # this process's rows have ended while others' have not
                keep = torch.zeros(1, dtype=torch.long, device=device)
            cache.batch_select_indices(keep)
            next_position, in_batch = next_position[keep], in_batch[keep]
            attention = attention[keep] if attention is not None else None
        # An ended row's own later positions stay visible to it, as in transformers: they feed only that
        # row's discarded draws, and unpadded prompts then never need a mask.
        if attention is not None:
            attention = torch.cat([attention, attention.new_ones(len(in_batch), 1)], dim=-1)
        batch_logits = model(
            input_ids=token[in_batch].unsqueeze(-1),
            attention_mask=attention,
            position_ids=next_position,
            **{cache_keyword(model): cache},
        ).logits[:, -1]
        next_position = next_position + 1
    return Generation(
        response_ids=torch.stack(tokens, dim=-1),
        response_mask=torch.stack(alive, dim=-1).long(),
        truncated=~finished,
        logprobs=torch.stack(logprobs, dim=-1) if with_logprobs else None,
    )
