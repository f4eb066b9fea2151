"""Table cells of the statistics: estimates and deltas with their intervals, p-values and probabilities, in the
typographic minus that lines up with the digits."""

from __future__ import annotations

from reports.statistics.comparisons import Comparison, Estimate

MINUS = "\u2212"  # typographic minus: lines up with the digits in rendered tables


def format_estimate(estimate: Estimate, scale: float = 100, digits: int = 1) -> str:
    """Table cell for an estimate, e.g. ``"43.2 [40.1, 46.0] (n=3)"``; ``"43.2 (n=1)"`` without an interval.

    Values are multiplied by ``scale`` (100 turns fractions into percent) and rounded to ``digits``.
    Negative numbers use the typographic minus (−).
    """
    mean = _number(estimate.mean * scale, digits)
    if not estimate.has_interval:
        return f"{mean} (n={estimate.n})"
    low, high = _number(estimate.ci_low * scale, digits), _number(estimate.ci_high * scale, digits)
    return f"{mean} [{low}, {high}] (n={estimate.n})"


def format_comparison(comparison: Comparison, scale: float = 100, digits: int = 1) -> str:
    """Table cell for a delta, e.g. ``"+3.1 [−0.5, 6.2]"``: signed mean [ci_low, ci_high] (no interval at n = 1).

    The mean always carries its sign (+ or −) unless it rounds to zero; the bounds carry only a minus.
    """
    delta = comparison.delta
    mean = _number(delta.mean * scale, digits)
    if not mean.startswith(MINUS) and float(mean) != 0:
        mean = "+" + mean
    if not delta.has_interval:
        return mean
    return f"{mean} [{_number(delta.ci_low * scale, digits)}, {_number(delta.ci_high * scale, digits)}]"


def format_p(p: float | None) -> str:
    """A p-value cell: two significant digits, ``<0.001`` below that, — when undefined."""
    if p is None:
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def format_probability(probability: float, digits: int = 2) -> str:
    """Table cell for a probability of improvement, e.g. ``"0.83"``."""
    return f"{probability:.{digits}f}"


def _number(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        return text.lstrip("-")  # "-0.0" would claim a direction the rounded value no longer has
    return text.replace("-", MINUS)
