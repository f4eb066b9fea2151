"""Answers in other forms of the same object, and statements a careful reader follows: every case of
``eval.benchmarks.form_cases`` graded as a reader would, the forms' conversions by hand, the cost bounded in
the response's length, and the reward path grading as evaluation does."""

import random
import time
from collections import Counter
from fractions import Fraction

import pytest

from eval.benchmarks.answer_forms import arithmetic_value, as_interval, plain_form
from eval.benchmarks.form_cases import FORM_CASES
from eval.benchmarks.graders import GRADERS, extract_final_answer
from eval.benchmarks.loaders import BENCHMARKS
from eval.benchmarks.suites import SUITES, benchmark_verifier
from eval.tasks.records import Problem
from eval.tasks.sources import problem_list_task


@pytest.mark.serial  # each within a second
@pytest.mark.parametrize("case", FORM_CASES, ids=[f"{c.form}-{i}" for i, c in enumerate(FORM_CASES)])
def test_each_form_is_graded_as_a_careful_reader_grades_it(case):
    started = time.perf_counter()
    assert GRADERS[case.grader](case.response, case.reference) is case.correct
    assert time.perf_counter() - started < 1.0


def test_every_form_has_cases_to_credit_and_cases_to_refuse():
    credits = Counter(case.form for case in FORM_CASES if case.correct)
    refusals = Counter(case.form for case in FORM_CASES if not case.correct)
    assert set(credits) == set(refusals) and len(credits) == 19
    assert all(credits[form] >= 3 and refusals[form] >= 3 for form in credits)


@pytest.mark.parametrize(
    ("answer", "plain"),
    [
        (r"\text{seven}", "7"),
        ("Twenty-One", "21"),
        ("one hundred and five", "105"),
        ("minus seven", "-7"),
        ("seven apples", "seven apples"),
        ("and seven", "and seven"),
        ("７", "7"),
        ("٤٢", "42"),
        ("√3", r"\sqrt{3}"),
        ("2√(x+1)", r"2\sqrt{x+1}"),
        ("∛8", r"\sqrt[3]{8}"),
        ("∅", r"\emptyset"),
        (r"\varnothing", r"\emptyset"),
        ("x²", "x^{2}"),
        ("a₁₂", "a_{12}"),
        ("3½", r"3+\frac{1}{2}"),
        ("−4", "-4"),
        (r"\begin{pmatrix} 5 \end{pmatrix}", "5"),
        (r"\begin{array}{c} \frac{1}{2} \\ \end{array}", r"\frac{1}{2}"),
        (r"\begin{pmatrix} 5 & 0 \end{pmatrix}", r"\begin{pmatrix} 5 & 0 \end{pmatrix}"),
        (r"\frac{1}{2}", r"\frac{1}{2}"),
        (r"1\,000\,000", "1000000"),
        (r"1\ 234.5", "1234.5"),
        (r"12~345", "12345"),
        (r"1\,2345", r"1\,2345"),  # not a group of three: left as it is
        (r"(1,\ 234)", r"(1,\ 234)"),  # a list with a space, not a digit group
        ("1.5 x 10^6", r"1.5 \times 10^6"),
        (r"6 X 10^{2}", r"6 \times 10^{2}"),
        (r"1.2\text{e}-3", r"1.2 \times 10^{-3}"),
        ("x + 10^2", "x + 10^2"),
    ],
)
def test_plain_forms_by_hand(answer, plain):
    assert plain_form(answer) == plain


@pytest.mark.parametrize(
    ("answer", "interval"),
    [
        (r"x \ge 3", r"[3, \infty)"),
        (r"x\geq 3", r"[3, \infty)"),
        ("x > 3", r"(3, \infty)"),
        ("x < 2", r"(-\infty, 2)"),
        (r"x \le -1", r"(-\infty, -1]"),
        ("3 <= x", r"[3, \infty)"),
        (r"-1 < x \le 4", "(-1, 4]"),
        (r"4 \ge x > -1", "(-1, 4]"),
        (r"\{x \mid x \ge 3\}", r"[3, \infty)"),
        (r"\{t : 0 < t < 1\}", "(0, 1)"),
        (r"\{x \in \mathbb{R} \mid x < 0\}", r"(-\infty, 0)"),
        ("x ≤ 5", r"(-\infty, 5]"),
        ("x < y", None),
        (r"\{x \mid y > 0\}", None),
        ("1 < x > 3", None),
        (r"x \ge 3 \text{ or } x < 1", None),
        ("x = 3", None),
        ("[3, 4)", None),
    ],
)
def test_inequalities_as_intervals_by_hand(answer, interval):
    assert as_interval(answer) == interval


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        (r"3 \times 4 + 2", Fraction(14)),
        (r"\frac{50}{2}", Fraction(25)),
        (r"\dfrac{1}{3} + \frac{1}{6}", Fraction(1, 2)),
        ("2^{10} - 24", Fraction(1000)),
        (r"\left(1 + 2\right) \cdot 3", Fraction(9)),
        (r"6 \div 4", Fraction(3, 2)),
        ("-(2 + 3)", Fraction(-5)),
        ("7", None),  # a number, not an expression
        ("2, 3", None),
        ("x + 1", None),
        ("9^{9^{9}}", None),  # too large to be an answer
        ("1/0", None),
        ("2 ** 3", Fraction(8)),
    ],
)
def test_arithmetic_values_by_hand(answer, value):
    assert arithmetic_value(answer) == value


def test_the_forms_never_raise_on_random_text():
    alphabet = "0123456789 +-*/^().,{}[]<>=|:\\abcfrxtimesqrt√∅≤≥²½７٤πe&"
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        plain_form(text), as_interval(text), arithmetic_value(text)
        for grade in GRADERS.values():
            grade(f"The final answer is $\\boxed{{{text}}}$.", text)


@pytest.mark.serial  # within a second
@pytest.mark.parametrize(
    "response",
    [
        "We keep going. " * 700_000 + r"The final answer is $\boxed{5}$.",  # 10.5 MB
        r"\boxed{" * 300_000 + "5" + "}" * 300_000,
        r"\boxed{" * 300_000 + "5",
        "{" * 500_000 + r"\boxed{5}",
        "The answer is " + "(" * 500_000 + "5",
        "Final answer: " + r"\sqrt{" * 200_000,
    ],
    ids=["10 MB", "deep boxes", "unclosed boxes", "open braces", "open parentheses", "deep roots"],
)
def test_a_long_or_deeply_nested_response_is_graded_within_a_second(response):
    for grade in GRADERS.values():
        started = time.perf_counter()
        grade(response, "5")
        assert time.perf_counter() - started < 1.0, grade.__name__
    if response.startswith("We keep"):
        assert GRADERS["numeric"](response, "5") and GRADERS["math"](response, "5")


def test_a_runs_reward_and_its_evaluation_grade_with_one_function():
    for name, spec in BENCHMARKS.items():
        if spec.grader in GRADERS:
            assert benchmark_verifier(name) is GRADERS[spec.grader]
            assert SUITES[name].grader == f"eval.benchmarks.graders.{benchmark_verifier(name).__name__}"
    verifier = benchmark_verifier("gsm8k")
    cases = [case for case in FORM_CASES if case.grader == "numeric" and len(case.response) < 10_000]
    problems = [Problem(id=str(i), prompt="", answer=case.reference) for i, case in enumerate(cases)]
    task = problem_list_task(problems, {}, verifier)
    judged = SUITES["gsm8k"].judge(problems, [case.response for case in cases])
    assert task.verifier is verifier
    assert [correct for _, correct in judged] == [task.verifier(c.response, c.reference) for c in cases]
    assert [correct for _, correct in judged] == [case.correct for case in cases]
    assert [answer for answer, _ in judged] == [extract_final_answer(case.response) for case in cases]
    with pytest.raises(ValueError, match="graded by running code"):
        benchmark_verifier("humaneval")
