"""Loading policies, critics and tokenizers: one code path for the built-in base and hub models.

A model is named by a hub id (``Qwen/Qwen2.5-Math-1.5B``) or a local directory written by
``save_pretrained``; both go through the ``Auto*`` classes, so switching from the built-in base to a
real model is a configuration change only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForTokenClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from algos.config.schema import ModelConfig
from algos.engine.adapters import is_adapter_directory, load_merged, with_adapters

BUILT_IN_BASE = ModelConfig().name_or_path

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelNotFoundError(FileNotFoundError):
    """The configured model is neither a local directory nor loadable from the hub."""


def _checked_source(cfg: ModelConfig) -> str:
    source = cfg.name_or_path
    looks_local = source == BUILT_IN_BASE or source.startswith((".", "/", "~")) or Path(source).exists()
    if looks_local and not ((Path(source).expanduser() / "config.json").is_file() or is_adapter_directory(source)):
        raise ModelNotFoundError(
            f"model.name_or_path='{source}' has no model (no config.json there): build the built-in base with "
            f"`python -m algos.trainer.sft --out {source}` (or `snakemake base_model`), or set model.name_or_path "
            "to a hub id or another saved model"
        )
    return str(Path(source).expanduser()) if looks_local else source


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
"""Files of which a directory holding a tokenizer has at least one."""


def load_tokenizer(cfg: ModelConfig) -> PreTrainedTokenizerBase:
    """The model's tokenizer, left-padding for batched generation, with a pad token."""
    source = _checked_source(cfg)
    if Path(source).is_dir() and not any((Path(source) / name).is_file() for name in TOKENIZER_FILES):
        raise ModelNotFoundError(
            f"model.name_or_path='{cfg.name_or_path}' has a model but no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}): save the model's tokenizer into that directory "
            "(tokenizer.save_pretrained(directory))"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, padding_side="left")
    except (OSError, ValueError) as error:
        first_line = str(error).strip().splitlines()[0]
        raise ModelNotFoundError(
            f"model.name_or_path='{cfg.name_or_path}': its tokenizer does not load: {first_line}"
        ) from error
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_policy(cfg: ModelConfig, checkpoint: Path | None = None, adapter_seed: int = 0) -> PreTrainedModel:
    """The causal LM to train (or to freeze as the reference policy), with ``gradient_checkpointing`` applied.

    checkpoint: a run's saved policy to resume from: the whole model, or with ``model.lora`` its adapters
    (the base is still ``name_or_path``). With ``model.lora`` and no checkpoint, fresh adapters drawn from
    ``adapter_seed``. A ``name_or_path`` holding saved adapters alone (a LoRA run's policy) loads as its base
    with the adapters merged in.
    """
    source = _checked_source(cfg)
    if is_adapter_directory(source) and not cfg.lora.enabled:
        return _with_checkpointing(cfg, load_merged(Path(source), DTYPES[cfg.dtype]))
    if checkpoint is not None and not cfg.lora.enabled:
        source = str(checkpoint)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=DTYPES[cfg.dtype])
    if cfg.lora.enabled:
        model = with_adapters(model, cfg.lora, checkpoint, adapter_seed)
    return _with_checkpointing(cfg, model)


def load_critic(cfg: ModelConfig, head_seed: int = 0) -> PreTrainedModel:
    """A value model: the policy's backbone with a fresh scalar head per token, no dropout.

    ``model(...).logits[..., 0]`` is V(s_t) at every position (PPO and VAPO initialise the critic
    from a pretrained model and learn the head). The fresh head is drawn with the CPU generator
    seeded by ``head_seed`` (the global RNG state is restored afterwards), so the same run seed
    always starts from the same critic.
    """
    source = _checked_source(cfg)
    config = AutoConfig.from_pretrained(source, num_labels=1)
    config.classifier_dropout = 0.0  # read by every *ForTokenClassification head; absent from some configs
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(head_seed)
        critic = AutoModelForTokenClassification.from_pretrained(source, config=config, dtype=DTYPES[cfg.dtype])
    return _with_checkpointing(cfg, critic)


def _with_checkpointing(cfg: ModelConfig, model: PreTrainedModel) -> PreTrainedModel:
    """``model`` recomputing its layers' activations in training-mode backward passes when the config asks.

    Non-reentrant checkpointing replays the forward pass with the same random state, so dropout and
    the gradients are unchanged; generation and scoring run in eval mode and are unaffected.
    """
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


@dataclass(frozen=True)
class ChatFormat:
    """Prompts wrapped in the tokenizer's chat template: an optional system turn, one user turn holding the
    prompt, then the assistant's generation prompt."""

    system_prompt: str | None = None

    def messages(self, prompt: str) -> list[dict[str, str]]:
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt is not None else []
        return [*system, {"role": "user", "content": prompt}]


def chat_format(cfg: ModelConfig, tokenizer: PreTrainedTokenizerBase) -> ChatFormat | None:
    """How prompts go through the tokenizer's chat template; None: they are given raw."""
    has_template = getattr(tokenizer, "chat_template", None) is not None
    if cfg.chat_template == "always" and not has_template:
        raise ValueError(
            f"model.chat_template=always but the tokenizer of '{cfg.name_or_path}' has no chat template; "
            "set model.chat_template=auto or never"
        )
    chat = cfg.chat_template == "always" or (cfg.chat_template == "auto" and has_template)
    if cfg.system_prompt is not None and not chat:
        raise ValueError(
            f"model.system_prompt is set but prompts to '{cfg.name_or_path}' do not go through a chat template "
            f"(model.chat_template={cfg.chat_template}, the tokenizer {'has' if has_template else 'has no'} "
            "template); unset model.system_prompt or use a model with a chat template"
        )
    return ChatFormat(cfg.system_prompt) if chat else None


def end_token_ids(tokenizer: PreTrainedTokenizerBase, model: PreTrainedModel) -> tuple[int, ...]:
    """Every token id that ends a response: the tokenizer's end token, then each id of the model's
    ``generation_config.eos_token_id``, which is a list for models with several end-of-turn tokens
    (Qwen2.5, Llama 3)."""
    configured = getattr(model.generation_config, "eos_token_id", None)
    configured = [] if configured is None else [configured] if isinstance(configured, int) else list(configured)
    return tuple(dict.fromkeys(i for i in [tokenizer.eos_token_id, *configured] if i is not None))


def decode_responses(
    tokenizer: PreTrainedTokenizerBase, response_ids: torch.Tensor, lengths: torch.Tensor
) -> list[str]:
    """The text of each response (N rows of ``response_ids``, ``lengths`` (N,) real tokens): exactly the tokens
    that were scored, the padding after them left out whatever the pad token is; special tokens are not text."""
    rows = [ids[:length] for ids, length in zip(response_ids.tolist(), lengths.tolist(), strict=True)]
    return tokenizer.batch_decode(rows, skip_special_tokens=True)


def encode_prompts(
    tokenizer: PreTrainedTokenizerBase, prompts: list[str], chat: ChatFormat | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded prompt ids and attention mask, both (N, T_prompt).

    With ``chat`` each prompt is rendered by the chat template once (its special tokens are then
    not added a second time); without, the tokenizer adds its own (e.g. a BOS token).
    """
    if chat:
        prompts = [
            tokenizer.apply_chat_template(chat.messages(p), tokenize=False, add_generation_prompt=True) for p in prompts
        ]
    encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=chat is None)
    return encoded["input_ids"], encoded["attention_mask"]
