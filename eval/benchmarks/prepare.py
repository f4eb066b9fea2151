"""Materialise a benchmark's problems into the workflow's results, so scoring reads a fixed local copy.

Command line: ``python -m eval.benchmarks.prepare --benchmark math500 --out results/benchmarks/math500.jsonl``.
Math benchmarks come from the JSONL directory in ``RL_BENCHMARKS_DIR`` (see :mod:`eval.benchmarks.loaders`),
or with ``--hub-id`` from that dataset on the Hugging Face hub (the registered column mapping, when
the benchmark has one; else columns ``problem`` and ``answer``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from eval.benchmarks.loaders import BENCHMARKS, HubSource, load_benchmark
from eval.benchmarks.suites import SUITES
from eval.tasks.records import Problem, write_problems


def hub_problems(benchmark: str, hub_id: str, split: str | None) -> list[Problem]:
    """``benchmark``'s problems from the hub dataset ``hub_id``, with the registered columns where there are some."""
    registered = BENCHMARKS[benchmark].hub if benchmark in BENCHMARKS else None
    source = dataclasses.replace(registered or HubSource(hub_id), path=hub_id)
    return load_benchmark(benchmark, hub=dataclasses.replace(source, split=split) if split else source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.benchmarks.prepare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", required=True, help=f"one of: {', '.join(SUITES)}")
    parser.add_argument("--out", required=True, type=Path, help="JSONL file of problem records to write")
    parser.add_argument(
        "--data-dir", type=Path, help="folder of the benchmark JSONL files (default: $RL_BENCHMARKS_DIR)"
    )
    parser.add_argument("--hub-id", help="load from this `datasets` hub id instead of the local directory")
    parser.add_argument("--split", help="hub split (default: the registered one, else test)")
    args = parser.parse_args(argv)
    if args.benchmark not in SUITES:
        print(f"error: unknown benchmark '{args.benchmark}'; valid benchmarks: {', '.join(SUITES)}", file=sys.stderr)
        return 2
    try:
        problems = (
            hub_problems(args.benchmark, args.hub_id, args.split)
            if args.hub_id
            else SUITES[args.benchmark].load(None, args.data_dir)
        )
    except (ValueError, FileNotFoundError, ImportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_problems(args.out, problems)
    print(f"{len(problems)} {args.benchmark} problems -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
