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


def test_the_whole_response_is_read_and_a_later_log_does_not_replace_a_stated_answer():
    log = "\nstep 7 took 12 ms" * 2000  # 36 k characters after the answer
    assert extract_final_answer(r"The final answer is \boxed{5}." + log) == "5"
    assert grade_numeric("So the answer is 5." + log, "5") and grade_math("So the answer is 5." + log, "5")
    assert extract_final_answer(r"\boxed{1}" + " " * 100_000) == "1"
    assert extract_final_answer("x" * (MAX_RESPONSE_CHARS - 9) + r"\boxed{5}") == "5"
    assert extract_final_answer("x" * MAX_RESPONSE_CHARS + r"\boxed{5}") == "5"  # its end is read
    assert extract_final_answer(r"\boxed{5}" + "x" * MAX_RESPONSE_CHARS) is None  # past what is read


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        (r"\boxed{5}. Final answer: 6", "6"),  # an explicit final answer after a box is the last word
        (r"Final answer: 6. Check: \boxed{6}", "6"),
        (r"\boxed{3} or \boxed{4}", "3 or 4"),  # a hedge: right only where every alternative is
        (r"It is either $\boxed{3}$ or $\boxed{4}$.", "3 or 4"),
        (r"\boxed{2}, \boxed{3}", "2, 3"),  # a list spread over boxes
        (r"$\boxed{2}$ and $\boxed{3}$", "2, 3"),
        (r"First \boxed{2}, but on reflection \boxed{3}", "3"),  # a revision, not a hedge
        (r"\boxed{2}" + "\n" + r"\boxed{3}", "3"),  # on separate lines: the later one
        (r"\boxed{5}. Wait, that is wrong.", None),  # retracted
        (r"\boxed{5}. Hmm, my answer was incorrect.", None),
        (r"\boxed{5}. Scratch that: \boxed{6}", "6"),
        (r"\boxed{B}. Option A is incorrect because it is negative.", "B"),  # not a retraction of the answer
        ("The answer is therefore 12.", "12"),  # an adverb after "is"
        ("The final answer is thus $\\frac{1}{2}$.", r"\frac{1}{2}"),
        ("The answer is not 18 but 24.", "24"),  # the negation removes what it negates only
        ("The answer is not 18; it is 24.", "24"),
        ("#### Step 2: add them\nThey have 7 apples.", "7"),  # a markdown heading is no answer marker
        ("They have 7 apples.\n#### 7", "7"),
    ],
)
def test_statements_are_read_as_a_careful_reader_would(response, answer):
    assert extract_final_answer(response) == answer


@pytest.mark.parametrize(
    "response",
    [r"\boxed{3} or \boxed{4}", r"It is either $\boxed{4}$ or $\boxed{3}$.", "The final answer is 3 or 4.", "#### 3 or 4"],
)
def test_a_hedged_answer_is_wrong_unless_every_alternative_is_right(response):
    for grade in (grade_math, grade_integer, grade_numeric):
        assert not grade(response, "3") and not grade(response, "4")
    assert grade_math(r"\boxed{15\frac{39}{40}}, or $\boxed{\frac{639}{40}}$ inches.", r"\frac{639}{40}")


def test_integer_arithmetic_is_compared_exactly_without_math_verifys_parse(monkeypatch):
    sum_to_150 = " + ".join(str(n) for n in range(1, 151))  # 11325: parsed by math-verify, a second of sympy
    monkeypatch.setattr("eval.benchmarks.graders.parse", lambda *args, **kwargs: pytest.fail("math-verify parsed"))
    assert grade_math(_boxed(sum_to_150), "11325") and not grade_math(_boxed(sum_to_150), "11326")
    assert grade_math(_boxed(r"\frac{3}{4} + \frac{1}{4}"), "1") and grade_math(_boxed("2^{10}"), r"\frac{2048}{2}")


def test_decimals_keep_math_verifys_comparison_to_six_places():
    assert grade_math(_boxed("0.3333333"), r"\frac{1}{3}") and not grade_math(_boxed("0.33"), r"\frac{1}{3}")


def test_a_percentage_matches_its_number_or_its_fraction_and_gsm8k_numbers_keep_their_form():
    assert grade_math(r"\boxed{50\%}", r"\frac{1}{2}") and grade_math(r"\boxed{50\%}", "50")
    assert grade_math(r"\boxed{\frac{1}{2}}", r"50\%") and not grade_math(r"\boxed{50\%}", "5")
    assert grade_numeric(r"\boxed{50\%}", "0.5") and grade_numeric(r"\boxed{50\%}", "50")
    assert not grade_numeric(r"\boxed{50}", "0.5")  # only a percentage is also read as a fraction
    assert grade_numeric(r"\boxed{1/2}", "0.5") and grade_numeric("#### 1e3", "1000")
    assert grade_numeric("The answer is 3/4 of a cup.", "0.75") and not grade_numeric("The answer is 3/4.", "3")


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
        (r"\boxed{\frac{50}{2}}", "25", True),  # an arithmetic expression of the value
        (r"\boxed{\frac{51}{2}}", "25", False),
        (r"\boxed{(1, 25)}", "25", False),
        (r"\boxed{250}", "25", False),
        (r"\boxed{twenty-five}", "25", True),  # the number in words
        (r"\boxed{twenty-six}", "25", False),
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


@pytest.mark.serial  # within its seconds
@pytest.mark.parametrize("response", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_responses_fail_fast_without_raising(response):
    for grade in (grade_integer, grade_numeric):
        start = time.perf_counter()
        assert grade(response, "3") is False
        assert time.perf_counter() - start < 1.0
    start = time.perf_counter()
    assert grade_math(response, "3", timeout_seconds=1) is False
    assert time.perf_counter() - start < 3.5  # a few math-verify timeouts of 1 s at most


@pytest.mark.serial  # within a second
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
