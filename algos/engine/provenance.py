"""Where a run came from: tags that make any number traceable to code, config and machine."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from algos.config.presets import config_hash
from algos.config.schema import RLConfig
from algos.engine.commit import git_commit
from algos.kernels import kernel_settings

TRACKED_PACKAGES = ("torch", "transformers", "accelerate", "tokenizers")
CPU_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_bf16",
)
"""The instruction-set flags that decide which kernels PyTorch, MKL and oneDNN may pick."""
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def hardware(device: torch.device) -> str:
    """The accelerator's name, or the CPU's with its core count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} x{torch.get_num_threads()} threads"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's processor string."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """Which of :data:`CPU_FLAGS` this CPU has (empty where /proc/cpuinfo is not there)."""
    present = set(_cpuinfo_field("flags").split())
    return [flag for flag in CPU_FLAGS if flag in present]


def packages() -> dict[str, str]:
    """Every installed distribution -> its version, sorted by name."""
    found = {dist.metadata["Name"].lower(): dist.version for dist in metadata.distributions() if dist.metadata["Name"]}
    return dict(sorted(found.items()))


def environment() -> dict[str, Any]:
    """What decides a CPU run's bits besides its config: the CPU, the kernels in use, threads and packages.

    ``fingerprint`` hashes everything but the CPU model, so two runs with the same fingerprint ran the
    same kernels over the same software and agree bit for bit, whatever machine they ran on.
    """
    software = {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "kernel_settings": kernel_settings(),
        "threads": {
            "torch": torch.get_num_threads(),
            "torch_interop": torch.get_num_interop_threads(),
            **{name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ},
        },
        "python": platform.python_version(),
        "packages": packages(),
    }
    digest = hashlib.sha256(json.dumps(software, sort_keys=True).encode()).hexdigest()[:16]
    return {"fingerprint": digest, "cpu_model": cpu_model(), "cpu_flags": cpu_flags(), **software}


def run_tags(cfg: RLConfig, preset: str | None, device: torch.device) -> dict[str, str]:
    """Tags of a run: preset, seed, config hash, git commit, package versions, hardware, kernels in use."""
    tags = {
        "preset": preset or "custom",
        "seed": str(cfg.seed),
        "config_hash": config_hash(cfg),
        "git_commit": git_commit(),
        "hardware": hardware(device),
        "python": platform.python_version(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    for package in TRACKED_PACKAGES:
        tags[f"version.{package}"] = metadata.version(package)
    return tags


def _cpuinfo_field(name: str) -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""
