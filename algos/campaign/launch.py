"""How a run over several processes starts: ``accelerate launch`` with a rendezvous port free at the time.

Two multi-process runs on one machine (two workflow jobs of ``training.processes`` above 1 under ``--cores 4``, two
SLURM jobs on one node, two tests on two pytest workers) would each bind accelerate's default port, 29500, and the
second would fail with EADDRINUSE. Port 0 makes accelerate take a port the system reports free when it launches
(accelerate's ``get_free_port``). The workflow's training jobs and the tests start their processes with these same
arguments.
"""

from __future__ import annotations

from pathlib import Path

FREE_PORT = "0"
"""accelerate's ``--main_process_port`` value that asks for a port free at launch."""


def launch_arguments(config_file: str | Path, processes: int) -> list[str]:
    """The arguments of ``accelerate launch`` for ``processes`` processes under ``config_file``, on a free port."""
    return ["--config_file", str(config_file), "--num_processes", str(processes), "--main_process_port", FREE_PORT]
