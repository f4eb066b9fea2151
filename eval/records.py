"""The one record type every task and benchmark is normalised to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One problem: what the model sees, what a correct answer is, and where it came from.

    id: stable and unique within its source. prompt: the problem text given to the model.
    answer: the reference final answer. solution: a worked solution when the source has one
    (used for supervised warm-up). metadata: source-specific fields (difficulty, split, ...).
    """

    id: str
    prompt: str
    answer: str
    solution: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
