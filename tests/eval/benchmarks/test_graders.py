"""Graders: equivalent answers pass, near misses fail, and hostile responses fail fast without raising."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from eval.benchmarks.graders import (
    GRADERS,
    MAX_RESPONSE_CHARS,
    extract_final_answer,
    grade_integer,
    grade_math,
    grade_numeric,
)
from eval.benchmarks.loaders import load_benchmark


def _boxed(answer: str) -> str:
    return f"Let me work it out step by step. The final answer is $\\boxed{{{answer}}}$. I hope it is correct."


def test_every_math500_reference_grades_correct_against_itself(benchmarks_dir):
    problems = load_benchmark("math500", data_dir=benchmarks_dir)
    start = time.perf_counter()
    failures = [p.answer for p in problems if not grade_math(_boxed(p.answer), p.answer)]
    seconds = time.perf_counter() - start
    print(f"self-grading {len(problems)} MATH-500 references took {seconds:.1f} s")
    assert failures == []


def test_every_math500_worked_solution_grades_correct(benchmarks_dir):
    problems = load_benchmark("math500", data_dir=benchmarks_dir)
    assert [p.id for p in problems if not grade_math(p.solution, p.answer)] == []


def test_every_gsm8k_worked_solution_grades_correct(benchmarks_dir):
    problems = load_benchmark("gsm8k", data_dir=benchmarks_dir)
    assert [p.id for p in problems if not grade_numeric(p.solution, p.answer)] == []


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        (_boxed(r"\frac{1}{2}"), "1/2"),
        (_boxed("0.5"), r"\frac{1}{2}"),
        (_boxed("1/2"), r"\frac{1}{2}"),
        (_boxed(r"\dfrac{1}{2}"), r"\frac12"),
        (_boxed(r"\tfrac{1}{2}"), "0.5"),
        (_boxed("x=3"), "3"),
        (_boxed("3"), "x=3"),
        (_boxed(r"\left( 3, \frac{\pi}{2} \right)"), r"(3, \pi/2)"),
        (_boxed(r"\left[ 0, 1 \right)"), "[0,1)"),
        (_boxed(r"2\sqrt{2}"), r"\sqrt{8}"),
        (_boxed("1+x"), "x+1"),
        (_boxed(r"\{2, 1\}"), r"\{1, 2\}"),
        (_boxed(r"\text{Evelyn}"), r"\text{Evelyn}"),
        (_boxed(r"\text{(C)}"), r"\text{(C)}"),
        (_boxed(r"\$18.90"), "18.9"),
        (_boxed(r"10\%"), "10"),
        (_boxed("0.333333"), r"\frac{1}{3}"),
        (r"First \boxed{2}, but on reflection \boxed{\frac{3}{4}}", "0.75"),
        ("So the final answer is $\\frac{3}{4}$.", "3/4"),
        ("Answer: 3/4", "0.75"),
        ("Therefore, x equals $\\frac{3}{4}$.", "0.75"),  # no box or phrase: math-verify reads the text
    ],
)
def test_equivalent_forms_grade_correct(response, reference):
    assert grade_math(response, reference)


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("0.33", r"\frac{1}{3}"),
        ("-2", "2"),
        ("(2,1)", "(1,2)"),
        ("2", r"\sqrt{2}"),
        ("100", "10"),
        ("x-1", "x+1"),
        (r"\frac{1}{2}", r"\frac{1}{3}"),
        ("x=4", "3"),
        (r"\{1, 3\}", r"\{1, 2\}"),
        ("[0,1]", "[0,1)"),
        (r"\text{(D)}", r"\text{(C)}"),
        ("2x", "x^2"),
        (r"\pi", "3.14"),
    ],
)
def test_near_misses_grade_wrong(answer, reference):
    assert not grade_math(_boxed(answer), reference)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        (r"so \boxed{12}", "12"),
        (r"\boxed{1} then \boxed{\frac{a}{b}}", r"\frac{a}{b}"),
        (r"\boxed{ 3 }", "3"),
        (r"\fbox{7}", "7"),
        ("The final answer is 42. I hope it is correct.", "42"),
        ("The answer is $\\frac{1}{2}$.", r"\frac{1}{2}"),
        ("**Answer:** 70", "70"),
        ("Answer: \\(x = 2\\)", "x = 2"),
        ("She pays 5 + 13 = 18 dollars.\n#### 18", "18"),
        ("We get 1,234 apples in total.", "1234"),
        ("It costs $\\$5$ and then $12.50.", "12.50"),
        (r"The answer is 7. \boxed{8}", "8"),
        (r"The answer is 7. \boxed{8", None),
        (r"\boxed{}", None),
        ("no numbers here", None),
        ("", None),
    ],
)
def test_extract_final_answer(response, answer):
    assert extract_final_answer(response) == answer


def test_only_the_end_of_a_long_response_is_read():
    assert extract_final_answer(r"\boxed{1}" + " " * MAX_RESPONSE_CHARS) is None
    assert extract_final_answer("x" * 10 * MAX_RESPONSE_CHARS + r"\boxed{5}") == "5"


@pytest.mark.parametrize(
    ("response", "reference", "correct"),
    [
        (r"\boxed{025}", "25", True),
        (r"\boxed{25}", "25", True),
        (r"\boxed{25.0}", "25", True),
        ("The answer is 204 minutes.", "204", True),
        ("So she walks for 204 minutes in total.", "204", True),
        (r"\boxed{25.5}", "25", False),
        (r"\boxed{-25}", "25", False),
        (r"\boxed{\frac{50}{2}}", "25", False),
        (r"\boxed{(1, 25)}", "25", False),
        (r"\boxed{250}", "25", False),
        (r"\boxed{twenty-five}", "25", False),
    ],
)
def test_grade_integer(response, reference, correct):
    assert grade_integer(response, reference) is correct


@pytest.mark.parametrize(
    ("response", "reference", "correct"),
    [
        (r"\boxed{1,234}", "1234", True),
        (r"\boxed{1234}", "1234", True),
        ("#### 1,234", "1234", True),
        (r"\boxed{5.0}", "5", True),
        ("The answer is $18.", "18", True),
        (r"\boxed{\$18.00}", "18", True),
        (r"\boxed{18 \text{ dollars}}", "18", True),
        (r"\boxed{50\%}", "50", True),
        ("Janet makes 9 * 2 = $18 every day.", "18", True),
        (r"\boxed{1,234,567}", "1234567", True),
        (r"\boxed{-3}", "-3", True),
        (r"\boxed{17}", "18", False),
        (r"\boxed{18.5}", "18", False),
        (r"\boxed{-18}", "18", False),
        (r"\boxed{2 \text{ hours and } 30}", "30", False),
        ("no number at all", "18", False),
    ],
)
def test_grade_numeric(response, reference, correct):
    assert grade_numeric(response, reference) is correct


@pytest.mark.parametrize(
    ("response", "asserted"),
    [
        ("The answer is not 18.", None),
        ("The answer isn't 18.", None),
        ("The answer is 24, not 25.", "24"),
        ("The answer is 18 (not 19).", "18"),
        ("The answer is 7 rather than 9.", "7"),
    ],
)
def test_a_negated_final_answer_reads_only_the_asserted_value(response, asserted):
    assert extract_final_answer(response) == asserted
    for other in ("18", "24", "25", "19", "7", "9"):
        expected = other == asserted
        assert grade_integer(response, other) is expected and grade_numeric(response, other) is expected
        assert grade_math(response, other) is expected


@pytest.mark.parametrize("response", [r"\boxed{12.5\%}", r"The answer is 12.5\%.", "#### 12.5%", r"\boxed{12.5 \%}"])
def test_percentages_compare_as_their_numbers(response):
    assert grade_math(response, "12.5") and grade_numeric(response, "12.5")
    assert grade_math(response, r"12.5\%") and not grade_math(response, "12")


HOSTILE = {
    "huge": "9" * 5_000_000,
    "huge box": "\\boxed{" + "1" * 2_000_000 + "}",
    "deep braces in a box": "\\boxed{" + "{" * 3000 + "1" + "}" * 3000 + "}",
    "deep braces in math": "$" + "{" * 1000 + "1" + "}" * 1000 + "$",
    "deep parentheses": "The answer is " + "(" * 1000 + "4" + ")" * 1000,
    "unclosed box": "The answer is 3 \\boxed{3",
    "many unclosed boxes": "\\boxed{" * 3000,
    "empty box": "\\boxed{}",
    "junk": "\x00\xff\ud800\udfff \\\\\\ $$ \\boxed{\\frac{}{}} }}}{{{",
    "backslashes": "\\" * 100_000,
    "dollars": "$" * 100_000,
    "answer spam": "answer: " * 10_000,
    "power tower": r"\boxed{9^{9^{9^{9}}}}",
    "huge factorial": r"\boxed{(10^{10})!}",
}


@pytest.mark.parametrize("response", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_responses_fail_fast_without_raising(response):
    for grade in (grade_integer, grade_numeric):
        start = time.perf_counter()
        assert grade(response, "3") is False
        assert time.perf_counter() - start < 1.0
    start = time.perf_counter()
    assert grade_math(response, "3", timeout_seconds=1) is False
    assert time.perf_counter() - start < 3.5  # a few math-verify timeouts of 1 s at most


def test_deep_nesting_is_refused_quickly_even_without_a_timeout():
    start = time.perf_counter()
    assert grade_math("\\boxed{" + "{" * 40 + "3" + "}" * 40 + "}", "3", timeout_seconds=None) is False
    assert time.perf_counter() - start < 1.0


def test_grading_works_in_worker_threads():
    cases = [(_boxed(r"\frac{1}{2}"), "0.5", True), (_boxed("-2"), "2", False), (_boxed("(1,2)"), "(1,2)", True)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = list(pool.map(lambda case: grade_math(case[0], case[1]), cases))
    assert verdicts == [correct for _, _, correct in cases]


def test_graders_are_registered_by_kind():
    assert GRADERS == {"math": grade_math, "integer": grade_integer, "numeric": grade_numeric}
