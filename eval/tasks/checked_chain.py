"""The default built-in task: chained modular arithmetic worked out line by line, with optional checks.

A problem is a start digit and a chain of labelled operations, evaluated left to right modulo
``modulus``. A response works the chain out one line per operation (its label, the value so far,
the operation, the result), may follow any line with a check that restates it, and ends with the
answer::

    prompt:    7 a + 3 b * 9 c - 5 ;
    response:  a 7 + 3 = 0 check 7 + 3 = 0 b 0 * 9 = 0 c 0 - 5 = 5 ; answer 5

Checks never change the answer, so the same problem has correct responses of many lengths (6 tokens
a line, 6 more per check): a length-only preference cannot be read off correctness. A line states
its result with ``=`` or ``is``, a free choice of phrasing. A line finds its
operation in the prompt by its label, whatever number of checks came before it, and carries the
value so far into its own line, so each result is computed from the tokens just before it.

Multipliers are coprime to the modulus (3, 7 and 9 modulo 10), so every operation is a bijection
and one wrong line always makes the answer wrong. Difficulty is the number of multiplications: the base
model's teacher (see :class:`TeacherStyle`) gets them wrong far more often than additions and
subtractions, so a chain with many of them is rarely right at T = 1, while short chains of
additions almost always are. A teacher that sometimes
repeats its check line over and over gives the base a long, wrong failure mode (a loop), and long
chains checked line by line overrun a budget within which the same problem fits unchecked.

Splits are disjoint by the text's hash (see :func:`eval.tasks.synthetic.split_of`); the grader is the
built-in tasks' shared :func:`eval.tasks.synthetic.grade`.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from eval.tasks.records import Problem
from eval.tasks.synthetic import OPERATIONS, PROMPT_END, answer_only, draw_problems

LABELS = "abcdefghijklmnop"
"""Line labels, in order; a chain has at most this many operations."""
CHECK = "check"
EQUALS = ("=", "is")
"""The words a line may state its result with: the teacher picks one per line, a choice correctness never
depends on, like the phrasing of a real model's reasoning (and, like it, a target for entropy collapse)."""
LINE_TOKENS = 6
"""``a 7 + 3 = 0``: label, value so far, operation, operand, ``=``, result."""
CHECK_TOKENS = 6
"""``check 7 + 3 = 0``: the word, then the line without its label."""
ENDING_TOKENS = 3
"""``; answer 5``; the end-of-sequence token comes after it."""


@dataclass(frozen=True)
class TeacherStyle:
    """How the teacher that the base model imitates writes responses (one draw per response).

    check_rates: each response draws one of these rates and checks every line with it, so some
    responses check nothing and some everything. multiply_noise, other_noise: chance that a line's
    result is a wrong digit (the chain then carries the wrong value on, consistently) for
    multiplications and for additions and subtractions. loop_share: chance that a response falls
    into a loop after a random line: its check repeated, continuing with ``loop_continue`` after each
    repetition, then a wrong answer. None of the noise or loops when ``clean``.
    """

    check_rates: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    multiply_noise: float = 0.0
    other_noise: float = 0.0
    loop_share: float = 0.0
    loop_continue: float = 0.92


@dataclass(frozen=True)
class CheckedChainTask:
    """The task's knobs: operations per chain (uniform in [min_steps, max_steps]), the modulus, and the
    share of operations that are multiplications (by the multipliers coprime to the modulus; the rest
    are additions and subtractions of 0 .. modulus − 1)."""

    min_steps: int = 1
    max_steps: int = 12
    modulus: int = 10
    multiply_share: float = 0.45

    def __post_init__(self) -> None:
        if not 1 <= self.min_steps <= self.max_steps <= len(LABELS):
            raise ValueError(
                f"need 1 <= min_steps <= max_steps <= {len(LABELS)}, got {self.min_steps} and {self.max_steps}"
            )
        if self.modulus < 3:
            raise ValueError(f"modulus must be at least 3 (it needs a multiplier coprime to it), got {self.modulus}")
        if not 0 <= self.multiply_share <= 1:
            raise ValueError(f"multiply_share must lie in [0, 1], got {self.multiply_share}")

    def vocabulary(self) -> list[str]:
        """Every word a prompt or response uses (one token each)."""
        return [*(str(n) for n in range(self.modulus)), *OPERATIONS, *EQUALS, *LABELS, CHECK, PROMPT_END, "answer"]

    def multipliers(self) -> list[int]:
        """Multipliers of the chains: 2 .. modulus − 1 coprime to the modulus, so multiplying is invertible."""
        return [x for x in range(2, self.modulus) if math.gcd(x, self.modulus) == 1]

    def longest_response_tokens(self) -> None:
        """No bound: checks and loops make a response as long as the budget allows."""
        return None

    def problems(self, split: str, count: int, seed: int = 0) -> list[Problem]:
        """``count`` distinct problems of ``split``, deterministic in (task knobs, split, count, seed)."""
        return draw_problems(self._sample, split, count, seed)

    def _sample(self, rng: random.Random) -> Problem:
        steps = rng.randint(self.min_steps, self.max_steps)
        start = rng.randrange(self.modulus)
        chain = [
            ("*", rng.choice(self.multipliers()))
            if rng.random() < self.multiply_share
            else (rng.choice("+-"), rng.randrange(self.modulus))
            for _ in range(steps)
        ]
        lines = (f"{LABELS[i]} {op} {operand}" for i, (op, operand) in enumerate(chain))
        prompt = " ".join([str(start), *lines, PROMPT_END])
        values = chain_values(start, chain, self.modulus)
        problem = Problem(
            id=f"checked-{hashlib.sha256(prompt.encode()).hexdigest()[:12]}",
            prompt=prompt,
            answer=str(values[-1]),
            metadata={"steps": steps, "multiplications": sum(op == "*" for op, _ in chain)},
        )
        return Problem(
            problem.id, problem.prompt, problem.answer, render(problem, values, checked=()), problem.metadata
        )


def parse_prompt(prompt: str) -> tuple[int, list[tuple[str, int]]]:
    """The start value and the (operation, operand) chain of a prompt."""
    words = prompt.removesuffix(PROMPT_END).split()
    return int(words[0]), [(op, int(operand)) for op, operand in zip(words[2::3], words[3::3], strict=True)]


def chain_values(start: int, chain: list[tuple[str, int]], modulus: int) -> list[int]:
    """The start value followed by the value after each operation."""
    values = [start]
    for op, operand in chain:
        values.append(OPERATIONS[op](values[-1], operand, modulus))
    return values


def render(
    problem: Problem,
    values: list[int],
    checked: tuple[int, ...] | set[int],
    loop: tuple[int, int] | None = None,
    final: str | None = None,
    equals: Sequence[str] | None = None,
) -> str:
    """A response to ``problem`` whose lines carry ``values`` (start value first; wrong ones allowed).

    checked: lines (0-based) followed by a check. loop: (line, repetitions) — the response ends in
    that line's check repeated, then ``; answer final`` (no ending when ``final`` is None: cut off).
    equals: the word of each line and its check (one of :data:`EQUALS`; ``=`` throughout when None).
    """
    _, chain = parse_prompt(problem.prompt)
    equals = equals or [EQUALS[0]] * len(chain)
    words: list[str] = []
    for i, (op, operand) in enumerate(chain):
        line = [str(values[i]), op, str(operand), equals[i], str(values[i + 1])]
        check = [CHECK, *line]
        words += [LABELS[i], *line]
        if loop is not None and loop[0] == i:
            words += check * loop[1]
            return " ".join(words + ([] if final is None else [PROMPT_END, answer_only(final)]))
        if i in checked:
            words += check
    return " ".join([*words, PROMPT_END, answer_only(str(values[-1]) if final is None else final)])


def teacher_response(problem: Problem, style: TeacherStyle, modulus: int, rng: random.Random) -> str:
    """One response as the teacher of ``style`` writes it: checks at one drawn rate, noisy results, maybe a loop."""
    start, chain = parse_prompt(problem.prompt)
    rate = rng.choice(style.check_rates)
    checked = {i for i in range(len(chain)) if rng.random() < rate}
    values = [start]
    for op, operand in chain:
        value = OPERATIONS[op](values[-1], operand, modulus)
        if rng.random() < (style.multiply_noise if op == "*" else style.other_noise):
            value = rng.choice([v for v in range(modulus) if v != value])
        values.append(value)
    equals = [rng.choice(EQUALS) for _ in chain]
    if rng.random() >= style.loop_share:
        return render(problem, values, checked, equals=equals)
    repetitions = 3
    while rng.random() < style.loop_continue:
        repetitions += 1
    wrong = rng.choice([v for v in range(modulus) if v != int(problem.answer)])
    loop = (rng.randrange(len(chain)), repetitions)
    return render(problem, values, checked, loop=loop, final=str(wrong), equals=equals)
