"""Where a grading's time goes, under each sandbox: HumanEval/0's canonical solution graded again and again.

For each tier, in blocks of ``--block`` gradings that alternate between the tiers (so that a drift of the
machine's speed falls on both alike): the whole grading's wall time and the CPU time of its processes, and the
grading's three phases (the sandbox started and the program loaded, the tests' calls answered, the sandbox torn
down); and under gVisor, ``runsc`` running only an empty interpreter (what no grading can avoid): medians, in
milliseconds. Then, once a tier after the other, ``--gradings`` gradings ``--workers`` at a time
(:func:`eval.benchmarks.humaneval.run_many`), as an evaluation grades: the batch's mean a completion. Time it on an idle machine: the numbers are the machine's as much as the sandbox's.

Command line: ``python -m tests.eval.sandbox.grading_time [--gradings 30] [--block 5] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from eval.benchmarks.humaneval import run_humaneval, run_many
from eval.benchmarks.loaders import load_benchmark
from eval.sandbox import gvisor
from eval.sandbox.host import (
    CALL_COPIES,
    STRONG_ISOLATIONS,
    WORKER_DIR,
    WORKER_FILES,
    Call,
    Isolation,
    Sandbox,
    SandboxLimits,
    interpreter_view,
    memory_folder,
    strong_isolation,
)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(action: Callable[[], object]) -> tuple[float, float]:
    """``action``'s wall time and the CPU time of the processes it waited for, in milliseconds."""
    cpu, started = children_cpu_s(), time.perf_counter()
    action()
    return 1e3 * (time.perf_counter() - started), 1e3 * (children_cpu_s() - cpu)


def phases(problem, isolation: Isolation) -> dict[str, float]:
    """One grading's phases, in milliseconds: HumanEval/0's function called with its first test's arguments as many
    times as :func:`eval.sandbox.host.judge` makes each call."""
    call = Call.of(problem.metadata["entry_point"], ([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3), {})
    started = time.perf_counter()
    with Sandbox(problem.prompt + problem.solution, SandboxLimits(), isolation) as sandbox:
        loaded = time.perf_counter()
        sandbox.call_all([call], CALL_COPIES)
        answered = time.perf_counter()
    closed = time.perf_counter()
    return {
        "started and loaded": 1e3 * (loaded - started),
        "calls answered": 1e3 * (answered - loaded),
        "torn down": 1e3 * (closed - answered),
    }


def empty_interpreter_under_runsc() -> float:
    """Milliseconds for ``runsc`` to run the sandbox's interpreter on an empty program, bundle made beforehand."""
    parent = memory_folder(0)
    if parent is None:
        raise SystemExit("no in-memory folder (/dev/shm or $XDG_RUNTIME_DIR) for the bundle")
    view = interpreter_view()
    files = [(str(WORKER_DIR / name), f"/sandbox/{name}") for name in WORKER_FILES]
    arguments = [view.interpreter, "-S", "-E", "-s", "-B", "-c", "pass"]
    bundle = gvisor.make_bundle(parent, view, files, arguments, None)
    try:
        started = time.perf_counter()
        subprocess.run(bundle.command(shutil.which("runsc") or "runsc"), check=True, capture_output=True)
        return 1e3 * (time.perf_counter() - started)
    finally:
        bundle.remove()


def measure(gradings: int, block: int, workers: int) -> dict[str, dict]:
    problem = load_benchmark("humaneval", limit=1)[0]
    tiers = {kind: strong_isolation(kind) for kind in STRONG_ISOLATIONS}
    tiers = {kind: isolation for kind, isolation in tiers.items() if isinstance(isolation, Isolation)}
    samples: dict[str, dict[str, list[float]]] = {kind: {} for kind in tiers}

    def add(kind: str, name: str, value: float) -> None:
        samples[kind].setdefault(name, []).append(value)

    for kind, isolation in tiers.items():  # a first grading each, so that the view's copy is made before timing
        run_humaneval(problem, problem.solution, isolation=isolation)
    for _ in range(0, gradings, block):
        for kind, isolation in tiers.items():
            for _ in range(block):
                wall, cpu = timed(
                    lambda isolation=isolation: run_humaneval(problem, problem.solution, isolation=isolation)
                )
                add(kind, "grading", wall)
                add(kind, "grading's CPU", cpu)
                for name, value in phases(problem, isolation).items():
                    add(kind, name, value)
                if kind == "gvisor":
                    add(kind, "runsc, empty interpreter", empty_interpreter_under_runsc())
    pairs = [(problem, problem.solution)] * gradings
    for kind, isolation in tiers.items():
        wall, cpu = timed(lambda isolation=isolation: run_many(pairs, workers=workers, isolation=isolation))
        add(kind, f"a completion, {workers} at a time", wall / gradings)
        add(kind, f"CPU a completion, {workers} at a time", cpu / gradings)
    return {
        kind: {name: statistics.median(values) for name, values in by_name.items()} for kind, by_name in samples.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.eval.sandbox.grading_time", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--gradings", type=int, default=30, help="gradings a tier (a multiple of --block)")
    parser.add_argument("--block", type=int, default=5, help="gradings of one tier in a row")
    parser.add_argument("--workers", type=int, default=2, help="sandboxes at a time for the last measurement")
    args = parser.parse_args(argv)
    if args.gradings < 1 or args.block < 1 or args.gradings % args.block:
        parser.error("--gradings must be a positive multiple of --block")
    medians = measure(args.gradings, args.block, args.workers)
    report = {kind: {name: round(value, 1) for name, value in by_name.items()} for kind, by_name in medians.items()}
    if {"gvisor", "bubblewrap"} <= medians.keys():
        gvisor_ms, bubblewrap_ms = medians["gvisor"], medians["bubblewrap"]
        report["gvisor / bubblewrap"] = {
            name: round(gvisor_ms[name] / bubblewrap_ms[name], 2) for name in bubblewrap_ms if bubblewrap_ms[name] > 0
        }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
