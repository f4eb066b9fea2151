"""Simulated nulls: how often a procedure calls a direction when there is none, and how often a row's
interval covers the true mean, at the seed counts of a campaign.

Seeds are simulated as a campaign's runs behave: with common random numbers, seed i of a row and seed i
of the row it is compared with share part of their noise (correlation ``correlation``), and a row and
its reference come from the same distribution (the null). Each procedure is applied through the
public functions of :mod:`reports.statistics.comparisons` (or, for the percentile bootstrap the tables used before,
``scipy.stats.bootstrap``), so the rates measure what a report would do.

Command line: ``python -m reports.statistics.null_simulation [--simulations 4000]`` prints the table the README's
statistics section shows: the percentile bootstrap beside the t procedures, for n = 2, 3, 5, 10.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np
from scipy import stats

from reports.statistics import comparisons as harness_stats

SEED_COUNTS = (2, 3, 5, 10)
CORRELATION = 0.5


def paired_draws(n: int, simulations: int, seed: int, correlation: float = CORRELATION, effect: float = 0.0):
    """(row, reference), each (simulations, n): unit-variance seeds whose seed-i noise is shared with
    correlation ``correlation``; the row's mean is ``effect`` (in units of one seed's sd) above the reference's."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal((simulations, n))
    own = rng.standard_normal((2, simulations, n))
    mix = np.sqrt(correlation), np.sqrt(1 - correlation)
    return effect + mix[0] * shared + mix[1] * own[0], mix[0] * shared + mix[1] * own[1]


def unpaired_draws(n: int, m: int, simulations: int, seed: int):
    """(row, reference) of independent unit-variance seeds: (simulations, n) and (simulations, m)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((simulations, n)), rng.standard_normal((simulations, m))


def rejection_rate(rows: np.ndarray, references: np.ndarray, test: Callable, level: float = 0.05) -> float:
    """Share of simulations in which ``test(row, reference)`` returns a p-value at most ``level``
    (None, an undefined p-value, counts as no rejection)."""
    p_values = [test(row, reference) for row, reference in zip(rows, references, strict=True)]
    return float(np.mean([p is not None and p <= level for p in p_values]))


def coverage(samples: np.ndarray, interval: Callable, true_mean: float = 0.0) -> float:
    """Share of simulations whose ``interval(sample)`` -> (low, high) holds ``true_mean``."""
    held = [low <= true_mean <= high for low, high in (interval(sample) for sample in samples)]
    return float(np.mean(held))


def paired_t_p(row: np.ndarray, reference: np.ndarray) -> float | None:
    return harness_stats.paired_t(row, reference, distribution_free=False).p_value


def welch_p(row: np.ndarray, reference: np.ndarray) -> float | None:
    return harness_stats.welch_t(row, reference, distribution_free=False).p_value


def t_interval(sample: np.ndarray) -> tuple[float, float]:
    estimate = harness_stats.seed_estimate(sample)
    return estimate.ci_low, estimate.ci_high


def bootstrap_interval(*samples: np.ndarray, resamples: int = 2000) -> tuple[float, float]:
    """The percentile bootstrap the tables used before: of the mean (one sample) or of a difference of
    means (two samples, each resampled on its own)."""
    if all(np.all(sample == sample[0]) for sample in samples):
        value = float(np.mean(samples[0]) - (np.mean(samples[1]) if len(samples) == 2 else 0.0))
        return value, value
    interval = stats.bootstrap(
        samples,
        lambda *s, axis=-1: np.mean(s[0], axis=axis) - (np.mean(s[1], axis=axis) if len(s) == 2 else 0.0),
        n_resamples=resamples,
        vectorized=True,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    return float(interval.low), float(interval.high)


def bootstrap_excludes_zero(*samples: np.ndarray) -> float | None:
    """The old verdict as a pseudo p-value: 0 when the percentile interval excludes 0, else 1."""
    low, high = bootstrap_interval(*samples)
    return 0.0 if low > 0 or high < 0 else 1.0


def table(simulations: int, seed: int = 0) -> list[list[str]]:
    """Rows of the README's comparison: each procedure's false-positive rate or coverage at n = 2, 3, 5, 10."""
    lines = {
        "paired difference, percentile bootstrap: false-positive rate": [],
        "paired difference, paired t: false-positive rate": [],
        "unequal n (n vs n+1), percentile bootstrap: false-positive rate": [],
        "unequal n (n vs n+1), Welch t: false-positive rate": [],
        "row interval covers the true mean, percentile bootstrap": [],
        "row interval covers the true mean, Student t": [],
    }
    cells = list(lines.values())
    for n in SEED_COUNTS:
        rows, references = paired_draws(n, simulations, seed + n)
        cells[0].append(rejection_rate(rows, references, lambda r, b: bootstrap_excludes_zero(r - b)))
        cells[1].append(rejection_rate(rows, references, paired_t_p))
        rows, references = unpaired_draws(n, n + 1, simulations, seed + 100 + n)
        cells[2].append(rejection_rate(rows, references, bootstrap_excludes_zero))
        cells[3].append(rejection_rate(rows, references, welch_p))
        cells[4].append(coverage(rows, bootstrap_interval))
        cells[5].append(coverage(rows, t_interval))
    return [[name, *(f"{value:.3f}" for value in values)] for name, values in lines.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.statistics.null_simulation", description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulations", type=int, default=4000, help="simulated campaigns per cell")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.simulations < 1:
        parser.error("--simulations must be at least 1")
    header = ["declared 95 % (level 0.05)", *(f"n = {n}" for n in SEED_COUNTS)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for line in table(args.simulations, args.seed):
        print("| " + " | ".join(line) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
