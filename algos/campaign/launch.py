"""How a run over several processes starts: ``accelerate launch`` with a rendezvous port free at the time.

Two multi-process runs on one machine (two workflow jobs of ``training.processes`` above 1 under ``--cores 4``, two
SLURM jobs on one node, two tests on two pytest workers) would each bind accelerate's default port, 29500, and the
second would fail with EADDRINUSE. Port 0 makes accelerate take a port the system reports free when it launches
(accelerate's ``get_free_port``). The workflow's training jobs and the tests start their processes with these same
arguments.
"""

from __future__ import annotations

from pathlib import Path

from algos.config.presets import PROJECT_ROOT, ConfigError

FREE_PORT = "0"
"""accelerate's ``--main_process_port`` value that asks for a port free at launch."""


def launch_arguments(config_file: str | Path, processes: int) -> list[str]:
    """The arguments of ``accelerate launch`` for ``processes`` processes under ``config_file``, on a free port."""
    return ["--config_file", str(config_file), "--num_processes", str(processes), "--main_process_port", FREE_PORT]


def accelerate_config_file(value: str | Path, key: str = "training.accelerate_config") -> Path:
    """The accelerate config file ``value`` names: as given where it exists (absolute, or relative to the working
    directory), else relative to the project, where the shipped ones live (experiments/accelerate/), so a workflow
    run in another directory (``snakemake -d``) finds them. Neither: a ConfigError naming ``key`` and the shipped
    files."""
    given = Path(value)
    for candidate in (given, PROJECT_ROOT / given):
        if candidate.is_file():
            return candidate.resolve()
    shipped = sorted(
        str(path.relative_to(PROJECT_ROOT)) for path in (PROJECT_ROOT / "experiments/accelerate").glob("*.yaml")
    )
    raise ConfigError(
        f"{key}: no file {value} in the working directory or the project; give a path to an accelerate config, e.g. "
        f"one of: {', '.join(shipped)}"
    )
