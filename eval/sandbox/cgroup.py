"""One cgroup (version 1) per sandbox: a memory and a process cap for its whole process tree, and
a way to kill all of it.

Version 1's ``memory`` and ``pids`` controllers, mounted at /sys/fs/cgroup/<controller>, need root to
create groups. Each sandbox gets ``sandbox-<random>`` below this process's own group where that
directory is visible, else below the controller's root.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

MOUNT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")


def unavailable_reason() -> str | None:
    """None when sandboxes can have cgroups here, else why not, in a few words."""
    for controller in CONTROLLERS:
        parent = _parent(controller)
        if not (parent / "cgroup.procs").is_file():
            return f"no cgroup v1 {controller} controller at {MOUNT / controller}"
        if not os.access(parent, os.W_OK):
            return f"{parent} is not writable (cgroups need root)"
    return None


def _parent(controller: str) -> Path:
    """This process's own group of ``controller`` where it is visible, else the controller's root."""
    root = MOUNT / controller
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return root
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            own = root / path.lstrip("/")
            return own if own.is_dir() else root
    return root


@dataclass(frozen=True)
class Cgroup:
    """The group's directory in each controller.

    procs_files: the ``cgroup.procs`` files a process writes its pid into to join the group.
    """

    directories: tuple[Path, ...]

    @classmethod
    def create(cls, memory_bytes: int, max_processes: int) -> Cgroup:
        """A new group capping its members at ``memory_bytes`` (swap included where the kernel accounts it)
        and ``max_processes`` processes and threads."""
        name = f"sandbox-{secrets.token_hex(6)}"
        memory, pids = (_parent(controller) / name for controller in CONTROLLERS)
        group = cls((memory, pids))
        try:
            memory.mkdir()
            pids.mkdir()
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            swap = memory / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(memory_bytes))
            (pids / "pids.max").write_text(str(max_processes))
        except OSError:
            group.remove()
            raise
        return group

    @property
    def procs_files(self) -> tuple[str, ...]:
        return tuple(str(directory / "cgroup.procs") for directory in self.directories)

    def members(self) -> set[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            try:
                found.update(int(pid) for pid in Path(procs).read_text().split())
            except OSError:
                pass  # already removed
        return found

    def out_of_memory(self) -> bool:
        """Whether the memory cap was hit at least once, or the kernel killed a member for it."""
        try:
            failures = int((self.directories[0] / "memory.failcnt").read_text())
            control = (self.directories[0] / "memory.oom_control").read_text().split()
        except OSError:
            return False
        kills = dict(zip(control[::2], control[1::2], strict=False)).get("oom_kill", "0")
        return failures > 0 or int(kills) > 0

    def kill(self, timeout_s: float = 5.0) -> None:
        """SIGKILL every member until none is left (members may fork while they are being killed)."""
        end = time.monotonic() + timeout_s
        while (members := self.members()) and time.monotonic() < end:
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)

    def remove(self) -> None:
        """Remove the group's directories; a group is removable once its members are gone and reaped."""
        for directory in self.directories:
            end = time.monotonic() + 5.0
            while directory.exists():
                try:
                    directory.rmdir()
                except OSError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.005)
