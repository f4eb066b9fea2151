"""The GPU check's summary: every GPU test's outcome (with the numbers the tests record) and the bench's table.

Reads what ``experiments/gpu/check.sh`` leaves in its folder: ``gpu-tests.xml`` (pytest's JUnit report) and
``bench-*.json`` (``python -m algos.campaign.bench``, one per batch size); a missing one (its phase was stopped
at its time limit) is reported as missing. Writes ``summary.json`` and ``summary.md`` there and prints the latter.

Command line::

    python -m reports.gpu_check --out results/gpu-check [--wall-seconds 412]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from xml.etree import ElementTree

TESTS_FILE, BENCH_FILES = "gpu-tests.xml", "bench-*.json"
SUMMARY_JSON, SUMMARY_MD = "summary.json", "summary.md"
OUTCOMES = ("passed", "failed", "error", "skipped", "interrupted")


def case_outcomes(report: Path) -> list[dict]:
    """Each test case of a JUnit report: its id, outcome (passed, failed, error, skipped, interrupted), seconds, the
    reason of a skip or failure's first line, and the properties it recorded.

    A suite stopped at its time limit (an interrupt) still writes its report, the running test as a case with no
    name and nothing in it: that case is interrupted, not passed.
    """
    cases = []
    for case in ElementTree.parse(report).iter("testcase"):
        outcome, reason = "passed", ""
        test = f"{case.get('classname')}::{case.get('name')}"
        if case.get("name") is None:
            test, outcome, reason = "the test running", "interrupted", "the suite was stopped at its time limit"
        for kind, name in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
            found = case.find(kind)
            if found is not None:
                text = (found.get("message") or found.text or "").strip()
                outcome, reason = name, text.splitlines()[0][:300] if text else ""
                break
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        cases.append(
            {
                "test": test,
                "outcome": outcome,
                "seconds": round(float(case.get("time") or 0.0), 2),
                "reason": reason,
                "properties": properties,
            }
        )
    return cases


def summarize(folder: Path, wall_seconds: float | None = None) -> dict:
    """The summary of the check's folder (see the module's docstring)."""
    tests = case_outcomes(folder / TESTS_FILE) if (folder / TESTS_FILE).is_file() else None
    loaded = {path.name: json.loads(path.read_text()) for path in folder.glob(BENCH_FILES)}
    by_size = sorted(loaded.items(), key=lambda item: (_batch(item[1]), item[0]))  # the smaller batch first
    benches = dict(by_size)
    counts = None
    if tests is not None:
        counts = {
            outcome: sum(t["outcome"] == outcome for t in tests) for outcome in OUTCOMES
        }
    return {"wall_seconds": wall_seconds, "test_counts": counts, "tests": tests, "benches": benches}


def _batch(bench: dict) -> int:
    return bench["workload"]["prompts"] * bench["workload"]["group"]


def markdown(summary: dict) -> str:
    """The summary as Markdown: test counts, the tests that did not pass, and the bench's table."""
    lines = ["# GPU check", ""]
    if summary["wall_seconds"] is not None:
        lines += [f"Wall time: {summary['wall_seconds']:.0f} s.", ""]
    if summary["tests"] is None:
        lines += [f"GPU suite: no {TESTS_FILE} (the suite did not finish).", ""]
    else:
        counts = summary["test_counts"]
        lines += ["GPU suite: " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items() if n) + ".", ""]
        skipped: dict[str, int] = {}
        for test in summary["tests"]:
            if test["outcome"] == "skipped":
                skipped[test["reason"]] = skipped.get(test["reason"], 0) + 1
            elif test["outcome"] != "passed":
                lines.append(f"- {test['outcome']}: `{test['test']}`: {test['reason']}")
        lines += [f"- {count} skipped: {reason}" for reason, count in skipped.items()]
        lines.append("")
    if not summary["benches"]:
        lines.append(f"Bench: no {BENCH_FILES} (the bench did not finish).")
    for name, bench in summary["benches"].items():
        lines += [f"## {name}", "", *bench_lines(bench), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def bench_lines(bench: dict) -> list[str]:
    """One bench's setting, its table (a row per side) and its ratios, as Markdown lines."""
    work, throughput = bench["workload"], bench["throughput"]
    setting = (
        f"Bench on {throughput['device_name']}: {work['model']} ({throughput['matmul_parameters'] / 1e6:.1f} M "
        f"matrix-multiplied parameters), {work['precision']}, P = {work['prompts']}, G = {work['group']}, "
        f"up to {work['max_new_tokens']} new tokens, {work['repeats']} timed steps after {work['warmup']}; "
        f"measured matrix-product rate {throughput['matmul_tflops']:.1f} TFLOP/s."
    )
    header = (
        "| side | median step (s) | first step (s) | generation tokens/s | training tokens/s | peak memory (GiB) "
        "| update TFLOP/s | share of the matrix-product rate |"
    )
    lines = [setting, "", header, "|---|---|---|---|---|---|---|---|"]
    for side, row in bench["sides"].items():
        peak, first = row.get("peak_memory_mb"), row.get("first_step_s")
        lines.append(
            f"| {side} | {row['median_step_s']:.3f} | {'' if first is None else f'{first:.2f}'} "
            f"| {row['generation_tokens_per_s']:.0f} | {row['training_tokens_per_s']:.0f} "
            f"| {'' if peak is None else f'{peak / 1024:.2f}'} | {throughput['update_tflops'][side]:.1f} "
            f"| {100 * throughput['share_of_matmul'][side]:.1f} % |"
        )
    lines.append("")
    for side, error in bench.get("failed_sides", {}).items():
        lines.append(f"Failed: {side}: {error.splitlines()[0][:300]}")
    if "completion_length_gap" in bench:
        verdict = "comparable" if bench["comparable"] else "void: completion lengths differ"
        lines.append(f"Work: {verdict} (largest completion-length gap {100 * bench['completion_length_gap']:.1f} %).")
    for side, ratio in bench.get("step_ratio_over_trl", {}).items():
        lines.append(f"Step time {side} / TRL: {ratio:.3f}.")
    for side, speedup in bench.get("decode_speedup_over_eager", {}).items():
        lines.append(f"Decoding tokens/s {side} / harness_eager: {speedup:.2f}x.")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the check's folder")
    parser.add_argument("--wall-seconds", type=float, help="the whole check's wall time so far")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        parser.error(f"--out {args.out} is not a folder")
    summary = summarize(args.out, args.wall_seconds)
    text = markdown(summary)
    (args.out / SUMMARY_JSON).write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / SUMMARY_MD).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
