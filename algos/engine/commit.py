"""The project's commit a number came from: what a run's and a report's provenance name, read without loading a
model (reports import this, not :mod:`algos.engine.provenance`, which loads torch)."""

from __future__ import annotations

import subprocess

from algos.config.presets import PROJECT_ROOT


def git_commit() -> str:
    """The project's commit, with ``+dirty`` when the working tree has changes; ``unknown`` outside git."""
    try:
        run = lambda *args: subprocess.run(  # noqa: E731
            ["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        return run("rev-parse", "HEAD") + ("+dirty" if run("status", "--porcelain", "--untracked-files=no") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
