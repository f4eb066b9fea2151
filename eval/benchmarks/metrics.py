"""Benchmark scores from per-problem verdicts: pass@k, avg@k and maj@k, and their intervals over problems.

Every function takes plain per-problem lists, so scores can be recomputed from saved records:
``correct[p][i]`` is whether sample i of problem p was graded correct, and ``answers[p][i]`` is the
final answer extracted from it (None when it states none). Shapes are (P, n): P problems with n
samples each (n may differ between problems). Greedy pass@1 needs nothing here: it is the mean of
the greedy verdicts, one per problem.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

from scipy.stats import norm


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of the chance that at least one of k samples is correct, from n samples of
    which c are correct (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"):

        pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=0}^{k-1} (n-c-i) / (n-i)

    The product form avoids the huge binomials. It is 1 when fewer than k samples are wrong.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}: pass@k needs at least k samples per problem")
    if n - c < k:
        return 1.0
    all_wrong = 1.0
    for i in range(k):
        all_wrong *= (n - c - i) / (n - i)
    return 1.0 - all_wrong


def _check_problems(correct: Sequence[Sequence[bool]]) -> None:
    if not correct:
        raise ValueError("no problems to score")
    if any(len(samples) == 0 for samples in correct):
        raise ValueError("every problem needs at least one sample")


def mean_pass_at_k(correct: Sequence[Sequence[bool]], k: int) -> float:
    """Mean over problems of :func:`pass_at_k` with each problem's n and c. correct: (P, n), n >= k."""
    _check_problems(correct)
    return sum(pass_at_k(len(samples), sum(samples), k) for samples in correct) / len(correct)


def avg_at_k(correct: Sequence[Sequence[bool]]) -> float:
    """avg@k: mean over problems of the share of its k samples that are correct. correct: (P, k).

    Its expectation is pass@1; it is what AIME results sampled k = 32 times report (DAPO, VAPO).
    """
    _check_problems(correct)
    return sum(sum(samples) / len(samples) for samples in correct) / len(correct)


def majority_vote(answers: Sequence[Hashable | None]) -> int | None:
    """Index of the sample carrying the most common answer, or None when no sample has an answer.

    Samples without an answer (None) do not vote. A tie goes to the answer that appears first, and
    the returned index is that answer's first sample, so the result depends only on sample order.
    Answers are compared as given: extract them consistently (:func:`eval.benchmarks.graders.extract_final_answer`).
    """
    votes = Counter(answer for answer in answers if answer is not None)
    if not votes:
        return None
    # A Counter iterates in order of first appearance and max keeps the first of equal counts.
    winner = max(votes, key=votes.__getitem__)
    return answers.index(winner)


def maj_at_k(answers: Sequence[Sequence[Hashable | None]], correct: Sequence[Sequence[bool]]) -> float:
    """maj@k: share of problems whose majority answer over its k samples is correct.

    answers, correct: (P, k), aligned. A problem counts as solved when the sample chosen by
    :func:`majority_vote` is correct; a problem with no answer at all counts as wrong.
    """
    _check_problems(correct)
    if len(answers) != len(correct) or any(len(a) != len(c) for a, c in zip(answers, correct)):
        raise ValueError("answers and correct must have the same shape (P, k)")
    solved = 0
    for problem_answers, problem_correct in zip(answers, correct):
        chosen = majority_vote(problem_answers)
        solved += chosen is not None and bool(problem_correct[chosen])
    return solved / len(correct)


def interval_over_problems(rates: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for the mean of per-problem success rates, each in [0, 1] (a greedy verdict,
    or the share of a problem's k samples that are correct), with the problems as the sample: they are a
    draw from the benchmark's population, the source of most of a score's uncertainty.

    The Wilson interval is taken at the effective number of problems n p (1 - p) / s², s² the rates'
    variance: n itself for 0/1 verdicts (the binomial Wilson interval), more when k samples per problem
    make the rates less variable than verdicts. Its coverage is checked on simulated benchmarks in the
    tests (0.93 to 0.96 at a nominal 0.95 for 30 to 500 problems, k = 1 to 32).
    """
    if not rates:
        raise ValueError("no problems to score")
    n, mean = len(rates), sum(rates) / len(rates)
    variance = sum((rate - mean) ** 2 for rate in rates) / n
    effective = n * mean * (1 - mean) / variance if variance > 0 else n
    z = float(norm.ppf(0.5 + level / 2))
    centre = (mean + z * z / (2 * effective)) / (1 + z * z / effective)
    half = z / (1 + z * z / effective) * math.sqrt(mean * (1 - mean) / effective + z * z / (4 * effective**2))
    return max(0.0, centre - half), min(1.0, centre + half)
