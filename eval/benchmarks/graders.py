"""Verifiers for the math benchmarks: (response text, reference answer) -> correct or not.

Every grader first finds the answer a response commits to (:func:`extract_final_answer`): its last
``\\boxed{...}``, else its last final-answer phrase ("The final answer is X", "Answer: X",
"#### X"), else a fallback. The graders differ in how that answer is compared with the reference:

- :func:`grade_math` (MATH-500): mathematical equivalence, decided by math-verify (SymPy), so
  ``\\frac{1}{2}``, ``0.5`` and ``1/2`` agree and ``x=3`` matches ``3``. Without a box or phrase it
  lets math-verify find the answer in the text itself.
- :func:`grade_integer` (AIME, AMC): the answer must be an integer equal to the reference
  (``025`` is 25; ``25.5`` is wrong).
- :func:`grade_numeric` (GSM8K): numeric equality after dropping ``$``, thousands separators and
  units (``1,234`` is 1234, ``5.0`` is 5).

Graders never raise: a malformed response is wrong. They read only the last
:data:`MAX_RESPONSE_CHARS` characters and refuse answers nested deeper than
:data:`MAX_BRACKET_DEPTH`. Beyond that, :func:`grade_math`'s time is bounded by math-verify's
timeouts, which use ``signal.alarm`` and so work only in a process's main thread: grade in a
process pool rather than a thread pool when responses may be hostile (in a thread the timeout is
switched off, and an answer such as ``9^{9^{9^{9}}}`` can keep SymPy busy indefinitely).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, wraps

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from math_verify.errors import TimeoutException

logger = logging.getLogger(__name__)

MAX_RESPONSE_CHARS = 4000
"""Only the end of a response is read: the final answer is there, and parsing cost grows with length."""
MAX_BRACKET_DEPTH = 10
"""Deepest bracket nesting handed to math-verify: real answers stay under 5, and its LaTeX parser
slows down steeply with depth (a 16-deep ``{{...}}`` takes seconds)."""
DEFAULT_TIMEOUT_SECONDS = 5
"""math-verify's limit for one parse and for one comparison (main thread only)."""

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_PHRASE = re.compile(
    r"(?:####|\banswer\b(?:\*\*)?\s*(?:is\b(?!')\s*:?|:|(?=isn't\b)))\s*(?P<span>[^\n]*)", re.IGNORECASE
)
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_NEGATION = re.compile(r"(?:^|[\s,;(]+)(?:not|isn't|is not|rather than|instead of)\b.*$", re.IGNORECASE | re.DOTALL)
_TRAILING_PERCENT = re.compile(r"\s*\\?%$")
_MATH_DELIMITERS = re.compile(r"^(?:\\\(|\\\[)|(?:\\\)|\\\])$")
_THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_LATEX_NOISE = re.compile(r"\\[,!;: ]|\\\$|\$|\\%|%|~")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")


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


def _tail(response: str) -> str:
    """The part of a response that is read: its end, where the final answer is."""
    return response[-MAX_RESPONSE_CHARS:]


def _last_box(text: str) -> str | None:
    """Content of the last ``\\boxed{...}``; "" when that box is empty or never closed (the response
    was cut off while writing its answer); None when there is no box."""
    openings = list(_BOX_OPENING.finditer(text))
    if not openings:
        return None
    start = openings[-1].end()
    depth = 1
    for position in range(start, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return text[start:position].strip()
    return ""


def _tidy_span(span: str) -> str:
    """The answer in the rest of a final-answer line: up to the end of its sentence and before any
    negation ("24, not 25" asserts 24; "not 18" asserts nothing), without the markdown emphasis, math
    delimiters and closing period around it."""
    span = _NEGATION.sub("", _SENTENCE_END.split(span, maxsplit=1)[0])
    span = span.strip(" \t*").rstrip(".").strip(" $")
    return _MATH_DELIMITERS.sub("", span).strip()


def _last_phrase_answer(text: str) -> str | None:
    """The answer stated by the last final-answer phrase with something after it; "" when that phrase
    only negates ("The answer is not 18." commits to no answer)."""
    for match in reversed(list(_ANSWER_PHRASE.finditer(text))):
        span = _tidy_span(match.group("span"))
        if span or _NEGATION.search(match.group("span")):
            return span
    return None


def _stated_answer(text: str) -> str | None:
    """The answer the text commits to: its last box, else its last final-answer phrase. "" when the
    last box is empty or unclosed (no answer, and no fallback either); None when it states none."""
    box = _last_box(text)
    return box if box is not None else _last_phrase_answer(text)


def _plain_numbers(text: str) -> list[str]:
    """Every number in ``text`` once currency signs, LaTeX spacing and thousands separators are gone."""
    text = text.replace("{,}", ",").replace("\u2212", "-")
    text = _THOUSANDS_SEPARATOR.sub("", _LATEX_NOISE.sub("", text))
    return _NUMBER.findall(text)


def extract_final_answer(response: str) -> str | None:
    """The final answer a response commits to, as text, or None when it has none.

    In order: the content of the last ``\\boxed{...}``; the rest of the sentence after the last
    "answer is", "answer:" or "####"; the last number in the text. A response whose last box is
    empty or never closed has no answer. Only the last :data:`MAX_RESPONSE_CHARS` characters count.
    These strings are also the votes of :func:`eval.benchmarks.metrics.maj_at_k`. (:func:`grade_math` does not
    take the last number: without a box or phrase it lets math-verify read the text.)
    """
    text = _tail(response)
    stated = _stated_answer(text)
    if stated is not None:
        return stated or None
    numbers = _plain_numbers(text)
    return numbers[-1] if numbers else None


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
    # A percentage is its number (12.5\% = 12.5). Boxing rather than $...$ keeps answers that contain
    # "$" (such as "\$18.90") whole.
    return tuple(
        parse(
            f"\\boxed{{{_TRAILING_PERCENT.sub('', answer)}}}",
            extraction_config=[LatexExtractionConfig()],
            fallback_mode="first_match",
            parsing_timeout=timeout_seconds,
        )
    )


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
    gold = _parse_latex_answer(reference, timeout_seconds)
    if not gold:
        return False
    text = _tail(response)
    stated = _stated_answer(text)
    searched = text if stated is None else stated
    if not searched or _bracket_depth(searched) > MAX_BRACKET_DEPTH:
        return False
    if stated is None:
        predicted = parse(
            text,
            extraction_config=[LatexExtractionConfig(), ExprExtractionConfig()],
            fallback_mode="first_match",
            parsing_timeout=timeout_seconds,
        )
    else:
        predicted = list(_parse_latex_answer(stated, timeout_seconds))
    return bool(predicted) and verify(list(gold), predicted, timeout_seconds=timeout_seconds)


def _as_number(answer: str | None) -> Fraction | None:
    """The one number an answer holds (words and units around it allowed), or None."""
    if answer is None:
        return None
    numbers = _plain_numbers(answer)
    return Fraction(numbers[0]) if len(numbers) == 1 else None


@_never_raises
def grade_integer(response: str, reference: str) -> bool:
    """Whether ``response``'s final answer is an integer equal to ``reference`` (AIME, AMC).

    Leading zeros and a zero fractional part are fine (``025``, ``25.0``); any other value, a
    fraction, or an answer holding more than one number (a tuple, an expression) is wrong.
    """
    value = _as_number(extract_final_answer(response))
    return value is not None and value.denominator == 1 and value == _as_number(reference)


@_never_raises
def grade_numeric(response: str, reference: str) -> bool:
    """Whether ``response``'s final answer is the number ``reference`` (GSM8K), compared exactly.

    ``$``, thousands separators, ``%``, units and a closing period are ignored, so ``\\$1,234.`` is
    1234 and ``5.0`` is 5; an answer holding more than one number is wrong.
    """
    value = _as_number(extract_final_answer(response))
    return value is not None and value == _as_number(reference)


GRADERS: dict[str, Callable[[str, str], bool]] = {
    "math": grade_math,
    "integer": grade_integer,
    "numeric": grade_numeric,
}
"""Grader kind (as named in :data:`eval.benchmarks.loaders.BENCHMARKS`) -> verifier."""
