"""Verifiers for the math benchmarks: (response text, reference answer) -> correct or not.

Every grader first finds the answer a response commits to (:func:`extract_final_answer`), reading
the whole response as a careful human would:

- The answer is the last *statement* of one: a ``\\boxed{...}``, an explicit "final answer" phrase
  ("The final answer is X", "Final answer: X") or a GSM8K marker (``#### X`` followed by a number;
  a markdown heading ``#### Step 2`` is not one), whichever comes last, so "Final answer: 6" after
  a box states 6. Without any, the last weaker phrase ("The answer is X", "Answer: X"); without
  that, a fallback. A phrase may carry an adverb ("The answer is therefore 12").
- Boxes on one line joined by commas, semicolons or "and" (``\\boxed{2}, \\boxed{3}``) state one list
  answer ("2, 3"). Boxes joined by "or" hedge between answers, and a hedged answer is wrong (no
  answer). Boxes back to back with no joining word: the last is the answer.
- An empty box with a statement after it is the format instruction quoted, not a statement.
- A statement followed, before any later one, by its retraction ("that is wrong", "scratch that",
  "this answer is incorrect") states nothing: the response has no answer. After a retraction, or
  with a revision word just before it ("on reflection the answer is really 6"), a later "the answer
  is X" replaces a box or final-answer phrase. A later correction in prose replaces any statement: "it
  (the answer, the total, ...) should be X", "Correction: ... is X", "the correct answer is X", and a new
  answer or result stated after the response names an error of its own ("Wait, I made an arithmetic error:
  ... so the result is 7"); an error named with no new answer after it leaves the answer as it was.
- A box's content loses a sentence's closing punctuation (``\\boxed{42.}``, ``\\boxed{x = 5;}``); a
  sentence written in a box (``\\boxed{\\text{The answer is } 12.}``) states what its answer phrase
  states, and a negating one without a phrase states nothing.
- A negation removes what it negates, not the rest: "24, not 25" states 24, "not 18 but 24"
  states 24, "not 18." states nothing; a remark after the answer (", which is not even") is not
  part of it.

Answers and references are compared in their plain form (:mod:`eval.benchmarks.answer_forms`: Unicode
digits and symbols, one-cell arrays, numbers in words; inequalities as intervals for ``grade_math``,
arithmetic expressions by their value for the other two).

The graders differ in how that answer is compared with the reference:

- :func:`grade_math` (MATH-500): mathematical equivalence, decided by math-verify (SymPy), so
  ``\\frac{1}{2}``, ``0.5`` and ``1/2`` agree and ``x=3`` matches ``3``. Without a box or phrase it
  lets math-verify find the answer in the text itself.
- :func:`grade_integer` (AIME, AMC): the answer must be an integer equal to the reference
  (``025`` is 25; ``25.5`` is wrong).
- :func:`grade_numeric` (GSM8K): numeric equality after dropping ``$``, thousands separators and
  units (``1,234`` is 1234, ``5.0`` is 5, ``1/2`` is one half, ``1e3`` is 1000).

A percentage equals the reference read either as its number (12.5 % = 12.5) or as its fraction
(50 % = 1/2), as math-verify allows. Graders never raise: a malformed response is wrong. They read
responses of up to :data:`MAX_RESPONSE_CHARS` characters whole (of a longer one, its last
:data:`MAX_RESPONSE_CHARS`, where its answer is), in time linear in its length, and refuse answers longer than
:data:`MAX_ANSWER_CHARS` (an arithmetic expression of numbers, up to
:data:`~eval.benchmarks.answer_forms.MAX_ARITHMETIC_CHARS`, is compared by its value) or nested deeper than
:data:`MAX_BRACKET_DEPTH`. Beyond that, :func:`grade_math`'s time is bounded by math-verify's
timeouts, which use ``signal.alarm`` and so work only in a process's main thread: grade in a
process pool rather than a thread pool when responses may be hostile (in a thread the timeout is
switched off, and an answer such as ``9^{9^{9^{9}}}`` can keep SymPy busy indefinitely).
"""

from __future__ import annotations

import bisect
import logging
import re
import threading
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, wraps

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException

from eval.benchmarks.answer_forms import arithmetic_value, as_interval, plain_form

logger = logging.getLogger(__name__)

MAX_RESPONSE_CHARS = 1_000_000
"""Characters read of a response (about 250 k tokens): all of it, or the end of a longer one."""
MAX_ANSWER_CHARS = 2000
"""Longest stated answer handed to math-verify, whose parsing cost grows with length."""
UNSTATED_SEARCH_CHARS = 4000
"""Without any statement of an answer, :func:`grade_math` lets math-verify look for one in this
many characters at the end of the response (its search slows down with length)."""
MAX_BRACKET_DEPTH = 10
"""Deepest bracket nesting handed to math-verify: real answers stay under 5, and its LaTeX parser
slows down steeply with depth (a 16-deep ``{{...}}`` takes seconds)."""
DEFAULT_TIMEOUT_SECONDS = 5
"""math-verify's limit for one parse and for one comparison (main thread only)."""

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ADVERB = r"(?:(?:therefore|thus|hence|then|so|clearly|simply|just|indeed|exactly|now|really|actually)\b,?\s*)?"
_PHRASE_END = rf"(?:\*\*)?\s*(?:is\b(?!')\s*:?|:|(?=isn't\b))\s*{_ADVERB}(?P<span>[^\n]*?)(?=\.(?:\s|$)|\n|$)"
_FINAL_PHRASE = re.compile(
    rf"\bfinal\s+answer\b{_PHRASE_END}|^[ \t]*####[ \t]*(?P<marked>[-+$\\\d.][^\n]*)", re.IGNORECASE | re.MULTILINE
)
_ANSWER_PHRASE = re.compile(rf"\banswer\b{_PHRASE_END}", re.IGNORECASE)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NEGATION_WORD = r"(?:not|isn't|is not|rather than|instead of)\b"
_NEGATED = re.compile(rf"(?:^|(?<=[\s,;(])){_NEGATION_WORD}(?:(?!\bbut\b)[^,;()])*", re.IGNORECASE)
_NEGATION = re.compile(rf"(?:^|[\s,;(]){_NEGATION_WORD}", re.IGNORECASE)
_CONNECTIVES = re.compile(r"^(?:[\s,;()]|\bbut\b|\bit\s+is\b|\bit's\b|\bso\b|\brather\b)+", re.IGNORECASE)
_LIST_JOIN = re.compile(r"^(?=.*(?:[,;]|\band\b))[\s$,;]*(?:\band\b)?[\s$,;]*$", re.IGNORECASE | re.DOTALL)
_REMARK = re.compile(r",\s*(?:which|where|since|because|as|so that)\b.*$", re.IGNORECASE | re.DOTALL)
_REVISION = re.compile(
    r"\b(?:actually|really|on (?:second thought|reflection)|correction|in fact|instead)\b", re.IGNORECASE
)
_REVISION_REACH = 60
"""Characters before a later "the answer is" in which a revision word ("on reflection") makes it replace a box."""
_ALTERNATIVES = re.compile(r"\s+or\s+", re.IGNORECASE)
_HEDGE_JOIN = re.compile(r"^[\s$,;]*(?:\beither\b)?[\s$,;]*\bor\b[\s$,;]*(?:\bmaybe\b)?[\s$,;]*$", re.IGNORECASE)
_RETRACTION = re.compile(
    r"\b(?:scratch that|(?:that|this|the(?: above| previous| final)? answer|my answer)\s+(?:is|was)\s+"
    r"(?:wrong|incorrect|not (?:right|correct)|a mistake))\b",
    re.IGNORECASE,
)
_CORRECTION_PHRASE = re.compile(
    r"(?:\b(?:it|that|this|the\s+(?:final\s+)?(?:answer|result|total|sum|value))\s+should\s+(?:be|have\s+been)\b"
    r"|\bcorrection\s*:[^\n.]{0,60}?\bis\b|\bcorrect(?:ed)?\s+(?:answer|result|total|sum|value)\s+is\b)"
    rf"\s*:?\s*{_ADVERB}(?P<span>[-+$\\\d(][^\n]*?)(?=\.(?:\s|$)|\n|$)",
    re.IGNORECASE,
)
_NAMED_ERROR = re.compile(r"\bI(?:\s+have|'ve)?\s+made\s+an?\s+(?:[a-z]+\s+){0,2}?(?:error|mistake)\b", re.IGNORECASE)
_RESULT_PHRASE = re.compile(rf"\b(?:answer|result|total|sum|value)\b{_PHRASE_END}", re.IGNORECASE)
_NAMED_ERROR_REACH = 400
"""Characters before "the result is X" in which "I made an arithmetic error" makes it replace what came before."""
_BOX_CLOSING_PUNCTUATION = re.compile(r"(?:\s*(?:[.;,]|\\text\{\s*[.;,]\s*\}))+$")
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{2,}\b")
_TRAILING_PERCENT = re.compile(r"\s*\\?%$")
_INTEGER = re.compile(r"[-+]?[0-9]+")
_MATH_DELIMITERS = re.compile(r"^(?:\\\(|\\\[)|(?:\\\)|\\\])$")
_THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_LATEX_NOISE = re.compile(r"\\[,!;: ]|\\\$|\$|\\%|%|~")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?(?:/(?:\d+(?:\.\d+)?|\.\d+))?")


def _never_raises(grader: Callable[..., bool]) -> Callable[..., bool]:
    """A grader that answers False where it would raise: a malformed response is simply wrong, and an
    exception would abort a whole training step or evaluation."""

    @wraps(grader)
    def guarded(response: str, reference: str, *args, **kwargs) -> bool:
        try:
            return bool(grader(response, reference, *args, **kwargs))
        except (Exception, TimeoutException):  # math-verify's TimeoutException is a BaseException
            logger.debug("grading failed; counted as wrong", exc_info=True)
            return False

    return guarded


def _readable(response: str) -> str:
    """What is read of the response: its last :data:`MAX_RESPONSE_CHARS` characters (all of it, but for a response
    longer than that: its answer is at its end, and slicing the end costs nothing)."""
    return response[-MAX_RESPONSE_CHARS:]


def _boxes(text: str) -> list[tuple[int, int, str | None]]:
    """Every ``\\boxed{...}`` as (start, end, content); content None for one never closed (the response
    was cut off while writing it), which then ends the list."""
    found: list[tuple[int, int, str | None]] = []
    position = 0
    while (opening := _BOX_OPENING.search(text, position)) is not None:
        depth, cursor = 1, opening.end()
        while depth and cursor < len(text):
            depth += {"{": 1, "}": -1}.get(text[cursor], 0)
            cursor += 1
        if depth:
            found.append((opening.start(), len(text), None))
            break
        found.append((opening.start(), cursor, text[opening.end() : cursor - 1].strip()))
        position = cursor
    return found


def _tidy_span(span: str) -> str:
    """The answer in the rest of a final-answer line: up to the end of its sentence, without a remark about it
    ("21, which is not even" states 21), without what a negation negates ("24, not 25" states 24; "not 18 but
    24" states 24; "not 18" nothing), the markdown emphasis, math delimiters and closing period around it."""
    span = _REMARK.sub("", _SENTENCE_END.split(span, maxsplit=1)[0])
    span = _CONNECTIVES.sub("", _NEGATED.sub("", span)).replace("()", "")
    span = span.strip(" \t*,;").rstrip(".").strip(" $")
    return _MATH_DELIMITERS.sub("", span).strip()


def _phrase_statements(pattern: re.Pattern[str], text: str) -> list[tuple[int, int, str]]:
    """(start, end, answer) of every phrase of ``pattern`` that states an answer or only negates one (""); the
    statement ends with its sentence."""
    found = []
    for match in pattern.finditer(text):
        group = "span" if match.group("span") is not None else "marked"
        raw = match.group(group)
        span = _tidy_span(raw)
        if span or _NEGATION.search(raw):
            sentence = _SENTENCE_END.split(raw, maxsplit=1)[0]
            found.append((match.start(), match.start(group) + len(sentence), span))
    return found


def _box_answers(text: str, boxes: list[tuple[int, int, str | None]], last: int) -> list[str]:
    """The alternatives stated by box ``last`` with the boxes before it on its line: boxes joined by
    commas or "and" state one list ("2, 3"); boxes joined by "or" are alternatives."""
    alternatives, joined = [], [_box_content(boxes[last][2] or "")]
    for index in range(last, 0, -1):
        gap = text[boxes[index - 1][1] : boxes[index][0]]
        if "\n" in gap or boxes[index - 1][2] is None:
            break
        if _HEDGE_JOIN.match(gap):
            alternatives.insert(0, ", ".join(joined))
            joined = []
        elif not _LIST_JOIN.match(gap):
            break
        joined.insert(0, _box_content(boxes[index - 1][2] or ""))
    return [", ".join(joined), *alternatives]


def _box_content(content: str) -> str:
    """What a box states: its content without the closing punctuation of a sentence (``42.``, ``x = 5;``); of a
    sentence written in the box (three words or more: ``\\text{The answer is } 12.``), what its answer phrase
    states, and nothing when it negates without one (``\\text{The answer is not } 12``)."""
    content = _BOX_CLOSING_PUNCTUATION.sub("", content)
    prose = _TEXT_COMMAND.sub(r" \1 ", content)
    if len(_WORD.findall(prose)) < 3:
        return content
    stated = _phrase_statements(_FINAL_PHRASE, prose) + _phrase_statements(_ANSWER_PHRASE, prose)
    if stated:
        return max(stated, key=lambda statement: statement[0])[2]
    return "" if _NEGATION.search(prose) else content


def _stated_answers(text: str) -> list[str] | None:
    """The alternatives the text's last statement of an answer offers (see the module's docstring):
    one for a committed answer, several for a hedge, none for an empty, unclosed, negated-only or
    retracted one (then there is no fallback either); None when the text states no answer."""
    boxes = _boxes(text)
    strong = [(start, end, "", index) for index, (start, end, _) in enumerate(boxes)]
    strong += [(start, end, answer, None) for start, end, answer in _phrase_statements(_FINAL_PHRASE, text)]
    weak = [(start, end, answer, None) for start, end, answer in _phrase_statements(_ANSWER_PHRASE, text)]
    strong = [  # an empty box with a statement after it is the format instruction quoted, not an answer
        statement
        for statement in strong
        if not (statement[3] is not None and boxes[statement[3]][2] == "")
        or not any(other[0] >= statement[1] for other in strong + weak)
    ]
    if strong:
        last = max(strong, key=lambda statement: statement[0])
        weak = [statement for statement in weak if statement[2] and _replaces(text, last[1], statement)]
    corrections = [(start, end, answer, None) for start, end, answer in _phrase_statements(_CORRECTION_PHRASE, text)]
    errors = [match.end() for match in _NAMED_ERROR.finditer(text)]
    if errors:  # an error named, then a new answer stated: "I made an arithmetic error: ... the result is 7"
        results = _phrase_statements(_RESULT_PHRASE, text)
        corrections += [(start, end, answer, None) for start, end, answer in results if _named_before(errors, start)]
    statements = strong + weak + [statement for statement in corrections if statement[2]]
    if not statements:
        return None
    _, end, answer, box = max(statements, key=lambda statement: statement[0])
    alternatives = _box_answers(text, boxes, box) if box is not None else _ALTERNATIVES.split(answer)
    if _RETRACTION.search(text, end) or not all(alternatives):
        return []
    return alternatives


def _named_before(errors: list[int], start: int) -> bool:
    """Whether an error is named (its phrase ending at one of the sorted ``errors``) within reach before ``start``."""
    index = bisect.bisect_right(errors, start)
    return index > 0 and start - errors[index - 1] <= _NAMED_ERROR_REACH


def _replaces(text: str, after: int, statement: tuple[int, int, str, int | None]) -> bool:
    """Whether a later "the answer is X" replaces the box or final answer that ends at ``after``: a retraction
    comes between them, or a revision word ("on reflection", "actually", "really") comes just before X."""
    start, end = statement[0], statement[1]
    if start < after:
        return False
    retracted = _RETRACTION.search(text, after, start) is not None
    return retracted or _REVISION.search(text, max(after, start - _REVISION_REACH), end) is not None


def _plain_numbers(text: str) -> list[str]:
    """Every number in ``text`` once currency signs, LaTeX spacing and thousands separators are gone."""
    text = text.replace("{,}", ",").replace("\u2212", "-")
    text = _THOUSANDS_SEPARATOR.sub("", _LATEX_NOISE.sub("", text))
    return _NUMBER.findall(text)


def extract_final_answer(response: str) -> str | None:
    """The final answer a response commits to, as text, or None when it has none.

    The last statement of an answer (see the module's docstring), else the last number in the text.
    A response whose last statement is empty, unclosed, hedged or retracted has no answer. These
    strings are also the votes of :func:`eval.benchmarks.metrics.maj_at_k`. (:func:`grade_math` does
    not take the last number: without a statement it lets math-verify read the end of the text.)
    """
    return " or ".join(_final_alternatives(response)) or None


def _final_alternatives(response: str) -> list[str]:
    """The alternatives a response's final answer offers (one unless it hedges), none when it has no answer."""
    text = _readable(response)
    stated = _stated_answers(text)
    if stated is not None:
        return stated
    numbers = _plain_numbers(text)
    return numbers[-1:]


def _bracket_depth(text: str) -> int:
    """Deepest nesting of (), [] and {} in ``text``; closers without an opener are ignored."""
    depth = deepest = 0
    for character in text:
        if character in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "})]":
            depth = max(depth - 1, 0)
    return deepest


def _usable_timeout(seconds: int | None) -> int | None:
    """``seconds`` in the main thread; None elsewhere, where math-verify's ``signal.alarm`` would raise."""
    return seconds if threading.current_thread() is threading.main_thread() else None


@lru_cache(maxsize=4096)
def _parse_latex_answer(answer: str, timeout_seconds: int | None) -> tuple:
    """An answer string (reference or extracted) parsed by math-verify: SymPy form and/or normalised text.

    Both sides go through this one function, boxed the same way, so a reference is never read
    differently from an identical prediction. Cached because a reference is graded against every
    sample of its group.
    """
    # Boxing rather than $...$ keeps answers that contain "$" (such as "\$18.90") whole.
    return tuple(
        parse(
            f"\\boxed{{{answer}}}",
            extraction_config=[LatexExtractionConfig()],
            fallback_mode="first_match",
            parsing_timeout=timeout_seconds,
        )
    )


def _readings(answer: str, timeout_seconds: int | None) -> list[tuple]:
    """The ways an answer may be meant, in its plain form (:func:`~eval.benchmarks.answer_forms.plain_form`):
    itself; for a percentage its number (12.5\\% = 12.5) and its fraction (50\\% = 1/2); for an inequality
    or set-builder set in one variable, the interval it describes."""
    answer = plain_form(answer)
    number = _TRAILING_PERCENT.sub("", answer)
    readings = [number] if number == answer else [number, f"\\frac{{{number}}}{{100}}"]
    interval = as_interval(answer)
    return [_parse_latex_answer(reading, timeout_seconds) for reading in [*readings, *([interval] if interval else [])]]


@_never_raises
def grade_math(response: str, reference: str, timeout_seconds: int | None = DEFAULT_TIMEOUT_SECONDS) -> bool:
    """Whether ``response``'s final answer is mathematically equivalent to ``reference`` (LaTeX).

    The answer is the last box or final-answer phrase (see :func:`extract_final_answer`); when the
    response states neither, math-verify's own extraction searches the text (LaTeX, then plain
    expressions). Equivalence is math-verify's: numeric to 6 decimals when a float is involved,
    else symbolic; tuples are ordered, sets are not.

    timeout_seconds: math-verify's limit per parse and per comparison. It relies on
    ``signal.alarm``, so it is applied only in the main thread and ignored in worker threads (there,
    bound the time yourself, e.g. with a process pool); it also replaces any alarm the caller set.
    None turns it off.
    """
    timeout_seconds = _usable_timeout(timeout_seconds)
    text = _readable(response)
    stated = _stated_answers(text)
    if stated and any(len(answer) > MAX_ANSWER_CHARS for answer in stated):  # too long to parse: only arithmetic
        expected = _as_number(reference)
        return expected is not None and all(arithmetic_value(answer) == expected for answer in stated)
    expected = _exact_value(reference)
    values = [_exact_value(answer) for answer in stated or []]
    if expected is not None and values and None not in values:  # math-verify's symbolic answer, without its parse
        return all(value == expected for value in values)
    golds = [gold for gold in _readings(reference, timeout_seconds) if gold]
    if not golds:
        return False
    searched = [text[-UNSTATED_SEARCH_CHARS:]] if stated is None else stated
    if not searched or any(len(s) > MAX_ANSWER_CHARS or _bracket_depth(s) > MAX_BRACKET_DEPTH for s in searched):
        return False
    if stated is None:
        readings = [
            [
                parse(
                    searched[0],
                    extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()],
                    fallback_mode="first_match",
                    parsing_timeout=timeout_seconds,
                )
            ]
        ]
    else:
        readings = [[list(reading) for reading in _readings(answer, timeout_seconds)] for answer in stated]
    return all(  # a hedge is right only when every alternative is (the same answer said twice)
        any(
            verify(list(gold), predicted, timeout_seconds=timeout_seconds)
            for gold in golds
            for predicted in predictions
            if predicted
        )
        for predictions in readings
    )


def _exact_value(answer: str) -> Fraction | None:
    """The exact value of an integer or of arithmetic of integers (``1 + 2 + ... + 150``, ``\\frac{3}{4}``), on which
    math-verify's comparison is symbolic, hence exact; None for anything else, a decimal point included (math-verify
    compares floats to 6 decimals)."""
    plain = plain_form(answer).strip().strip("$").rstrip(".").strip()
    if "." in plain:
        return None
    return Fraction(plain) if _INTEGER.fullmatch(plain) else arithmetic_value(plain)


def _as_number(answer: str | None) -> Fraction | None:
    """The one number an answer holds (words and units around it allowed), in its plain form (a number in words,
    Unicode digits), or the value of an arithmetic expression of numbers; None otherwise."""
    if answer is None:
        return None
    plain = plain_form(answer)
    numbers = _plain_numbers(plain)
    return Fraction(numbers[0]) if len(numbers) == 1 else arithmetic_value(plain)


@_never_raises
def grade_integer(response: str, reference: str) -> bool:
    """Whether ``response``'s final answer is an integer equal to ``reference`` (AIME, AMC).

    Leading zeros and a zero fractional part are fine (``025``, ``25.0``); any other value, a
    fraction, or an answer holding more than one number (a tuple, an expression) is wrong.
    """
    expected = _as_number(reference)
    values = [_as_number(answer) for answer in _final_alternatives(response)]
    return bool(values) and all(v is not None and v.denominator == 1 and v == expected for v in values)


@_never_raises
def grade_numeric(response: str, reference: str) -> bool:
    """Whether ``response``'s final answer is the number ``reference`` (GSM8K), compared exactly.

    ``$``, thousands separators, units and a closing period are ignored, so ``\\$1,234.`` is
    1234 and ``5.0`` is 5; a percentage is its number or its fraction (50 % is 50 or 1/2); an
    answer holding more than one number is wrong.
    """
    expected = _as_number(reference)

    def right(answer: str) -> bool:
        value = _as_number(answer)
        if value is None or expected is None:
            return False
        return value == expected or (
            _TRAILING_PERCENT.search(answer.rstrip(" .")) is not None and value / 100 == expected
        )

    alternatives = _final_alternatives(response)
    return bool(alternatives) and all(right(answer) for answer in alternatives)


GRADERS: dict[str, Callable[[str, str], bool]] = {
    "math": grade_math,
    "integer": grade_integer,
    "numeric": grade_numeric,
}
"""Grader kind (as named in :data:`eval.benchmarks.loaders.BENCHMARKS`) -> verifier."""
