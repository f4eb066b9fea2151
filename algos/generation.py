"""Batched autoregressive sampling with a KV cache over left-padded prompts.

Prompts are left-padded so every row's next token is written at the same column; position ids
count real tokens only (``cumsum(mask) - 1``), so a padded prompt is encoded exactly as it would be
alone. Sampling draws from an explicit ``torch.Generator``: the same generator state gives the same
responses.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache, PreTrainedModel


@dataclass(frozen=True)
class Generation:
    """Responses to N prompts.

    response_ids: (N, T) right-padded with the pad id after the end. response_mask: (N, T) 1 on
    real response tokens, the end-of-sequence token included. truncated: (N,) bool, no end token
    within the budget.
    """

    response_ids: torch.Tensor
    response_mask: torch.Tensor
    truncated: torch.Tensor

    @property
    def lengths(self) -> torch.Tensor:
        """Response lengths in tokens, (N,)."""
        return self.response_mask.sum(dim=-1)


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counting real tokens only: (N, T) mask -> (N, T), 0 on left padding."""
    return (attention_mask.long().cumsum(dim=-1) - 1).clamp(min=0)


def sample_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, generator: torch.Generator | None
) -> torch.Tensor:
    """One token per row from softmax(logits / temperature) restricted to the top-p nucleus: (N, V) -> (N,)."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        # Keep the smallest prefix whose mass reaches top_p (the first token always survives).
        outside = sorted_probs.cumsum(dim=-1) - sorted_probs >= top_p
        sorted_probs = sorted_probs.masked_fill(outside, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@torch.no_grad()
def generate(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    max_new_tokens: int,
    eos_token_id: int,
    pad_token_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    generator: torch.Generator | None = None,
) -> Generation:
    """Sample (or greedily decode) up to ``max_new_tokens`` per prompt, stopping rows at their end token.

    prompt_ids, prompt_mask: (N, T_prompt), left-padded.
    """
    rows = prompt_ids.shape[0]
    cache = DynamicCache(config=model.config)
    attention = prompt_mask.long()
    positions = position_ids(attention)
    output = model(
        input_ids=prompt_ids, attention_mask=attention, position_ids=positions, past_key_values=cache, logits_to_keep=1
    )
    next_position = positions[:, -1:] + 1  # (N, 1)
    finished = torch.zeros(rows, dtype=torch.bool, device=prompt_ids.device)
    tokens, alive = [], []
    for step in range(max_new_tokens):
        logits = output.logits[:, -1]  # (N, V)
        token = logits.argmax(dim=-1) if greedy else sample_tokens(logits, temperature, top_p, generator)
        token = token.masked_fill(finished, pad_token_id)
        tokens.append(token)
        alive.append(~finished)
        finished = finished | (token == eos_token_id)
        if finished.all() or step == max_new_tokens - 1:
            break
        attention = torch.cat([attention, alive[-1].long().unsqueeze(-1)], dim=-1)
        output = model(
            input_ids=token.unsqueeze(-1), attention_mask=attention, position_ids=next_position, past_key_values=cache
        )
        next_position = next_position + 1
    return Generation(
        response_ids=torch.stack(tokens, dim=-1),
        response_mask=torch.stack(alive, dim=-1).long(),
        truncated=~finished,
    )
