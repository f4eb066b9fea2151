"""The one record type every task and benchmark is normalised to."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Verifier = Callable[[str, str], bool]
"""(response text, reference answer) -> whether the response is correct."""


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


def write_problems(path: Path, problems: list[Problem]) -> None:
    """Save ``problems`` as JSON Lines, one record per line, written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".partial")
    staging.write_text("".join(json.dumps(dataclasses.asdict(p)) + "\n" for p in problems))
    staging.replace(path)


def read_problems(path: Path) -> list[Problem]:
    """Problems saved by :func:`write_problems`; a malformed line fails naming the file and line."""
    problems = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        try:
            problems.append(Problem(**json.loads(line)))
        except (json.JSONDecodeError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a problem record ({error})") from None
    return problems
