"""Simulated sweeps through the confirmation's own test: how often "better than the preset" is claimed when no
configuration is better, beside its declared rate, and how often a configuration that is better is confirmed.

Each simulated sweep searches ``trials`` configurations with ``seeds`` tuning seeds each (seed i of every trial shares
half its noise, as the search's trials share seed numbers), picks the ``top`` by their tuning means, and retrains them
and the preset on the confirmation's fresh seeds (paired: each trial's per-seed difference from the preset is drawn
in the shape, at the sd of a difference of two runs half of whose noise is shared), then judges each against the
preset with
:func:`reports.statistics.confirmation.confirm` at the declared level over the ``top``. Scenarios:

- ``null``: every trial is the preset's configuration (a null sweep: no winner exists); a "better" claim is wrong,
  and its rate should stay at or below half the family-wise level (the two-sided test's one side);
- ``one_better``: one trial is better by ``--effect`` points, the rest null: how often that trial reaches the top
  and is confirmed better, and how often a null trial is called better beside it.

Per-seed noise of sd ``--sd`` points, and the fresh seeds' differences, take each shape of the envelope the sequential
boundaries are calibrated on (normal, Student t₃, gamma skewed either way:
:func:`reports.statistics.envelope.envelope_draws`). The winner's curse
is the top trial's tuning mean less its fresh-seed mean, in points.

Command line: ``python -m reports.planning.null_sweep --sweep dapo_default [--sweeps 20000] [--sd 2.5]``.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np

from algos.campaign.sweeps import SweepSpec, read_sweep
from reports.statistics.confirmation import Verdict, confirm
from reports.statistics.envelope import ENVELOPE, envelope_draws

SCENARIOS = ("null", "one_better")
SHARED = 0.5  # the share of a seed's noise every configuration run with that seed has in common


@dataclass(frozen=True)
class SweepRates:
    """One shape and scenario over ``sweeps`` simulated sweeps. better: the share of sweeps with a null configuration
    called better (with its Monte-Carlo s.e.); worse: with any configuration called worse that is not; found: the
    share where the truly better trial (one_better) was among the top and confirmed better; curse: the top trial's
    tuning mean less its fresh mean, points, averaged."""

    shape: str
    scenario: str
    sweeps: int
    better: float
    better_se: float
    worse: float
    found: float | None
    curse: float


def simulate(
    spec: SweepSpec, shape: str, scenario: str, sweeps: int, sd: float, effect: float, seed: int
) -> SweepRates:
    """The rates over ``sweeps`` simulated sweeps of ``spec`` (see the module's docstring); sd, effect in points."""
    confirmation = spec.confirmation
    rng = np.random.default_rng(seed)
    truth = np.zeros(spec.trials)
    if scenario == "one_better":
        truth[0] = effect / 100
    better = worse = found = 0
    curse = 0.0
    for _ in range(sweeps):
        tuning = truth[:, None] + sd / 100 * _noise(shape, rng, spec.trials, spec.seeds)  # (trials, seeds)
        means = tuning.mean(axis=1)
        top = np.argsort(-means, kind="stable")[: confirmation.top]
        preset = sd / 100 * _noise(shape, rng, 1, confirmation.seeds)[0]  # (fresh seeds,)
        # each trial's per-seed difference from the preset in the shape itself: the independent parts of two runs'
        # noise would cancel a skew, and the paired t reads only the differences
        spread = sd / 100 * math.sqrt(2 * (1 - SHARED))
        fresh = preset + spread * envelope_draws(shape, rng, (len(top), confirmation.seeds))  # (top, fresh seeds)
        called_better = called_worse = False
        for rank, trial in enumerate(top):
            values = truth[trial] + fresh[rank]
            verdict = confirm(values, preset, len(top), confirmation.level, confirmation.margin).verdict
            called_better |= verdict is Verdict.BETTER and truth[trial] == 0
            called_worse |= verdict is Verdict.WORSE
            found += verdict is Verdict.BETTER and truth[trial] > 0
        better += called_better
        worse += called_worse
        curse += 100 * (means[top[0]] - (truth[top[0]] + fresh[0].mean()))  # the same trial, fresh seeds
    rate = better / sweeps
    return SweepRates(
        shape=shape,
        scenario=scenario,
        sweeps=sweeps,
        better=rate,
        better_se=math.sqrt(max(rate * (1 - rate), 1e-12) / sweeps),
        worse=worse / sweeps,
        found=found / sweeps if scenario == "one_better" else None,
        curse=curse / sweeps,
    )


def _noise(shape: str, rng: np.random.Generator, configurations: int, seeds: int) -> np.ndarray:
    """Standardised per-seed noise of ``configurations`` runs of each of ``seeds`` seeds, a share shared by seed."""
    shared = envelope_draws(shape, rng, (1, seeds))
    own = envelope_draws(shape, rng, (configurations, seeds))
    return math.sqrt(SHARED) * shared + math.sqrt(1 - SHARED) * own


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.planning.null_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", default="dapo_default", help="a sweep spec that declares a confirmation")
    parser.add_argument("--sweeps", type=int, default=20_000, help="simulated sweeps per shape and scenario")
    parser.add_argument("--sd", type=float, default=2.5, help="a run's seed sd of the metric, in points")
    parser.add_argument("--effect", type=float, default=3.0, help="the better trial's effect (one_better), in points")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    spec = read_sweep(args.sweep)
    if spec.confirmation is None:
        print(f"error: sweep '{spec.name}' declares no confirmation", file=sys.stderr)
        return 2
    level = spec.confirmation.level
    print(
        f"## {spec.name}: {spec.trials} trials x {spec.seeds} tuning seeds, top {spec.confirmation.top} and the preset "
        f"on {spec.confirmation.seeds} fresh seeds; seed sd {args.sd:g} points; {args.sweeps} sweeps a cell"
    )
    print(
        f"| shape | scenario | 'better' claimed wrongly (declared at most {level / 2:g}) | 'worse' claimed | the better "
        "trial confirmed | winner's curse (points) |"
    )
    print("|---|---|---|---|---|---|")
    for shape in ENVELOPE:
        for scenario in SCENARIOS:
            r = simulate(spec, shape, scenario, args.sweeps, args.sd, args.effect, args.seed)
            found = "—" if r.found is None else f"{r.found:.3f}"
            print(
                f"| {shape} | {scenario} | {r.better:.4f} ± {r.better_se:.4f} | {r.worse:.4f} | {found} "
                f"| {r.curse:+.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
