"""Which CPU kernels the math runs on: pinned to one instruction-set level by default, so a run gives the
same bits on every supported x86 machine.

PyTorch, MKL and oneDNN each pick their kernels from the CPU they find (AVX2, AVX-512, AMX, ...), and
kernels of different widths sum in different orders: the same seed then trains a different model on
another machine. Pinning all three to AVX2, a level every supported x86-64 CPU has, removes that
choice: on an AVX-512 machine the built-in base comes out byte-identical to an AVX2-only machine's.

- ``ATEN_CPU_CAPABILITY``: PyTorch's own vectorised kernels (read when torch first dispatches);
- ``MKL_CBWR``: MKL's conditional numerical reproducibility (its code path for BLAS and LAPACK), in
  its strict mode: MKL documents the plain mode as reproducible only for inputs of the same memory
  alignment, which a run resumed from a checkpoint need not share;
- ``ONEDNN_MAX_CPU_ISA``: the highest instruction set oneDNN's kernels may use.

Each must be in the environment before torch loads, so ``algos`` pins them on import (every command
line of the harness imports it first). A variable the user has set is left as it is, and
``RL_KERNELS=native`` lifts the pin for speed (``kernels: native`` in the workflow config).
"""

from __future__ import annotations

import os
import platform
import sys

KERNELS_VARIABLE = "RL_KERNELS"
KERNEL_CHOICES = ("portable", "native")
PORTABLE_ISA = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2"}
"""Environment variable -> the value that pins it to AVX2."""


def requested_kernels() -> str:
    """``portable`` (default) or ``native``, from ``RL_KERNELS``; anything else fails naming the choices."""
    choice = os.environ.get(KERNELS_VARIABLE, "portable")
    if choice not in KERNEL_CHOICES:
        print(
            f"error: {KERNELS_VARIABLE}={choice!r} is not one of: {', '.join(KERNEL_CHOICES)} (set in the "
            "environment or by the workflow config's 'kernels')",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return choice


def pin_portable_kernels() -> dict[str, str]:
    """Set the :data:`PORTABLE_ISA` variables the environment does not already set (x86-64 only, and only
    unless ``RL_KERNELS=native``); returns the kernel variables in force afterwards."""
    if requested_kernels() == "portable" and platform.machine().lower() in ("x86_64", "amd64"):
        for name, value in PORTABLE_ISA.items():
            os.environ.setdefault(name, value)
    return kernel_settings()


def unpinned_kernels() -> str | None:
    """A warning when the AVX2 pin is in force but torch already chose wider kernels (it ran an operation
    before ``algos`` was imported: the capability is fixed at torch's first dispatch); None otherwise."""
    import torch

    pinned = os.environ.get("ATEN_CPU_CAPABILITY") == PORTABLE_ISA["ATEN_CPU_CAPABILITY"]
    in_use = torch.backends.cpu.get_cpu_capability()
    if requested_kernels() != "portable" or not pinned or in_use in ("AVX2", "DEFAULT"):
        return None
    return (
        f"torch runs {in_use} kernels although the AVX2 pin is set: it ran an operation before algos was "
        "imported, so this run's numbers depend on the machine; import algos before torch, or set "
        "ATEN_CPU_CAPABILITY=avx2 in the environment"
    )


def kernel_settings() -> dict[str, str]:
    """The kernel variables of this process's environment (unset ones left out)."""
    return {name: os.environ[name] for name in (KERNELS_VARIABLE, *PORTABLE_ISA) if name in os.environ}
