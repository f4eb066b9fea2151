"""One mathematical object written in other forms: a stated answer brought to the form the graders compare.

- :func:`plain_form`: Unicode digits (full-width ``７``, Arabic-Indic ``٧``, ...) as ASCII digits;
  Unicode math symbols as their LaTeX (``√3`` is ``\\sqrt{3}``, ``∅`` and ``\\varnothing`` are
  ``\\emptyset``, ``≤`` is ``\\le``, ``²`` is ``^{2}``, ``½`` is ``\\frac{1}{2}``); a one-cell array or
  matrix as its cell; an answer that is a number written in English words (``\\text{seven}``,
  ``twenty-one``) as the number; digit groups of three set apart by TeX spacing (``1\\,000\\;000``,
  ``1\\ 000``, ``1~000``) as one number; scientific notation written with a letter x (``1.5 x 10^6``), a
  typeset e (``1.2\\text{e}3``) or, for a whole answer, a bare e and an unsigned exponent (``1.2e3``) as a power of
  ten (``1.2 \\times 10^{3}``).
- :func:`as_interval`: an inequality in one variable, a double inequality or set-builder notation of
  one (``x \\ge 3``, ``-1 < x \\le 4``, ``\\{x \\mid x < 2\\}``) as the interval it describes.
- :func:`arithmetic_value`: an arithmetic expression of numbers (``3 \\times 4 + \\frac{6}{3}``) as its
  exact value.

Each returns the answer unchanged (or None) when it is not of its form, works in time linear in the
answer's length, and never raises.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from fractions import Fraction

MAX_FORM_CHARS = 2000
_SPACED_GROUP = re.compile(r"(?<=\d)(?:\\[,:; !]|~|\\thinspace\b\s*|\\(?:hspace|kern)\{[^{}]{0,20}\})(?=\d{3}(?!\d))")
_LETTER_TIMES_TEN = re.compile(r"(?<=\d)\s*[xX]\s*(?=10\s*\^)")
_TYPESET_E = re.compile(r"(?<=\d)\\(?:text|mathrm)\{[eE]\}([-+]?\d+)")
_BARE_E = re.compile(r"^([-+]?(?:\d+\.\d*|\.\d+|\d+))[eE](\d+)$")
"""A whole answer in bare e-notation (``1.2e3``): with its exponent unsigned it cannot be a product with e plus or
minus a number (``3e+1``, ``2e-1``), which keep their symbolic reading."""
"""Longest answer brought to its plain form (as long as the graders' longest answer)."""

_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉", "0123456789", strict=True))
_SYMBOLS = {
    "∅": r"\emptyset ",
    "≤": r"\le ",
    "≥": r"\ge ",
    "≠": r"\ne ",
    "∞": r"\infty ",
    "π": r"\pi ",
    "θ": r"\theta ",
    "×": r"\times ",
    "÷": r"\div ",
    "·": r"\cdot ",
    "⋅": r"\cdot ",
    "−": "-",
    "±": r"\pm ",
    "∪": r"\cup ",
    "∩": r"\cap ",
    "∈": r"\in ",
    "°": r"^\circ ",
    "⁄": "/",
}
_ROOTS = {"√": r"\sqrt", "∛": r"\sqrt[3]", "∜": r"\sqrt[4]"}
_ROOT_OPERAND = re.compile(r"\s*(\([^()]*\)|\{[^{}]*\}|[0-9.]+|[A-Za-z])")
_EMPTY_SET = re.compile(r"\\varnothing\b|\\O\b")
_ONE_CELL = re.compile(
    r"^\\begin\{(?P<kind>array|matrix|pmatrix|bmatrix|vmatrix|smallmatrix)\}(?:\{[^{}]*\})?"
    r"\s*(?P<cell>(?:(?!\\\\|&|\\end\b).)+?)\s*(?:\\\\)?\s*\\end\{(?P=kind)\}$",
    re.DOTALL,
)
_TEXT_WRAPPER = re.compile(r"^\\(?:text|textbf|mathrm|mbox)\{([^{}]*)\}$")

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUES = {word: value for value, word in enumerate(_UNITS)} | {
    word: 10 * (index + 2) for index, word in enumerate(_TENS)
}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_MAX_WORDS = 12


def plain_form(answer: str) -> str:
    """``answer`` with Unicode digits and math symbols as ASCII and LaTeX, a one-cell array or matrix as its cell,
    and a number in words as digits (see the module's docstring); one longer than :data:`MAX_FORM_CHARS` as it is."""
    if len(answer) > MAX_FORM_CHARS:
        return answer
    text = "".join(_superscripts_and_fractions(answer))
    text = unicodedata.normalize("NFKC", text)
    text = "".join(str(unicodedata.decimal(c)) if c.isdecimal() and not c.isascii() else c for c in text)
    text = "".join(_SYMBOLS.get(c, c) for c in text)
    text = _roots(text)
    text = _EMPTY_SET.sub(r"\\emptyset", text).strip()
    cell = _ONE_CELL.match(text)
    if cell is not None:
        text = cell.group("cell").strip()
    text = _SPACED_GROUP.sub("", text)
    text = _TYPESET_E.sub(r" \\times 10^{\1}", _LETTER_TIMES_TEN.sub(r" \\times ", text))
    text = _BARE_E.sub(r"\1 \\times 10^{\2}", text)
    number = _number_in_words(text)
    return str(number) if number is not None else text


def _superscripts_and_fractions(text: str):
    """Superscript and subscript runs as ``^{...}`` / ``_{...}``, vulgar fractions (``½``) as ``\\frac``, added to a
    whole number before them (``3½`` is 3 + 1/2)."""
    index = 0
    while index < len(text):
        character = text[index]
        for table, mark in ((_SUPERSCRIPTS, "^"), (_SUBSCRIPTS, "_")):
            if character in table:
                end = index
                while end < len(text) and text[end] in table:
                    end += 1
                yield f"{mark}{{{''.join(table[c] for c in text[index:end])}}}"
                index = end
                break
        else:
            if unicodedata.category(character) == "No" and not character.isdecimal():
                value = Fraction(unicodedata.numeric(character, -1)).limit_denominator(1000)
                if value >= 0 and value.denominator > 1:
                    joined = "+" if index and text[index - 1].isdigit() else ""
                    yield f"{joined}\\frac{{{value.numerator}}}{{{value.denominator}}}"
                    index += 1
                    continue
            yield character
            index += 1


def _roots(text: str) -> str:
    """``√x`` as ``\\sqrt{x}``: the operand is a number, a letter, or a parenthesised or braced group."""
    out, index = [], 0
    while index < len(text):
        root = _ROOTS.get(text[index])
        if root is None:
            out.append(text[index])
            index += 1
            continue
        operand = _ROOT_OPERAND.match(text, index + 1)
        if operand is None:
            out.append(root + " ")
            index += 1
            continue
        body = operand.group(1)
        body = body[1:-1] if body[0] in "({" else body
        out.append(f"{root}{{{body}}}")
        index = operand.end()
    return "".join(out)


def _number_in_words(text: str) -> int | None:
    """The integer an answer spells out in English words (``\\text{twenty-one}``, ``minus seven``), or None."""
    wrapped = _TEXT_WRAPPER.match(text)
    words = (wrapped.group(1) if wrapped else text).strip().rstrip(".").lower().replace("-", " ").split()
    if not words or len(words) > _MAX_WORDS:
        return None
    sign = -1 if words[0] in ("minus", "negative") else 1
    words = words[1:] if sign < 0 else words
    total = current = 0
    seen = False
    for word in words:
        if word == "and" and seen:
            continue
        if word in _WORD_VALUES:
            current += _WORD_VALUES[word]
        elif word == "hundred" and seen:
            current *= 100
        elif word in _SCALES and seen:
            total, current = total + current * _SCALES[word], 0
        else:
            return None
        seen = True
    return sign * (total + current) if seen else None


_RELATION = re.compile(r"\\leq?\b|\\geq?\b|\\lt\b|\\gt\b|<=|>=|<|>")
_LESS = {r"\le": "<=", r"\leq": "<=", r"\lt": "<", "<=": "<=", "<": "<"}
_GREATER = {r"\ge": ">=", r"\geq": ">=", r"\gt": ">", ">=": ">=", ">": ">"}
_SET_BUILDER = re.compile(
    r"^\\\{\s*(?P<var>[a-zA-Z])\s*(?:\\in\s*\\mathbb\{R\}\s*)?(?:\\mid|\||:)\s*(?P<condition>.+?)\s*\\\}$", re.DOTALL
)
_VARIABLE = re.compile(r"^[a-zA-Z]$")
_MAX_INTERVAL_CHARS = 200


def as_interval(answer: str) -> str | None:
    """The interval (LaTeX, e.g. ``(-1, 4]``) that an inequality, double inequality or set-builder answer in one
    variable describes; None for any other answer (two variables, a union, a non-strict chain that is no
    interval)."""
    text = plain_form(answer).strip().strip("$").strip()
    if len(text) > _MAX_INTERVAL_CHARS:
        return None
    builder = _SET_BUILDER.match(text)
    variable = builder.group("var") if builder else None
    condition = builder.group("condition") if builder else text
    parts = [part.strip() for part in _RELATION.split(condition)]
    relations = [_normalised(r) for r in _RELATION.findall(condition)]
    if len(parts) == 2 and _VARIABLE.match(parts[0]) and not _VARIABLE.match(parts[1]):
        var, (low, high) = parts[0], _one_sided(relations[0], parts[1])
    elif len(parts) == 2 and _VARIABLE.match(parts[1]) and not _VARIABLE.match(parts[0]):
        var, (low, high) = parts[1], _one_sided(_flipped(relations[0]), parts[0])
    elif len(parts) == 3 and _VARIABLE.match(parts[1]) and relations[0][0] == relations[1][0]:
        var = parts[1]
        first, second = (relations, parts[0::2]) if relations[0][0] == "<" else (relations[::-1], parts[2::-2])
        low = ("[" if first[0] in ("<=", ">=") else "(") + second[0]
        high = second[1] + ("]" if first[1] in ("<=", ">=") else ")")
    else:
        return None
    if (variable is not None and var != variable) or not all(parts) or "," in low + high:
        return None
    return f"{low}, {high}"


def _normalised(relation: str) -> str:
    return _LESS.get(relation) or _GREATER[relation]


def _flipped(relation: str) -> str:
    return relation.replace("<", "?").replace(">", "<").replace("?", ">")


def _one_sided(relation: str, bound: str) -> tuple[str, str]:
    """(low, high) ends of ``x relation bound``."""
    if relation.startswith("<"):
        return r"(-\infty", bound + ("]" if relation == "<=" else ")")
    return ("[" if relation == ">=" else "(") + bound, r"\infty)"


_LATEX_ARITHMETIC = ((re.compile(r"\\(?:times|cdot|ast)"), "*"), (re.compile(r"\\div"), "/"))
_FRACTION = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_ARITHMETIC_CHARACTERS = re.compile(r"^[0-9.+\-*/^() ]+$")
MAX_ARITHMETIC_CHARS = 10_000
"""Longest arithmetic expression evaluated (a sum of a few thousand terms), in time linear in its length."""
_MAX_EXPONENT = 64
_MAX_BITS = 4096


def arithmetic_value(answer: str) -> Fraction | None:
    """The exact value of an arithmetic expression of numbers (``+ - × ÷ · / ^``, ``\\frac``, parentheses), or
    None for anything else (a letter, a list, a comparison) or a value too large to be an answer."""
    text = plain_form(answer).strip().strip("$").rstrip(".").strip()
    if len(text) > MAX_ARITHMETIC_CHARS:
        return None
    for pattern, replacement in _LATEX_ARITHMETIC:
        text = pattern.sub(replacement, text)
    for _ in range(len(text)):  # innermost fractions first, one level a pass
        replaced = _FRACTION.sub(r"((\1)/(\2))", text)
        if replaced == text:
            break
        text = replaced
    text = text.replace(r"\left", "").replace(r"\right", "").replace("{", "(").replace("}", ")")
    if not _ARITHMETIC_CHARACTERS.match(text) or not re.search(r"[-+*/^]", text.lstrip("-+")):
        return None
    try:
        return _evaluate(ast.parse(text.replace("^", "**"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, RecursionError):
        return None


def _evaluate(node: ast.AST) -> Fraction:
    """The value of an expression tree of numbers. A chain of operators (``1 + 2 + ... + 1500``) parses into a tree
    as deep as it is long, down its left side: that side is walked in a loop, so only parentheses and powers
    (bounded by the graders' bracket depth) recurse."""
    chain = []
    while isinstance(node, ast.BinOp):
        chain.append(node)
        node = node.left
    value = _operand(node)
    for operation in reversed(chain):
        value = _applied(operation.op, value, _evaluate(operation.right))
    return value


def _operand(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    raise ValueError("not arithmetic")


def _applied(operator: ast.operator, left: Fraction, right: Fraction) -> Fraction:
    if isinstance(operator, ast.Add):
        return _bounded(left + right)
    if isinstance(operator, ast.Sub):
        return _bounded(left - right)
    if isinstance(operator, ast.Mult):
        return _bounded(left * right)
    if isinstance(operator, ast.Div):
        return _bounded(left / right)
    if isinstance(operator, ast.Pow) and right.denominator == 1 and abs(right) <= _MAX_EXPONENT:
        return _bounded(left ** int(right))
    raise ValueError("not arithmetic")


def _bounded(value: Fraction) -> Fraction:
    if value.numerator.bit_length() > _MAX_BITS or value.denominator.bit_length() > _MAX_BITS:
        raise ValueError("too large to be an answer")
    return value
