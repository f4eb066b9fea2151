"""The built-in task's knobs: which task, how long its problems are, and its difficulty."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass


@dataclass(frozen=True, config=ConfigDict(extra="forbid", validate_default=True))
class TaskConfig:
    """The built-in task (see eval.tasks.sources); ignored when problems are passed in."""

    name: Literal["checked_chain", "chain", "word_problems"] = Field(
        "checked_chain",
        description=(
            "checked_chain: labelled chains worked out line by line with optional checks, so one problem has "
            "correct responses of many lengths (eval.tasks.checked_chain; the default). chain: the worksheet task "
            "whose worked solution has one length per problem (eval.tasks.synthetic; its base: 2-8 operations, "
            "budget 32). word_problems: one-step arithmetic stories in English for pretrained chat models "
            "(eval.tasks.word_problems; the step, modulus and multiplication knobs do not apply to it)."
        ),
    )
    min_steps: Annotated[int, Field(gt=0)] = Field(1, description="Fewest operations in a problem.")
    max_steps: Annotated[int, Field(gt=0)] = Field(
        12,
        description="Most operations; checked_chain: 12 lines checked throughout need 148 tokens, far past the 96-token budget.",
    )
    modulus: Annotated[int, Field(ge=2)] = Field(10, description="Arithmetic is modulo this number.")
    multiply_share: Annotated[float, Field(ge=0.0, le=1.0)] = Field(
        0.45,
        description="checked_chain: share of operations that are multiplications, the ones the base gets wrong "
        "most often (its difficulty knob). chain draws +, - and * alike.",
    )
