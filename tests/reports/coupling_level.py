"""How often the coupling report's two rules find keyed draws shrinking the spread, on simulated tables.

Each table: 4 pairs × ``--seeds`` seeds of paired differences under stream draws (SD 1) and keyed draws (SD the true
ratio), the last two pairs correlated 0.5 (they share their reference row), seeds drawn normal, t with 3 degrees of
freedom (scaled to SD 1) or skewed (gamma(1) - 1). For each law and true ratio (1: the draws change nothing), the share
of tables where the exact permutation test gives p <= 0.025 and where the bootstrap interval's upper bound is below 1.

Command line: ``python -m tests.reports.coupling_level [--tables 1000] [--seeds 12]``.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from reports.coupling import DECISION_LEVEL, pooled_ratio_p_value, pooled_sd_ratio_interval

PAIRS = 4
LAWS = ("normal", "t3", "skewed")
RATIOS = (1.0, 0.7, 0.5)


def seed_values(law: str, rng: np.random.Generator, size: tuple[int, int]) -> np.ndarray:
    """(pairs, seeds) draws of mean 0 and SD 1, the last two pairs correlated 0.5."""
    if law == "normal":
        values = rng.standard_normal(size)
    elif law == "t3":
        values = rng.standard_t(3, size) / np.sqrt(3)
    else:
        values = rng.gamma(1.0, size=size) - 1.0
    values[-1] = 0.5 * values[-2] + np.sqrt(0.75) * values[-1]
    return values


def rates(tables: int, seeds: int, resamples: int = 2000) -> dict[str, dict[str, dict[str, float]]]:
    rng = np.random.default_rng(1)
    found: dict[str, dict[str, dict[str, float]]] = {}
    for law in LAWS:
        for ratio in RATIOS:
            permutation = bootstrap = 0
            for _ in range(tables):
                stream = seed_values(law, rng, (PAIRS, seeds))
                keyed = ratio * seed_values(law, rng, (PAIRS, seeds))
                permutation += pooled_ratio_p_value(stream, keyed) <= DECISION_LEVEL
                bootstrap += pooled_sd_ratio_interval(stream, keyed, resamples=resamples)[2] < 1
            found.setdefault(law, {})[f"true SD ratio {ratio}"] = {
                "permutation test": permutation / tables,
                "bootstrap bound": bootstrap / tables,
            }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.reports.coupling_level", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tables", type=int, default=1000, help="simulated tables a law and true ratio")
    parser.add_argument("--seeds", type=int, default=12, help="seeds a pair")
    args = parser.parse_args(argv)
    print(json.dumps(rates(args.tables, args.seeds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
