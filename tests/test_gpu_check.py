"""The GPU check (experiments/gpu/check.sh) off the GPU: the script refuses to run without CUDA unless asked for a
dry run, the dry run wires every phase on the CPU (its suite skipped with a reason), and its summary reads right."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reports.gpu_check import main as summary_main
from reports.gpu_check import markdown, summarize

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "experiments" / "gpu" / "check.sh"
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks what happens without CUDA")


def check(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("OUT", None)
    return subprocess.run(
        ["bash", str(CHECK), *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600, check=False
    )


@no_cuda
def test_without_cuda_the_check_stops_with_one_message_unless_a_dry_run(tmp_path):
    result = check("--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: no CUDA device is visible: run this on a GPU machine, or pass --dry-run to check the wiring on the CPU"
    ]
    assert not (tmp_path / "out").exists()


def test_an_unknown_argument_is_one_message_naming_the_usage(tmp_path):
    result = check("--dryrun")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: unknown argument '--dryrun'; usage: bash experiments/gpu/check.sh [--dry-run] [--out DIR] [--wheels DIR]"
    )


@pytest.mark.slow
def test_the_dry_run_runs_every_phase_on_the_cpu(tmp_path):
    result = check("--dry-run", "--out", str(tmp_path))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert {path.name for path in tmp_path.iterdir()} == {
        "check.log",
        "gpu-tests.xml",
        "bench-small.json",
        "bench-large.json",
        "update_profile.txt",
        "summary.json",
        "summary.md",
    }
    summary = json.loads((tmp_path / "summary.json").read_text())
    if not torch.cuda.is_available():  # every test of the suite skipped, with its reason
        assert summary["test_counts"]["skipped"] == len(summary["tests"]) > 0
        reason = "no CUDA device is visible: the GPU suite runs on a GPU machine"
        assert reason in (tmp_path / "check.log").read_text()
    assert set(summary["benches"]) == {"bench-small.json", "bench-large.json"}
    for bench in summary["benches"].values():
        assert bench["workload"]["device"] == "cpu" and bench["workload"]["precision"] == "bf16"
        assert set(bench["sides"]) == {"harness_eager", "harness_static", "harness_compiled"}
        assert bench["sides"]["harness_static"]["median_step_s"] > 0
        assert bench["throughput"]["update_tflops"]["harness_static"] > 0
    assert "update (joined rows, chunked log-probabilities)" in (tmp_path / "update_profile.txt").read_text()
    text = (tmp_path / "summary.md").read_text()
    assert "| harness_static |" in text and "Decoding tokens/s harness_static / harness_eager" in text


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.gpu.test_updates" name="test_a[grpo]" time="1.5">
  <properties><property name="gap" value="1e-07"/></properties></testcase>
<testcase classname="tests.gpu.test_fsdp2" name="test_b" time="30.0">
  <failure message="AssertionError: the run must be killed part-way&#10;more">trace</failure></testcase>
<testcase classname="tests.gpu.test_sampling" name="test_c" time="0.0">
  <skipped message="no CUDA device is visible">skip</skipped></testcase>
<testcase classname="tests.gpu.test_sampling" name="test_d" time="0.0">
  <skipped message="no CUDA device is visible">skip</skipped></testcase>
<testcase time="0.002" />
</testsuite></testsuites>"""
"""Four tests, and a fifth running when the suite was interrupted (pytest's report names no test for it)."""

BENCH = {
    "workload": {"model": "qwen2-0.5b", "precision": "bf16", "prompts": 8, "group": 8, "max_new_tokens": 128},
    "sides": {
        "harness_eager": {
            "median_step_s": 4.5,
            "first_step_s": 5.0,
            "generation_tokens_per_s": 2000.0,
            "training_tokens_per_s": 17000.0,
            "peak_memory_mb": 2048.0,
        },
        "trl": {"median_step_s": 5.0, "generation_tokens_per_s": 1800.0, "training_tokens_per_s": 50000.0},
    },
    "completion_length_gap": 0.01,
    "comparable": True,
    "step_ratio_over_trl": {"harness_eager": 0.9},
    "throughput": {
        "device_name": "GPU",
        "matmul_parameters": 494e6,
        "matmul_tflops": 750.0,
        "update_tflops": {"harness_eager": 56.6, "trl": 170.0},
        "share_of_matmul": {"harness_eager": 0.0755, "trl": 0.2267},
    },
}


def test_the_summary_counts_outcomes_lists_what_did_not_pass_and_tables_the_bench(tmp_path):
    (tmp_path / "gpu-tests.xml").write_text(JUNIT)
    (tmp_path / "bench-small.json").write_text(
        json.dumps({**BENCH, "workload": {**BENCH["workload"], "repeats": 3, "warmup": 1}})
    )
    summary = summarize(tmp_path, wall_seconds=300)
    assert summary["test_counts"] == {"passed": 1, "failed": 1, "error": 0, "skipped": 2, "interrupted": 1}
    assert summary["tests"][0]["properties"] == {"gap": "1e-07"}
    text = markdown(summary)
    assert "GPU suite: 1 passed, 1 failed, 2 skipped, 1 interrupted." in text
    assert "- interrupted: `the test running`: the suite was stopped at its time limit\n" in text
    assert "- failed: `tests.gpu.test_fsdp2::test_b`: AssertionError: the run must be killed part-way\n" in text
    assert "- 2 skipped: no CUDA device is visible" in text
    assert "## bench-small.json" in text
    assert "| harness_eager | 4.500 | 5.00 | 2000 | 17000 | 2.00 | 56.6 | 7.5 % |" in text
    assert "| trl | 5.000 |  | 1800 | 50000 |  | 170.0 | 22.7 % |" in text
    assert "Step time harness_eager / TRL: 0.900." in text and "Work: comparable" in text
    assert "494.0 M matrix-multiplied parameters" in text and "750.0 TFLOP/s" in text


def test_phases_that_did_not_finish_are_reported_as_missing(tmp_path, capsys):
    assert summary_main(["--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert (
        "no gpu-tests.xml (the suite did not finish)" in text and "no bench-*.json (the bench did not finish)" in text
    )
    assert (tmp_path / "summary.md").read_text() == text
    with pytest.raises(SystemExit) as stopped:
        summary_main(["--out", str(tmp_path / "missing")])
    assert stopped.value.code == 2
