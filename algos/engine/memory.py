"""Peak memory of this process over a stretch of work (a training step): reset at its start, read at its end."""

from __future__ import annotations

import resource
from pathlib import Path

import torch

_CLEAR_REFS = Path("/proc/self/clear_refs")
_STATUS = Path("/proc/self/status")


def reset_peak_memory(device: torch.device) -> None:
    """Start measuring this process's peak memory afresh (CUDA: allocated; Linux CPU: resident set)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    elif _CLEAR_REFS.exists():
        _CLEAR_REFS.write_text("5")  # resets the resident-set high-water mark VmHWM


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory since :func:`reset_peak_memory`, in MiB; on CPUs without that reset, the process's lifetime peak."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    if _CLEAR_REFS.exists() and _STATUS.exists():
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def held_memory_mb(device: torch.device) -> float:
    """Memory live tensors hold now on a CUDA ``device``, in MiB (a later peak includes it); 0 on the CPU, whose
    resident peak cannot be split into what was held before and what came after."""
    return torch.cuda.memory_allocated(device) / 2**20 if device.type == "cuda" else 0.0
