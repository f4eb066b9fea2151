"""How closely two rows of one seed stay coupled under each kind of random draws (``rollout.draws``): stream draws
(one generator whose position depends on every earlier draw) against keyed draws (each a function of where it is
used). Fewer seeds decide a table whose row differences vary less from seed to seed.

For each pair of rows (a row and the reference it is compared with), trained with the same seeds under each kind
of draws, and for each quantity the pair's primary compares (the table's metric at the last step; the row's
flagged endpoint over its window, where it has one):

- the SD over seeds of the paired difference (row minus reference), with its 95 % interval (chi-square);
- the correlation over seeds of the two rows' values, with its 95 % interval (Fisher's z);
- the ratio of the SDs, keyed over stream, with a 95 % bootstrap interval (seeds resampled jointly for both kinds
  of draws, since one seed's runs share their prompts): below 1, keyed draws need fewer seeds, by its square;
- over all pairs, on each table's metric, the pooled ratio (the square root of the geometric mean of the variance
  ratios) with its bootstrap interval, the exact permutation test that it is below 1, and the decision it gives
  (:func:`keyed_draws_decided`).

And for each pair and kind of draws, over seeds: the first step at which the two rows' rollouts differ, read from
the statistics every step logs that the sampled tokens alone set (response lengths, accuracy, repetition): equal
statistics are not proof of equal tokens, so the step is an upper bound (0: they differ from the first rollout);
the share of tokens the two rows' final evaluations have in common (position by position, over the longer response
of each problem) and the share of problems with the same verdict, from the regenerated final responses
(:mod:`algos.campaign.final_responses`).

Command line: ``python -m reports.coupling --pair dapo_table1:token_level_loss:soft_overlong_punishment ...
--seeds 15 16 ... --stream-runs results/runs --keyed-runs results/coupled --responses results/coupling/responses
--out results/reports``; responses are read from ``<responses>/<draws>/<spec>/<row>/seed<n>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from algos.campaign.ablations import read_spec
from algos.config.presets import ConfigError
from reports.analysis.primaries import primary_values
from reports.analysis.runs import FinishedRun, load_run
from reports.planning.fixed_design import TABLE_QUANTITY, quantity_name
from reports.render.figures import DPI, png_bytes
from reports.render.pages import Page, Table, run_report, write_page

DRAWS = ("stream", "keyed")
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
TOKEN_STATISTICS = (
    "rollout/response_length_mean",
    "rollout/response_length_max",
    "rollout/accuracy",
    "rollout/repetition_frac",
)
"""Rollout statistics that the sampled tokens alone set (the same verifier grading both rows)."""


@dataclass(frozen=True)
class Pair:
    """A row of a spec and the row it is compared with."""

    spec: str
    row: str
    reference: str

    @property
    def label(self) -> str:
        return f"{self.spec}: {self.row} vs {self.reference}"


def parse_pair(text: str) -> Pair:
    """``spec:row:reference``, both rows checked against the spec."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ConfigError(f"a pair is spec:row:reference, not '{text}'")
    spec = read_spec(parts[0])
    for row in parts[1:]:
        spec.row(row)  # names the spec's rows where it has no such row
    if parts[1] == parts[2]:
        raise ConfigError(f"pair '{text}' compares a row with itself")
    return Pair(*parts)


def sd_interval(differences: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The sample SD of ``differences`` (n,) and its interval from the chi-square law of (n-1)s²/σ²."""
    n = len(differences)
    sd = float(np.std(differences, ddof=1))
    tail = (1 - confidence) / 2
    low = sd * math.sqrt((n - 1) / stats.chi2.ppf(1 - tail, n - 1))
    high = sd * math.sqrt((n - 1) / stats.chi2.ppf(tail, n - 1))
    return sd, low, high


def correlation_interval(a: np.ndarray, b: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Pearson's r of (n,) ``a`` and ``b`` and its interval by Fisher's z (NaN where either does not vary)."""
    n = len(a)
    if np.std(a) == 0 or np.std(b) == 0 or n < 4:
        return math.nan, math.nan, math.nan
    r = float(np.corrcoef(a, b)[0, 1])
    z, half = math.atanh(min(max(r, -0.999999), 0.999999)), stats.norm.ppf(1 - (1 - confidence) / 2) / math.sqrt(n - 3)
    return r, math.tanh(z - half), math.tanh(z + half)


def sd_ratio_interval(
    stream: np.ndarray, keyed: np.ndarray, confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float, float]:
    """SD(keyed) / SD(stream) of two (n,) difference series of the same seeds, with a percentile bootstrap
    interval that resamples seeds jointly (a seed's two series share its prompts): the pooled ratio of one pair."""
    return pooled_sd_ratio_interval(stream[None], keyed[None], confidence, resamples)


def pooled_sd_ratio_interval(
    stream: np.ndarray, keyed: np.ndarray, confidence: float = CONFIDENCE, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float, float]:
    """The pairs' pooled SD ratio, keyed over stream: the square root of the geometric mean over pairs of
    Var(keyed) / Var(stream), from (pairs, n) difference series of the same seeds; the seeds a comparison needs scale
    with its square. Percentile bootstrap interval that resamples seeds jointly for every pair and both kinds of
    draws (a seed's runs share its prompts, and two pairs may share a reference row)."""

    def pooled(stream_var: np.ndarray, keyed_var: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):  # a keyed series without spread: a ratio of 0
            return np.exp(np.mean(np.log(keyed_var / stream_var), axis=-1) / 2)

    ratio = float(pooled(np.var(stream, axis=1, ddof=1), np.var(keyed, axis=1, ddof=1)))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    picks = rng.integers(0, stream.shape[1], size=(resamples, stream.shape[1]))  # (resamples, n)
    stream_var = np.var(stream[:, picks], axis=2, ddof=1).T  # (resamples, pairs)
    keyed_var = np.var(keyed[:, picks], axis=2, ddof=1).T
    valid = np.all(stream_var > 0, axis=1)
    ratios = pooled(stream_var[valid], keyed_var[valid])
    tail = (1 - confidence) / 2 * 100
    return ratio, float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))


def pooled_ratio_p_value(stream: np.ndarray, keyed: np.ndarray, most_swaps: int = 2**16) -> float:
    """One-sided p-value that keyed draws shrink the pairs' spread, from (pairs, n) difference series of the same
    seeds: the share of relabellings whose mean over pairs of log(Var(keyed) / Var(stream)) is at most the one
    observed, a relabelling swapping the stream and keyed differences of some seeds (of every pair at once). Where the
    kind of draws changes nothing, a seed's two values are exchangeable, so the test is exact: every one of the 2^n
    relabellings where there are at most ``most_swaps``, else that many drawn at random (the observed one included)."""
    n = stream.shape[1]
    if 2**n <= most_swaps:
        swaps = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # (2^n, n), the first row the observed labelling
    else:
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        swaps = np.vstack([np.zeros((1, n), dtype=np.int64), rng.integers(0, 2, size=(most_swaps - 1, n))])
    swapped = swaps.astype(bool)[:, None, :]  # (swaps, 1, n)
    stream_now, keyed_now = np.where(swapped, keyed, stream), np.where(swapped, stream, keyed)  # (swaps, pairs, n)
    statistic = np.mean(np.log(np.var(keyed_now, axis=2, ddof=1) / np.var(stream_now, axis=2, ddof=1)), axis=1)
    return float(np.mean(statistic <= statistic[0] + 1e-12))


DECISION_LEVEL = 0.025
"""One-sided level at which keyed draws are found to shrink the spread: the upper end of a two-sided 95 % test."""


def keyed_draws_decided(p_value: float) -> str:
    """The decision declared before the coupling's runs were all in: keyed draws become the default for campaigns
    started afterwards where :func:`pooled_ratio_p_value` is at most DECISION_LEVEL; otherwise they stay an option."""
    if p_value <= DECISION_LEVEL:
        return "keyed draws shrink the row differences' spread: the default for campaigns started from now"
    return "not shown to shrink the row differences' spread: stream draws stay the default, keyed draws an option"


def first_differing_step(a: FinishedRun, b: FinishedRun) -> int | None:
    """The first step at which the two runs' token statistics differ (None: never within their common steps)."""
    steps_a = {line["step"]: line for line in a.history if "rollout/response_length_mean" in line}
    steps_b = {line["step"]: line for line in b.history if "rollout/response_length_mean" in line}
    for step in sorted(set(steps_a) & set(steps_b)):
        if any(steps_a[step].get(name) != steps_b[step].get(name) for name in TOKEN_STATISTICS):
            return step
    return None


def shared_responses(a: Mapping, b: Mapping) -> tuple[float, float]:
    """(share of tokens in common, share of problems with the same verdict) of two regenerated final evaluations
    of the same problems: tokens compared position by position, over the longer of each problem's two responses."""
    if [r["problem"] for r in a["responses"]] != [r["problem"] for r in b["responses"]]:
        raise ValueError(f"{a['run']} and {b['run']}: their final responses are to different problems")
    common = longer = same_verdict = 0
    for x, y in zip(a["responses"], b["responses"], strict=True):
        common += sum(s == t for s, t in zip(x["tokens"], y["tokens"], strict=False))
        longer += max(len(x["tokens"]), len(y["tokens"]))
        same_verdict += x["correct"] == y["correct"]
    return common / max(longer, 1), same_verdict / len(a["responses"])


@dataclass(frozen=True)
class Coupling:
    """One pair under one kind of draws. differences/rows/references: quantity -> (n,) per-seed values.
    first_steps: per seed, the first differing step (None: never). tokens/verdicts: per seed, the shares in common
    of the final evaluations' first ``problems`` responses."""

    differences: dict[str, np.ndarray]
    rows: dict[str, np.ndarray]
    references: dict[str, np.ndarray]
    first_steps: list[int | None]
    tokens: list[float]
    verdicts: list[float]
    problems: int
    steps: int


def measure(pair: Pair, runs_dir: Path, responses_dir: Path, draws: str, seeds: Sequence[int]) -> Coupling:
    """The pair's coupling under ``draws`` from its runs in ``runs_dir`` and regenerated final responses."""
    spec = read_spec(pair.spec)
    runs = {row.id: [] for row in spec.rows}
    for row in (pair.row, pair.reference):
        runs[row] = [load_run(runs_dir / pair.spec / row / f"seed{seed}") for seed in seeds]
    wrong = [
        str(run.directory)
        for rs in runs.values()
        for run in rs
        if run.config.get("rollout", {}).get("draws", "stream") != draws
    ]
    if wrong:
        raise ValueError(f"runs not trained with rollout.draws={draws}: {', '.join(wrong)}")
    values = primary_values(spec, runs)
    names = dict.fromkeys([TABLE_QUANTITY, quantity_name(spec.row(pair.row))])
    rows = {name: np.array([values[pair.row][name][seed] for seed in seeds]) for name in names}
    references = {name: np.array([values[pair.reference][name][seed] for seed in seeds]) for name in names}
    tokens, verdicts, problems = [], [], set()
    for seed in seeds:
        files = [responses_dir / draws / pair.spec / row / f"seed{seed}.json" for row in (pair.row, pair.reference)]
        missing = [str(file) for file in files if not file.is_file()]
        if missing:
            raise FileNotFoundError(f"no regenerated final responses: {', '.join(missing)}")
        records = [json.loads(file.read_text()) for file in files]
        token_share, verdict_share = shared_responses(*records)
        problems.add(len(records[0]["responses"]))
        tokens.append(token_share)
        verdicts.append(verdict_share)
    return Coupling(
        differences={name: rows[name] - references[name] for name in names},
        rows=rows,
        references=references,
        first_steps=[first_differing_step(a, b) for a, b in zip(runs[pair.row], runs[pair.reference], strict=True)],
        tokens=tokens,
        verdicts=verdicts,
        problems=min(problems),
        steps=runs[pair.row][0].steps,
    )


def _quantity_label(name: str, spec_metric: str) -> str:
    return f"{spec_metric} (last step)" if name == TABLE_QUANTITY else name


def _interval(value: float, low: float, high: float, digits: int = 3) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}]"


def _steps(first_steps: Sequence[int | None], steps: int) -> str:
    """Median and range over seeds, a seed whose rollouts never differed counted at the run's last step."""
    never = sum(step is None for step in first_steps)
    if never == len(first_steps):
        return f"never within {steps} steps"
    shown = [steps if step is None else step for step in first_steps]
    text = f"median {np.median(shown):g} (range {min(shown)}–{max(shown)}"
    return text + (f"; {never} of {len(shown)} never within {steps} steps)" if never else ")")


def _figure(pairs: Sequence[Pair], results: Mapping[Pair, Mapping[str, Coupling]]) -> bytes:
    """The SD of each pair's paired difference on the table's metric, with its interval, under each kind of draws."""
    figure = Figure(figsize=(6.0, 0.6 + 0.5 * len(pairs)), dpi=DPI, layout="constrained")
    axes = figure.subplots()
    for index, pair in enumerate(pairs):
        for offset, draws, colour in ((-0.12, "stream", "0.45"), (0.12, "keyed", "tab:blue")):
            sd, low, high = sd_interval(results[pair][draws].differences[TABLE_QUANTITY])
            axes.errorbar(
                sd,
                index + offset,
                xerr=[[sd - low], [high - sd]],
                fmt="o",
                color=colour,
                label=draws if index == 0 else None,
                capsize=3,
            )
    axes.set_yticks(range(len(pairs)), [pair.label for pair in pairs], fontsize="x-small")
    axes.invert_yaxis()
    axes.set_xlabel("SD over seeds of the paired difference (table's metric), 95 % interval", fontsize="small")
    axes.legend(fontsize="x-small")
    return png_bytes(figure)


def write_coupling(
    pairs: Sequence[Pair], seeds: Sequence[int], stream_runs: Path, keyed_runs: Path, responses: Path, out_dir: Path
) -> tuple[Path, Path]:
    """Measure every pair under both kinds of draws and write ``coupling.md`` and ``.html`` into ``out_dir``."""
    if len(seeds) < 4:
        raise ValueError(f"the coupling needs at least 4 seeds, not {len(seeds)}")
    results = {
        pair: {
            draws: measure(pair, runs, responses, draws, seeds) for draws, runs in zip(DRAWS, (stream_runs, keyed_runs))
        }
        for pair in pairs
    }
    spread, coupled = [], []
    for pair in pairs:
        spec = read_spec(pair.spec)
        for name in results[pair]["stream"].differences:
            stream, keyed = (results[pair][draws].differences[name] for draws in DRAWS)
            for draws, series in zip(DRAWS, (stream, keyed)):
                result = results[pair][draws]
                spread.append(
                    [
                        pair.label,
                        _quantity_label(name, spec.metric),
                        draws,
                        f"{np.mean(series):.3g}",
                        _interval(*sd_interval(series)),
                        _interval(*correlation_interval(result.rows[name], result.references[name]), digits=2),
                        _interval(*sd_ratio_interval(stream, keyed)) if draws == "keyed" else "",
                    ]
                )
        for draws in DRAWS:
            result = results[pair][draws]
            coupled.append(
                [
                    pair.label,
                    draws,
                    _steps(result.first_steps, result.steps),
                    f"{np.mean(result.tokens):.3f} (range {min(result.tokens):.3f}–{max(result.tokens):.3f})",
                    f"{np.mean(result.verdicts):.3f} (range {min(result.verdicts):.3f}–{max(result.verdicts):.3f})",
                ]
            )
    stream, keyed = (np.stack([results[pair][draws].differences[TABLE_QUANTITY] for pair in pairs]) for draws in DRAWS)
    pooled, p_value = pooled_sd_ratio_interval(stream, keyed), pooled_ratio_p_value(stream, keyed)
    spread.append(
        [
            "all pairs, pooled",
            "each table's metric (last step)",
            "keyed",
            "",
            "",
            "",
            f"{_interval(*pooled)}, p = {p_value:.3g}",
        ]
    )
    problems = {result.problems for by_draws in results.values() for result in by_draws.values()}
    page = Page(
        title="Coupled rows: stream against keyed draws",
        introduction=(
            f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''} of rows, seeds {', '.join(map(str, seeds))}, each trained under stream draws "
            f"({stream_runs}) and under keyed draws ({keyed_runs}). A ratio of SDs (keyed over stream) below 1 means "
            "keyed draws decide a row difference with fewer seeds: the seeds a comparison needs scale with its square. "
            "**Decision** (declared: keyed draws become the default where the pooled ratio's exact permutation test, "
            f"seeds' labels swapped, gives a one-sided p of at most {DECISION_LEVEL}): {keyed_draws_decided(p_value)}."
        ),
        header=[
            "pair",
            "quantity",
            "draws",
            "mean difference",
            "SD of the paired difference [95 %]",
            "correlation of the rows [95 %]",
            "SD keyed / stream [95 % bootstrap]",
        ],
        cells=spread,
        note=(
            "SD interval: chi-square; correlation: Fisher's z; ratio: percentile bootstrap over seeds "
            f"({BOOTSTRAP_RESAMPLES} resamples, seeds drawn jointly for both kinds of draws)."
        ),
        figures=[("SD of the paired difference on the table's metric", _figure(pairs, results))],
        tables=[
            Table(
                title="How long the rows' samples stay the same",
                header=[
                    "pair",
                    "draws",
                    "first step whose rollouts differ (at most)",
                    "tokens in common, final evaluation",
                    "same verdict, final evaluation",
                ],
                cells=coupled,
                note=(
                    "Rollouts: the first step at which a statistic the tokens alone set differs "
                    f"({', '.join(TOKEN_STATISTICS)}); equal statistics do not prove equal tokens. Final evaluation: "
                    f"the first {', '.join(map(str, sorted(problems)))} problems of the final test set, regenerated "
                    "from each run's final policy with its own draws; tokens compared position by position over the "
                    "longer response, means over seeds."
                ),
            )
        ],
        origin={
            "pairs": [pair.label for pair in pairs],
            "seeds": list(seeds),
            "stream_runs": str(stream_runs),
            "keyed_runs": str(keyed_runs),
            "responses": str(responses),
        },
    )
    return write_page(page, out_dir, "coupling")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.coupling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", action="append", required=True, help="spec:row:reference (repeatable)")
    parser.add_argument("--seeds", type=int, nargs="+", required=True, help="the seeds both kinds of draws trained")
    parser.add_argument("--stream-runs", type=Path, required=True, help="<spec>/<row>/seed<n>/ under stream draws")
    parser.add_argument("--keyed-runs", type=Path, required=True, help="<spec>/<row>/seed<n>/ under keyed draws")
    parser.add_argument("--responses", type=Path, required=True, help="<draws>/<spec>/<row>/seed<n>.json")
    parser.add_argument("--out", type=Path, default=Path("results/reports"), help="directory for the report")
    args = parser.parse_args(argv)

    def write():
        pairs = [parse_pair(text) for text in args.pair]
        return write_coupling(pairs, args.seeds, args.stream_runs, args.keyed_runs, args.responses, args.out)

    return run_report(write, (ConfigError, ValueError, FileNotFoundError))


if __name__ == "__main__":
    sys.exit(main())
