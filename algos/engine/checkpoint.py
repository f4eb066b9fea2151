"""Resumable checkpoints, written so that a kill at any moment leaves a usable one.

A checkpoint directory holds ``policy/`` (model and tokenizer, ``save_pretrained``), ``critic/``
with a value model, and ``state.pt`` (step, optimizer states, the stale-policy snapshots, counters).
It is first written under ``checkpoint.partial/`` and then swapped in by renames: at every instant
either ``checkpoint/`` or ``checkpoint.previous/`` is complete.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

CHECKPOINT_DIR = "checkpoint"
POLICY_DIR = "policy"
CRITIC_DIR = "critic"
STATE_FILE = "state.pt"


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint on disk."""

    path: Path

    @property
    def policy(self) -> Path:
        return self.path / POLICY_DIR

    @property
    def critic(self) -> Path:
        return self.path / CRITIC_DIR

    def state(self) -> dict[str, Any]:
        return torch.load(self.path / STATE_FILE, weights_only=False)


def save_checkpoint(
    out: Path,
    policy: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    critic: PreTrainedModel | None,
    state: dict[str, Any],
    weights: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None] | None = None,
) -> Checkpoint:
    """Write a checkpoint of the run in ``out`` and return it.

    weights: the (policy, critic) state dicts to save, when the models hold only shards of them (FSDP).
    """
    policy_weights, critic_weights = weights or (None, None)
    final, partial, previous = (out / f"{CHECKPOINT_DIR}{suffix}" for suffix in ("", ".partial", ".previous"))
    shutil.rmtree(partial, ignore_errors=True)
    policy.save_pretrained(partial / POLICY_DIR, state_dict=policy_weights)
    tokenizer.save_pretrained(partial / POLICY_DIR)
    if critic is not None:
        critic.save_pretrained(partial / CRITIC_DIR, state_dict=critic_weights)
    torch.save(state, partial / STATE_FILE)
    shutil.rmtree(previous, ignore_errors=True)
    if final.exists():
        final.rename(previous)
    partial.rename(final)
    shutil.rmtree(previous, ignore_errors=True)
    return Checkpoint(final)


def latest_checkpoint(out: Path) -> Checkpoint | None:
    """The newest complete checkpoint in ``out``, or None for a fresh run."""
    for name in (CHECKPOINT_DIR, f"{CHECKPOINT_DIR}.previous"):
        if (out / name / STATE_FILE).is_file():
            return Checkpoint(out / name)
    return None
