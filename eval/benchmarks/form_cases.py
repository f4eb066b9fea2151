"""Responses that state an answer in a form a careful reader follows, with the verdict such a reader gives.

Each class holds cases the graders must credit and cases they must still refuse (a wrong value in the
same form, an inequality that is not the interval, a remark that negates the answer itself, a
retraction with no replacement). The tests grade every case; ``python -m eval.benchmarks.audit --cases
forms`` sets math-verify's own reading beside the project's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FormCase:
    """One response, its reference, the grader kind that reads it (``math``, ``integer``, ``numeric``) and the
    verdict a careful reader gives."""

    form: str
    response: str
    reference: str
    grader: str
    correct: bool


def _box(answer: str) -> str:
    return f"Working through it, the final answer is $\\boxed{{{answer}}}$."


_LONG_REASONING = "We keep checking the partial sums. " * 300_000  # about 10.5 MB

FORM_CASES: tuple[FormCase, ...] = (
    # a number written as a word
    FormCase("number in words", _box(r"\text{seven}"), "7", "math", True),
    FormCase("number in words", _box("twenty-one"), "21", "integer", True),
    FormCase("number in words", "The answer is one hundred and five.", "105", "numeric", True),
    FormCase("number in words", _box(r"\text{eight}"), "7", "math", False),
    FormCase("number in words", _box("twenty-two"), "21", "integer", False),
    FormCase("number in words", _box(r"\text{seven apples and two pears}"), "7", "numeric", False),
    # Unicode digits
    FormCase("unicode digits", _box("７"), "7", "math", True),
    FormCase("unicode digits", "#### ٤٢", "42", "numeric", True),
    FormCase("unicode digits", _box("１２３"), "123", "integer", True),
    FormCase("unicode digits", _box("８"), "7", "math", False),
    FormCase("unicode digits", "#### ٤٣", "42", "numeric", False),
    FormCase("unicode digits", _box("１２"), "123", "integer", False),
    # Unicode math symbols for LaTeX
    FormCase("unicode symbols", _box("√3"), r"\sqrt{3}", "math", True),
    FormCase("unicode symbols", _box("2√3"), r"\sqrt{12}", "math", True),
    FormCase("unicode symbols", _box("∅"), r"\varnothing", "math", True),
    FormCase("unicode symbols", _box("3π/2"), r"\frac{3\pi}{2}", "math", True),
    FormCase("unicode symbols", _box("x²+1"), "x^2+1", "math", True),
    FormCase("unicode symbols", _box("√2"), r"\sqrt{3}", "math", False),
    FormCase("unicode symbols", _box("{0}"), r"\varnothing", "math", False),
    FormCase("unicode symbols", _box("π/2"), r"\frac{3\pi}{2}", "math", False),
    FormCase("unicode symbols", _box("x³+1"), "x^2+1", "math", False),
    # a one-cell array or matrix around a number
    FormCase("one-cell array", _box(r"\begin{pmatrix} 5 \end{pmatrix}"), "5", "math", True),
    FormCase("one-cell array", _box(r"\begin{array}{c} 12 \end{array}"), "12", "integer", True),
    FormCase("one-cell array", _box(r"\begin{bmatrix} \frac{1}{2} \end{bmatrix}"), r"\frac12", "math", True),
    FormCase("one-cell array", _box(r"\begin{pmatrix} 6 \end{pmatrix}"), "5", "math", False),
    FormCase("one-cell array", _box(r"\begin{pmatrix} 5 & 0 \end{pmatrix}"), "5", "math", False),
    FormCase("one-cell array", _box(r"\begin{array}{c} 12 \\ 3 \end{array}"), "12", "integer", False),
    # a long arithmetic expression that evaluates to the reference
    FormCase("arithmetic", _box(r"3 \times 4 + 2 - 6 \div 3 + 10 \cdot 2"), "32", "numeric", True),
    FormCase("arithmetic", _box(r"\frac{50}{2}"), "25", "integer", True),
    FormCase("arithmetic", _box("2^{10} - 24"), "1000", "integer", True),
    FormCase("arithmetic", _box(r"(12 + 8) \times 3"), "60", "math", True),
    FormCase("arithmetic", _box(r"3 \times 4 + 2"), "15", "numeric", False),
    FormCase("arithmetic", _box(r"\frac{51}{2}"), "25", "integer", False),
    FormCase("arithmetic", _box("2^{10} - 23"), "1000", "integer", False),
    # an inequality, a double inequality or set-builder notation for an interval
    FormCase("interval", _box(r"x \ge 3"), r"[3, \infty)", "math", True),
    FormCase("interval", _box(r"-1 < x \le 4"), "(-1, 4]", "math", True),
    FormCase("interval", _box(r"\{x \mid x < 2\}"), r"(-\infty, 2)", "math", True),
    FormCase("interval", _box("x ≤ 5"), r"(-\infty, 5]", "math", True),
    FormCase("interval", _box(r"4 \ge x > -1"), "(-1, 4]", "math", True),
    FormCase("interval", _box(r"x > 3"), r"[3, \infty)", "math", False),
    FormCase("interval", _box(r"-1 \le x \le 4"), "(-1, 4]", "math", False),
    FormCase("interval", _box(r"\{x \mid x > 2\}"), r"(-\infty, 2)", "math", False),
    FormCase("interval", _box(r"x \ge 3 \text{ or } x < 1"), r"[3, \infty)", "math", False),
    FormCase("interval", _box(r"y \ge 3 > x"), r"[3, \infty)", "math", False),
    # a remark about the stated answer
    FormCase("remark", "So the answer is 21, which is not even.", "21", "numeric", True),
    FormCase("remark", "The final answer is 15, since it is not divisible by 2.", "15", "numeric", True),
    FormCase("remark", "Final answer: 8, where 8 is not prime.", "8", "integer", True),
    FormCase("remark", "So the answer is not 21.", "21", "numeric", False),
    FormCase("remark", "The final answer is 16, which is not 15.", "15", "numeric", False),
    FormCase("remark", "The answer is not 8, because 8 is too large.", "8", "integer", False),
    # a statement retracted, then replaced by a new one
    FormCase("retracted, replaced", r"$\boxed{5}$. Wait, that is wrong. The answer is 7.", "7", "math", True),
    FormCase("retracted, replaced", r"Final answer: 12. Scratch that, the answer is 14.", "14", "numeric", True),
    FormCase("retracted, replaced", r"$\boxed{3}$. My answer was incorrect; $\boxed{4}$.", "4", "integer", True),
    FormCase("retracted, replaced", r"$\boxed{5}$. Wait, that is wrong.", "5", "math", False),
    FormCase("retracted, replaced", r"$\boxed{5}$. Wait, that is wrong. The answer is 7.", "5", "math", False),
    FormCase("retracted, replaced", r"Final answer: 12. Scratch that, let me redo it.", "12", "numeric", False),
    # a later answer phrase that revises ("on reflection ... really")
    FormCase("revision", "Final answer: 8. Hmm, on reflection the answer is really 6.", "6", "integer", True),
    FormCase("revision", r"$\boxed{10}$. Actually, the answer is 12.", "12", "numeric", True),
    FormCase("revision", "Final answer: 3. On second thought, the answer is 4.", "4", "math", True),
    FormCase("revision", "Final answer: 8. Hmm, on reflection the answer is really 6.", "8", "integer", False),
    FormCase("revision", "Final answer: 8. Note that the answer is not 6.", "6", "integer", False),
    FormCase("revision", r"$\boxed{10}$. The answer is 12 if the fee is included.", "12", "numeric", False),
    # an empty box quoted from the format instruction before the answer is stated in words
    FormCase(
        "quoted empty box", r"I must put the answer in \boxed{}. 3 + 4 = 7, so the answer is 7.", "7", "numeric", True
    ),
    FormCase("quoted empty box", r"Format: \boxed{}. The final answer is 12.", "12", "integer", True),
    FormCase("quoted empty box", r"Use \boxed{} for it. Answer: $\frac{1}{2}$", r"\frac12", "math", True),
    FormCase("quoted empty box", r"3 + 4 = 7, so the answer is $\boxed{}$", "7", "numeric", False),
    FormCase("quoted empty box", r"I must put the answer in \boxed{}. The answer is 8.", "7", "numeric", False),
    FormCase("quoted empty box", r"Use \boxed{} for it. The answer is not 12.", "12", "integer", False),
    # two boxes back to back, no joining word: the last is the answer
    FormCase("back-to-back boxes", r"$\boxed{3}\boxed{5}$", "5", "integer", True),
    FormCase("back-to-back boxes", r"So $\boxed{12}$ $\boxed{14}$", "14", "numeric", True),
    FormCase("back-to-back boxes", r"$\boxed{\frac{1}{3}}\boxed{\frac{1}{2}}$", r"\frac12", "math", True),
    FormCase("back-to-back boxes", r"$\boxed{3}\boxed{5}$", "3", "integer", False),
    FormCase("back-to-back boxes", r"$\boxed{3}, \boxed{5}$", "5", "integer", False),  # a list: 3, 5
    FormCase("back-to-back boxes", r"$\boxed{3}$ or $\boxed{5}$", "5", "integer", False),  # a hedge
    # megabytes of reasoning, the answer in the last line
    FormCase("long response", _LONG_REASONING + "\nThe final answer is $\\boxed{42}$.", "42", "numeric", True),
    FormCase("long response", _LONG_REASONING + "\nThe final answer is $\\boxed{42}$.", "42", "math", True),
    FormCase("long response", _LONG_REASONING + "\n#### 17", "17", "integer", True),
    FormCase("long response", _LONG_REASONING + "\nThe final answer is $\\boxed{41}$.", "42", "numeric", False),
    FormCase(
        "long response",
        _LONG_REASONING + "\nThe final answer is $\\boxed{42}$. Wait, that is wrong.",
        "42",
        "math",
        False,
    ),
    FormCase("long response", _LONG_REASONING + "\n#### 18", "17", "integer", False),
)
"""The cases, grouped by form: credits first, refusals after, at least three of each."""
