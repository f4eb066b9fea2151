"""The built-in verifiable reasoning task: chained modular arithmetic worked out on a worksheet.

A problem is a start digit and a chain of operations, evaluated left to right modulo ``modulus``.
The prompt is a worksheet with a blank after every operation; the solution fills in the blanks in
order, each result feeding the next operation, and then states the answer::

    prompt:    7 + 3 = ? * 2 = ? - 5 = ? . . . . ;
    solution:  + 3 = 0 * 2 = 0 - 5 = 5 ; answer 5

Every step depends on the previous result, so the answer cannot be looked up: the model has to
carry the computation through the whole chain. The number of operations (the difficulty knob,
uniform in [min_steps, max_steps]) sets the solution's length, 4 tokens per step plus 3, so with a
wide range some correct solutions exceed a short generation budget — which gives overlong
filtering and the soft overlong punishment something to act on.

Every worksheet has ``max_steps`` lines; the unused ones are filled with ``.``. Line k of the
solution then always sits at the same distance from line k of the prompt, so copying an operation
is a fixed-offset lookup, which a tiny model learns far more reliably than finding the k-th
operation of a chain of unknown length; what separates a weak model from a strong one is then the
arithmetic carried along the chain.

Splits are disjoint by construction: a problem belongs to the split its text hashes to, so train,
validation and test never share a problem, whatever the seeds and sizes. The same :func:`grade`
scores evaluation and computes the training reward.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from eval.tasks.records import Problem

SPLITS = {"train": (0, 80), "validation": (80, 90), "test": (90, 100)}
"""Split name -> its range of hash buckets out of 100."""

OPERATIONS = {"+": lambda a, b, m: (a + b) % m, "-": lambda a, b, m: (a - b) % m, "*": lambda a, b, m: (a * b) % m}
ANSWER_PATTERN = re.compile(r"answer\s+(-?\d+)\s*$")
BLANK = "?"
"""Marks a result the solution fills in."""
FILLER = "."
"""Fills the unused lines of a worksheet."""
PROMPT_END = ";"
LINE_TOKENS = 4
"""Tokens of one worksheet line: ``op operand = ?`` in a prompt, ``op operand = result`` in a solution."""


@dataclass(frozen=True)
class ChainTask:
    """The task's knobs. Token counts assume whitespace-separated symbols (one token each)."""

    min_steps: int = 2
    max_steps: int = 8
    modulus: int = 10

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"need 1 <= min_steps <= max_steps, got {self.min_steps} and {self.max_steps}")
        if self.modulus < 2:
            raise ValueError(f"modulus must be at least 2, got {self.modulus}")

    @staticmethod
    def solution_tokens(steps: int) -> int:
        """Length in tokens of the worked solution of a ``steps``-operation problem."""
        return LINE_TOKENS * steps + 3

    def vocabulary(self) -> list[str]:
        """Every word a prompt or response uses (one token each)."""
        return [*(str(n) for n in range(self.modulus)), *OPERATIONS, "=", BLANK, FILLER, PROMPT_END, "answer"]

    def longest_response_tokens(self) -> int:
        """The longest response the format allows: the longest worked solution and its end-of-sequence token."""
        return self.solution_tokens(self.max_steps) + 1

    def prompt_tokens(self) -> int:
        """Length in tokens of every prompt (the worksheet has ``max_steps`` lines)."""
        return LINE_TOKENS * self.max_steps + 2

    def problems(self, split: str, count: int, seed: int = 0) -> list[Problem]:
        """``count`` distinct problems of ``split``, deterministic in (task knobs, split, count, seed)."""
        return draw_problems(self._sample, split, count, seed)

    def _sample(self, rng: random.Random) -> Problem:
        steps = rng.randint(self.min_steps, self.max_steps)
        value = rng.randrange(self.modulus)
        chain = [(rng.choice(list(OPERATIONS)), rng.randrange(self.modulus)) for _ in range(steps)]
        prompt_parts, lines = [str(value)], []
        for op, operand in chain:
            value = OPERATIONS[op](value, operand, self.modulus)
            prompt_parts += [op, str(operand), "=", BLANK]
            lines.append(f"{op} {operand} = {value}")
        prompt_parts += [FILLER] * (LINE_TOKENS * (self.max_steps - steps)) + [PROMPT_END]
        prompt = " ".join(prompt_parts)
        solution = " ".join(lines) + f" ; {answer_only(str(value))}"
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:12]
        return Problem(
            id=f"chain-{digest}", prompt=prompt, answer=str(value), solution=solution, metadata={"steps": steps}
        )


def draw_problems(
    sample: Callable[[random.Random], Problem],
    split: str,
    count: int,
    seed: int = 0,
    split_key: Callable[[Problem], str] = lambda problem: problem.prompt,
) -> list[Problem]:
    """``count`` distinct problems of ``split`` drawn with ``sample`` from a generator seeded by (seed, split).

    Problems whose ``split_key`` (by default the text) hashes to another split are skipped, so splits
    never share a problem, nor anything else the key holds.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split '{split}'; valid splits: {', '.join(SPLITS)}")
    rng = random.Random(f"{seed}:{split}")
    seen: set[str] = set()
    found: list[Problem] = []
    attempts = 0
    while len(found) < count:
        attempts += 1
        if attempts > 1000 * count + 10_000:
            raise ValueError(f"the task has too few distinct {split} problems for {count}; widen the step range")
        problem = sample(rng)
        if problem.prompt in seen or split_of(split_key(problem)) != split:
            continue
        seen.add(problem.prompt)
        found.append(problem)
    return found


def split_of(key: str) -> str:
    """The split a problem text (or another key of a problem) belongs to (stable hash bucket)."""
    bucket = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % 100
    return next(name for name, (low, high) in SPLITS.items() if low <= bucket < high)


def answer_only(answer: str) -> str:
    """The response that states ``answer`` without working it out; every worked solution ends with it."""
    return f"answer {answer}"


def is_worked(response: str) -> bool:
    """Whether ``response`` sets out to work the problem out: it opens with an operation, not ``answer``."""
    tokens = response.split()
    return bool(tokens) and tokens[0] in OPERATIONS


def extract_answer(response: str) -> str | None:
    """The final answer of a response: the integer after a trailing ``answer``; None if absent."""
    match = ANSWER_PATTERN.search(response.strip())
    return match.group(1) if match else None


def grade(response: str, answer: str) -> bool:
    """Whether ``response`` ends with the reference ``answer`` in the final-answer format."""
    extracted = extract_answer(response)
    return extracted is not None and int(extracted) == int(answer)
