"""Where a run came from: tags that make any number traceable to code, config and machine."""

from __future__ import annotations

import platform
import subprocess
from importlib import metadata
from pathlib import Path

import torch

from algos.config import RLConfig
from algos.presets import config_hash

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TRACKED_PACKAGES = ("torch", "transformers", "accelerate", "tokenizers")


def git_commit() -> str:
    """The project's commit, with ``+dirty`` when the working tree has changes; ``unknown`` outside git."""
    try:
        run = lambda *args: subprocess.run(  # noqa: E731
            ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        return run("rev-parse", "HEAD") + ("+dirty" if run("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def hardware(device: torch.device) -> str:
    """The accelerator's name, or the CPU's with its core count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} x{torch.get_num_threads()} threads"


def run_tags(cfg: RLConfig, preset: str | None, device: torch.device) -> dict[str, str]:
    """Tags of a run: preset, seed, config hash, git commit, package versions, hardware."""
    tags = {
        "preset": preset or "custom",
        "seed": str(cfg.seed),
        "config_hash": config_hash(cfg),
        "git_commit": git_commit(),
        "hardware": hardware(device),
        "python": platform.python_version(),
    }
    for package in TRACKED_PACKAGES:
        tags[f"version.{package}"] = metadata.version(package)
    return tags
