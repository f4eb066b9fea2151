"""Gradings where nothing reaps orphans: every verdict right, no zombie left, the tier the same throughout.

In a PID namespace whose process 1 is ``timeout`` (as in a container or job whose PID 1 is the job), a process
orphaned by a sandbox stays a zombie for good. This runs, in such a namespace, ``--gradings`` gradings of
HumanEval/0 in one grader process (its canonical solution and a wrong one in turn), then ``--processes`` grader
processes in a row that grade the canonical solution once each, and counts the namespace's zombies after each part.

Command line (as root; ``--as-nobody`` grades as uid 65534): ``python -m tests.eval.sandbox.reaping --gradings
1000 --processes 200 [--isolation gvisor|bubblewrap] [--as-nobody]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.eval.sandbox.hostile import RETURN_WRONG
from tests.eval.sandbox.unprivileged import AS_NOBODY, unprivileged_python

PROJECT = Path(__file__).resolve().parents[3]
GRADER = """
import json
from eval.benchmarks.humaneval import run_humaneval
from eval.benchmarks.loaders import load_benchmark
from eval.sandbox.host import detect_isolation
problem = load_benchmark("humaneval", limit=1)[0]
completions = [problem.solution, {wrong!r}]
statuses = [run_humaneval(problem, completions[i % 2]).status for i in range({gradings})]
print(json.dumps({{"tier": detect_isolation().kind, "statuses": statuses}}))
"""
"""A grader process: HumanEval/0's canonical solution, then a wrong one, in turn; its tier and the statuses."""


def zombies() -> int:
    """Zombie processes in this PID namespace (its /proc)."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path("/proc", entry, "stat").read_text()
            except OSError:
                continue
            count += stat[stat.rindex(")") + 2] == "Z"
    return count


def grader(python: list[str], gradings: int, environment: dict[str, str]) -> dict:
    """One grader process's tier and statuses (its error's end where it failed)."""
    code = GRADER.format(wrong=RETURN_WRONG, gradings=gradings)
    done = subprocess.run([*python, "-c", code], capture_output=True, text=True, env=environment, cwd=PROJECT)
    if done.returncode != 0:
        return {"tier": None, "statuses": [], "error": done.stderr[-500:]}
    return json.loads(done.stdout.splitlines()[-1])


def part(runs: list[dict], seconds: float) -> dict:
    """What a part of the measurement found: verdicts right (passed for the canonical solution, failed for the
    wrong one), tiers, zombies now, grader errors and seconds a grading."""
    statuses = [status for run in runs for status in run["statuses"]]
    right = sum(status == ("passed", "failed")[i % 2] for run in runs for i, status in enumerate(run["statuses"]))
    return {
        "gradings": len(statuses),
        "verdicts right": right,
        "tiers": sorted({str(run["tier"]) for run in runs}),
        "zombies": zombies(),
        "grader errors": [run["error"] for run in runs if "error" in run][:3],
        "seconds a grading": round(seconds / max(1, len(statuses)), 3),
    }


def inside(args: argparse.Namespace) -> dict:
    """Both parts, in the namespace whose PID 1 is ``timeout``."""
    tier = {"RL_SANDBOX": args.isolation} if args.isolation else {}
    # AS_NOBODY empties the environment: the tier goes on its command line
    nobody = [*AS_NOBODY, *(f"{key}={value}" for key, value in tier.items()), *unprivileged_python()]
    python = nobody if args.as_nobody else [sys.executable]
    environment = {**os.environ, **tier}
    report = {"pid 1": Path("/proc/1/comm").read_text().strip(), "grader uid": 65534 if args.as_nobody else 0}
    started = time.monotonic()
    report["one process"] = part([grader(python, args.gradings, environment)], time.monotonic() - started)
    started = time.monotonic()
    runs = [grader(python, 1, environment) for _ in range(args.processes)]
    report["processes in a row"] = part(runs, time.monotonic() - started)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.eval.sandbox.reaping", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gradings", type=int, default=1000, help="gradings in one grader process")
    parser.add_argument("--processes", type=int, default=200, help="grader processes in a row, one grading each")
    parser.add_argument("--isolation", choices=("gvisor", "bubblewrap"), help="RL_SANDBOX for the graders")
    parser.add_argument("--as-nobody", action="store_true", help="graders run as uid 65534")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inside:
        print(json.dumps(inside(args), indent=1))
        return 0
    namespace = ["unshare", "-p", "-f", "--mount-proc", "timeout", "86400"]
    forwarded = sys.argv[1:] if argv is None else argv
    return subprocess.run([*namespace, sys.executable, "-m", __spec__.name, *forwarded, "--inside"]).returncode


if __name__ == "__main__":
    sys.exit(main())
