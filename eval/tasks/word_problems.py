"""One-step arithmetic word problems in English: a task for pretrained chat models.

A problem is a short story around one addition, subtraction or multiplication of two numbers from 1
to 9, asking for the result and telling the model to reply with the number alone::

    Mia has 7 marbles. She gets 5 more marbles. How many marbles does Mia have now? Reply with only the final number.

A small instruction-tuned model (SmolLM2-135M-Instruct) solves these now and then: it often reasons
aloud, loses the thread, or states a wrong sum, so sampled pass rates sit between the extremes and
RL has groups with both outcomes to learn from. A response is correct when the last integer it
states is the answer (:func:`grade`, which also computes the training reward).

Splits are disjoint in the arithmetic itself: a problem belongs to the split its operation and
operands hash to, so no sum, difference or product asked in validation or test is ever trained on,
whatever the story around it.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass

from eval.tasks.records import Problem
from eval.tasks.synthetic import draw_problems

NAMES = ("Mia", "Tom", "Sara", "Leo", "Ava", "Sam")
THINGS = ("apples", "marbles", "stickers", "books")
INSTRUCTION = "Reply with only the final number."
STORIES = {
    "+": "{name} has {a} {things}. {pronoun} gets {b} more {things}. How many {things} does {name} have now?",
    "-": "{name} has {a} {things}. {pronoun} gives {b} {things} to a friend. How many {things} does {name} have left?",
    "*": "{name} has {a} bags with {b} {things} in each bag. How many {things} does {name} have in total?",
}
PRONOUNS = {"Mia": "She", "Tom": "He", "Sara": "She", "Leo": "He", "Ava": "She", "Sam": "He"}
LEVELS = {"+": 0, "-": 1, "*": 2}
"""Operation -> its difficulty level in the metadata (``operation``)."""
INTEGER = re.compile(r"-?\d+")


@dataclass(frozen=True)
class WordProblemTask:
    """One-step word problems; operands from 1 to ``largest_operand`` (a subtraction never goes below zero)."""

    largest_operand: int = 9

    def longest_response_tokens(self) -> None:
        """Responses are free text: the format sets no longest length."""
        return

    def problems(self, split: str, count: int, seed: int = 0) -> list[Problem]:
        """``count`` distinct problems of ``split``, deterministic in (split, count, seed)."""
        return draw_problems(self._sample, split, count, seed, split_key=lambda p: p.metadata["arithmetic"])

    def _sample(self, rng: random.Random) -> Problem:
        operation = rng.choice(list(STORIES))
        a, b = rng.randint(1, self.largest_operand), rng.randint(1, self.largest_operand)
        if operation == "-" and b > a:
            a, b = b, a
        name, things = rng.choice(NAMES), rng.choice(THINGS)
        story = STORIES[operation].format(name=name, pronoun=PRONOUNS[name], a=a, b=b, things=things)
        prompt = f"{story} {INSTRUCTION}"
        answer = {"+": a + b, "-": a - b, "*": a * b}[operation]
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:12]
        return Problem(
            id=f"word-{digest}",
            prompt=prompt,
            answer=str(answer),
            metadata={"operation": LEVELS[operation], "arithmetic": f"{a} {operation} {b}"},
        )


def grade(response: str, answer: str) -> bool:
    """Whether the last integer in ``response`` (thousands separators ignored) is ``answer``."""
    integers = INTEGER.findall(response.replace(",", ""))
    return bool(integers) and int(integers[-1]) == int(answer)
