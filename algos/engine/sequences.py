"""Prompt + response sequences and the forward passes that score them.

A batch joins left-padded prompts (B, T_prompt) and right-padded responses (B, T) into one
(B, T_prompt + T) sequence. Position ids count real tokens only, exactly as during generation, so
the log-probabilities recomputed here equal the sampling distribution's. The distribution of
response token t is read at column T_prompt - 1 + t.

The policy's forward pass encodes each distinct prompt once (the G responses of a group share
theirs) and runs the responses on copies of its cache: the same logits as the joined pass up to
float rounding, with the prompt's cost paid once per group instead of G times, in the backward pass
too.

The joined pass can also stop at the last hidden states and apply the output layer a chunk of tokens
at a time (:func:`chunked_response_logprobs`): a (B, T, V) float32 copy of the logits is then never
held, which on a vocabulary of 150 k tokens is most of the update's memory and much of its time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from accelerate.utils import extract_model_from_parallel
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache, PreTrainedModel

from algos.core.logprobs import entropy_from_logits, token_logprobs
from algos.engine.generation import cache_keyword, encode_prompts_once, position_ids


@dataclass(frozen=True)
class SequenceBatch:
    """prompt_ids, prompt_mask: (B, T_prompt) left-padded. response_ids, response_mask: (B, T)."""

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    response_ids: torch.Tensor
    response_mask: torch.Tensor

    def rows(self, index: torch.Tensor) -> SequenceBatch:
        """The sub-batch of the given row indices."""
        return SequenceBatch(
            *(t[index] for t in (self.prompt_ids, self.prompt_mask, self.response_ids, self.response_mask))
        )

    def to(self, device: torch.device | str) -> SequenceBatch:
        """The batch on ``device``."""
        return SequenceBatch(
            *(t.to(device) for t in (self.prompt_ids, self.prompt_mask, self.response_ids, self.response_mask))
        )

    def trimmed(self, width: int) -> SequenceBatch:
        """The batch with responses cut to their first ``width`` columns (the longest response, when all padding)."""
        return SequenceBatch(
            self.prompt_ids, self.prompt_mask, self.response_ids[:, :width], self.response_mask[:, :width]
        )

    def model_inputs(self) -> dict[str, torch.Tensor]:
        """input_ids, attention_mask and position_ids of the joined (B, T_prompt + T) sequences."""
        attention = torch.cat([self.prompt_mask, self.response_mask], dim=-1).long()
        return {
            "input_ids": torch.cat([self.prompt_ids, self.response_ids], dim=-1),
            "attention_mask": attention,
            "position_ids": position_ids(attention),
        }

    @property
    def tokens(self) -> int:
        """Real (non-padding) tokens in the batch, prompts included."""
        return int(self.prompt_mask.sum() + self.response_mask.sum())


def response_logits(model: PreTrainedModel, batch: SequenceBatch, share_prompts: bool = True) -> torch.Tensor:
    """Logits of the distribution of each response token, (B, T, V).

    share_prompts: encode each distinct prompt once and continue every row from its cache (the
    default); False runs the joined (B, T_prompt + T) sequences in one pass.
    """
    response_length = batch.response_ids.shape[1]
    inputs = batch.model_inputs()
    if not share_prompts:
        return model(**inputs, logits_to_keep=response_length + 1).logits[:, :-1]
    cache = DynamicCache(config=extract_model_from_parallel(model).config)  # model may be wrapped (DDP)
    first = encode_prompts_once(model, batch.prompt_ids, batch.prompt_mask, cache).unsqueeze(1)  # (B, 1, V)
    if response_length == 1:
        return first
    rest = model(  # the last response token predicts nothing that is scored
        input_ids=batch.response_ids[:, :-1],
        attention_mask=inputs["attention_mask"][:, :-1],
        position_ids=inputs["position_ids"][:, -response_length:-1],
        **{cache_keyword(model): cache},
    ).logits  # (B, T - 1, V)
    return torch.cat([first, rest], dim=1)


def response_logprobs(
    model: PreTrainedModel,
    batch: SequenceBatch,
    temperature: float,
    with_entropy: bool = False,
    share_prompts: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log π(o_t | q, o_<t) of each response token, (B, T), and optionally the entropy per token.

    Logits are divided by the sampling temperature, so π is the distribution responses were drawn
    from (verl's convention; TRL does the same). share_prompts: see :func:`response_logits`.
    """
    logits = response_logits(model, batch, share_prompts) / temperature  # (B, T, V)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return token_logprobs(logits, batch.response_ids), entropy


CHUNKED_MODEL_TYPES = ("llama", "qwen2", "qwen3", "mistral")
"""Model types whose logits are the output layer applied to the last hidden states, nothing after it."""

CHUNK_TOKENS = 1024
"""Tokens per chunk of the output layer in :func:`chunked_response_logprobs`."""


def chunked_unsupported(model: torch.nn.Module) -> str | None:
    """Why ``model``'s log-probabilities cannot be taken chunk by chunk (see :func:`chunked_response_logprobs`), or None."""
    if hasattr(model, "module"):
        return "the model is wrapped for several processes, whose forward pass must run whole"
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft: adapters stay in its layers
    model_type = getattr(inner.config, "model_type", None)
    if model_type not in CHUNKED_MODEL_TYPES:
        return f"its model type is {model_type!r}, not one of {', '.join(CHUNKED_MODEL_TYPES)}"
    return None


def chunked_response_logprobs(
    model: PreTrainedModel, batch: SequenceBatch, temperature: float, chunk_tokens: int = CHUNK_TOKENS
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`response_logprobs` of the joined pass, with entropies, through the output layer a chunk at a time.

    The model body gives the last hidden states (B, T, H) at the positions that predict the response tokens;
    the output layer, the temperature, the float32 log-softmax, the token's log-probability and the entropy
    then run on ``chunk_tokens`` positions at a time, each chunk recomputed in the backward pass (activation
    checkpointing), so the largest tensor held is one chunk's (chunk_tokens, V) logits. Returns log-probabilities
    and entropies, (B, T) each. ``model`` must pass :func:`chunked_unsupported`.
    """
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    rows, length = batch.response_ids.shape
    hidden = inner.base_model(**batch.model_inputs()).last_hidden_state[:, -length - 1 : -1]  # (B, T, H)
    hidden = hidden.reshape(rows * length, -1)
    tokens = batch.response_ids.reshape(-1)
    head = inner.get_output_embeddings()
    parts = [
        checkpoint(
            _head_terms,
            head,
            hidden[start : start + chunk_tokens],
            tokens[start : start + chunk_tokens],
            temperature,
            use_reentrant=False,
        )
        for start in range(0, rows * length, chunk_tokens)
    ]
    logprobs, entropies = (torch.cat(terms).reshape(rows, length) for terms in zip(*parts, strict=True))
    return logprobs, entropies


def _head_terms(
    head: torch.nn.Module, hidden: torch.Tensor, tokens: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each token and entropy of each position, (n,) each, from hidden states (n, H)."""
    logits = head(hidden).float() / temperature  # (n, V)
    return token_logprobs(logits, tokens), entropy_from_logits(logits)


def response_values(critic: PreTrainedModel, batch: SequenceBatch) -> torch.Tensor:
    """V(s_t) for each response token t, read where its log-probability is: (B, T)."""
    response_length = batch.response_ids.shape[1]
    scores = critic(**batch.model_inputs()).logits[..., 0]  # (B, T_prompt + T)
    return scores[:, -response_length - 1 : -1].float()


def final_values(critic: PreTrainedModel, batch: SequenceBatch) -> torch.Tensor:
    """The critic's score after each whole response, read at its last real token: (B,).

    This is where an outcome reward model scores a response (VAPO initialises its value model from one).
    """
    scores = critic(**batch.model_inputs()).logits[..., 0]  # (B, T_prompt + T)
    last = batch.prompt_ids.shape[1] + batch.response_mask.sum(dim=-1) - 1  # (B,)
    return scores[torch.arange(scores.shape[0], device=scores.device), last].float()
