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
_RETRACTED = "The answer is 5. Wait, I made an arithmetic error: 3 + 4 is 7, not 5,"

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
    # scientific notation
    FormCase("scientific notation", _box(r"1.2 \times 10^{3}"), "1200", "numeric", True),
    FormCase("scientific notation", "The answer is 3.5e4.", "35000", "integer", True),
    FormCase("scientific notation", _box(r"1.5 x 10^6"), "1500000", "math", True),
    FormCase("scientific notation", _box(r"1.2\text{e}3"), "1200", "numeric", True),
    FormCase("scientific notation", _box(r"1.2 \times 10^{4}"), "1200", "numeric", False),
    FormCase("scientific notation", "The answer is 3.5e3.", "35000", "integer", False),
    FormCase("scientific notation", _box("2.5E-2"), "0.0025", "numeric", False),
    FormCase("scientific notation", _box("1.2e3"), "1200", "math", True),
    FormCase("scientific notation", _box("4E5"), "400000", "integer", True),
    FormCase("scientific notation", _box("1.2e4"), "1200", "math", False),
    FormCase("scientific notation", _box("3e+1"), "31", "math", False),  # 3e + 1, a product with e
    FormCase("scientific notation", _box("2e-1"), "0.2", "math", False),
    # digit groups set apart by TeX spacing
    FormCase("spaced digit groups", _box(r"1\ 000\ 000"), "1000000", "math", True),
    FormCase("spaced digit groups", _box(r"12\;345\;678"), "12345678", "numeric", True),
    FormCase("spaced digit groups", _box(r"3\thinspace 141"), "3141", "integer", True),
    FormCase("spaced digit groups", _box(r"1~000"), "1000", "math", True),
    FormCase("spaced digit groups", _box(r"1\,235"), "1234", "integer", False),
    FormCase("spaced digit groups", _box(r"12\;345\;679"), "12345678", "numeric", False),
    FormCase("spaced digit groups", _box(r"1\ 000\ 000"), "100000", "integer", False),
    # a sentence's closing punctuation inside the box
    FormCase("punctuation in the box", _box("42."), "42", "integer", True),
    FormCase("punctuation in the box", _box(r"\frac{3}{4}."), r"\frac34", "math", True),
    FormCase("punctuation in the box", _box("x = 5;"), "5", "math", True),
    FormCase("punctuation in the box", _box("x = 6;"), "5", "math", False),
    FormCase("punctuation in the box", _box("41."), "42", "integer", False),
    FormCase("punctuation in the box", _box("5, 6."), "5", "math", False),
    # a whole sentence inside the box
    FormCase("sentence in the box", _box(r"\text{The answer is } 12."), "12", "integer", True),
    FormCase("sentence in the box", _box(r"\text{The final answer is 7}"), "7", "numeric", True),
    FormCase("sentence in the box", _box(r"\text{There are } 30 \text{ students.}"), "30", "integer", True),
    FormCase("sentence in the box", _box(r"\text{The answer is not } 12."), "12", "integer", False),
    FormCase("sentence in the box", _box(r"\text{The answer is } 13."), "12", "integer", False),
    FormCase(
        "sentence in the box",
        _box(r"\text{There are } 30 \text{ students and } 4 \text{ teachers.}"),
        "30",
        "integer",
        False,
    ),
    # an answer stated, then corrected in prose
    FormCase("corrected in prose", "The answer is 40. Oops, I mis-added: it should be 42.", "42", "integer", True),
    FormCase("corrected in prose", r"So $\boxed{9}$. Correction: the total is 11.", "11", "numeric", True),
    FormCase("corrected in prose", "Final answer: 6. Let me fix that; the correct answer is 8.", "8", "math", True),
    FormCase("corrected in prose", "Final answer: 6. It should be checked once more.", "6", "math", True),
    FormCase("corrected in prose", "The answer is 40. Oops, I mis-added: it should be 42.", "40", "integer", False),
    FormCase("corrected in prose", r"So $\boxed{9}$. Correction: the total is 11.", "9", "numeric", False),
    FormCase("corrected in prose", "Final answer: 6. Let me fix that; the correct answer is 8.", "6", "math", False),
    # an error of its own named, then a new answer
    FormCase("error named, answer replaced", f"{_RETRACTED} so the result is 7.", "7", "integer", True),
    FormCase("error named, answer replaced", r"$\boxed{5}$. I made a mistake: the total is 7.", "7", "math", True),
    FormCase("error named, answer replaced", "The answer is 5. I've made an error before; it is 5.", "5", "math", True),
    FormCase("error named, answer replaced", f"{_RETRACTED} so the result is 7.", "5", "integer", False),
    FormCase("error named, answer replaced", "The answer is 5. Wait, I made an error.", "7", "numeric", False),
    FormCase("error named, answer replaced", "The result is 7. Then the answer is 5.", "7", "integer", False),
    # an arithmetic expression of a few hundred characters
    FormCase("long arithmetic", _box(" + ".join(str(i) for i in range(1, 121))), "7260", "integer", True),
    FormCase("long arithmetic", _box(r" \times ".join(["2"] * 40)), "1099511627776", "numeric", True),
    FormCase("long arithmetic", _box(" + ".join(str(i) for i in range(1, 151))), "11325", "math", True),
    FormCase("long arithmetic", _box(" + ".join(str(i) for i in range(1, 121))), "7261", "integer", False),
    FormCase("long arithmetic", _box(" + ".join([*(str(i) for i in range(1, 120)), "x"])), "7260", "numeric", False),
    FormCase("long arithmetic", _box(r" \times ".join(["9^{64}"] * 40)), "0", "integer", False),
    FormCase("long arithmetic", _box("+".join(["2"] * 1500)), "3000", "math", True),  # 2999 characters
    FormCase("long arithmetic", _box(" + ".join(str(i) for i in range(1, 1501))), "1125750", "integer", True),
    FormCase("long arithmetic", _box("+".join(["2"] * 1500)), "3001", "math", False),
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
