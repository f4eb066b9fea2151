"""Kernel dispatch is pinned to AVX2 before torch loads, unless lifted; the environment record names it."""

import os
import platform
import subprocess
import sys

import pytest

from algos.engine.provenance import environment
from algos.kernels import PORTABLE_ISA

X86 = platform.machine().lower() in ("x86_64", "amd64")


def python(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in (*PORTABLE_ISA, "RL_KERNELS")}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(not X86, reason="the pins are x86-64 instruction sets")
@pytest.mark.parametrize("entry", ["algos.trainer.train", "eval.run.evaluate"])
@pytest.mark.slow
def test_every_command_line_runs_torch_on_avx2_kernels(entry):
    result = python(
        f"import {entry}, torch, os; print(torch.backends.cpu.get_cpu_capability(), os.environ['MKL_CBWR'])"
    )
    assert result.stdout.split() == ["AVX2", "AVX2,STRICT"], result.stderr


@pytest.mark.skipif(not X86, reason="the pins are x86-64 instruction sets")
def test_native_lifts_the_pin_and_a_users_own_setting_wins():
    unpinned = python(
        "import algos, os; print([os.environ.get(k) for k in ('ATEN_CPU_CAPABILITY', 'MKL_CBWR')])", RL_KERNELS="native"
    )
    assert unpinned.stdout.strip() == "[None, None]"
    own = python("import algos, torch; print(torch.backends.cpu.get_cpu_capability())", ATEN_CPU_CAPABILITY="default")
    assert own.stdout.strip() == "DEFAULT"


def test_an_unknown_kernel_choice_fails_naming_the_choices():
    result = python("import algos", RL_KERNELS="fastest")
    assert result.returncode != 0 and "RL_KERNELS='fastest' is not one of: portable, native" in result.stderr


def test_the_environment_record_names_cpu_kernels_threads_and_packages():
    record = environment()
    assert record["cpu_capability"] and record["packages"]["torch"].startswith("2.13.0")
    assert set(record["threads"]) >= {"torch", "torch_interop"} and len(record["fingerprint"]) == 16
    if X86:
        assert record["kernel_settings"]["ATEN_CPU_CAPABILITY"] == "avx2" and "avx2" in record["cpu_flags"]
    assert environment()["fingerprint"] == record["fingerprint"]  # stable within a process


@pytest.mark.skipif(not X86, reason="the pins are x86-64 instruction sets")
@pytest.mark.slow
def test_a_torch_that_chose_its_kernels_before_algos_is_named_in_a_warning():
    late = python(
        "import torch; torch.ones(8, 8) @ torch.ones(8, 8); from algos.kernels import unpinned_kernels; "
        "print(unpinned_kernels())"
    )
    capability = python("import torch; print(torch.backends.cpu.get_cpu_capability())").stdout.strip()
    expected = "None" if capability in ("AVX2", "DEFAULT") else f"torch runs {capability} kernels although"
    assert late.stdout.startswith(expected), late.stderr
    early = python("import algos, torch; torch.ones(8, 8) @ torch.ones(8, 8); print(algos.kernels.unpinned_kernels())")
    assert early.stdout.strip() == "None", early.stderr
