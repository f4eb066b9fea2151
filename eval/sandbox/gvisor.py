"""A kernel of the sandbox's own: the OCI bundle from which gVisor's ``runsc`` runs the sandbox's worker.

Under bubblewrap the program's calls reach the host's kernel, and some of the kernel's state is shared by every
process on the host whatever the namespaces: the counter that numbers the inodes of pipes and of /proc entries
draws from one run per CPU that only moves forward, so a program can set it and the next grading read it (``fstat``
of a pipe), and no filter can refuse every call that moves or reads it. gVisor (https://gvisor.dev, Debian's ``runsc``) answers every call of the program in a kernel of the
sandbox's own, a user-space process started for one grading and gone with it: pipes, inodes, /proc, the page cache
of the files the program sees, its dentries and its counters all start afresh each time.

The bundle holds a root of mount points only, read-only (in memory, so that a lookup of a missing name leaves no
negative dentry on a host disk), the interpreter's files from :mod:`eval.sandbox.view` bound read-only at their
paths, the worker's two files, gVisor's own /proc and /dev, and /tmp, a file system in the sandbox's memory where a
cgroup counts that memory, else a read-only folder. ``runsc`` runs rootless (the grader's user mapped to root in a
user namespace of its own), with no network and no cgroup of its own: the grader's cgroup, joined before ``runsc``
starts, holds the sandbox's kernel and everything it runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence

from eval.sandbox.view import InterpreterView

RUNSC_FLAGS = ("--rootless", "--network=none", "--ignore-cgroups")
"""The grader's user as the sandbox's root (no privilege is needed), no network device at all, and the grader's
cgroup rather than one ``runsc`` would make."""
PROGRAM_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID")
"""All the worker starts with inside: enough to drop to the program's user, which clears them."""
MOUNT_POINTS = ("proc", "dev", "tmp", "sandbox")
KERNEL_MB = 256
"""Memory a sandbox's cgroup allows beyond the program's: ``runsc``, its file server and the sandbox's kernel (at
most 32 MB with an idle program, 227 MB with 29 processes of its own, measured)."""
HOST_TASKS = 64
"""Host tasks (threads) a sandbox's cgroup allows for ``runsc``, its file server and the sandbox's kernel: 57 with an
idle program and the view's few mounts, measured."""
HOST_TASKS_PER_PROCESS = 6
"""More a process the program may start: 5.4 each, measured with 10 and 29."""
HOST_TASKS_PER_MOUNT = 5
"""More a bound file or folder: the file server serves each on a thread of its own (427 tasks with 96 files bound
one by one, against 57 with 5 folders, measured)."""


@dataclasses.dataclass(frozen=True)
class Bundle:
    """One sandbox's bundle: ``folder`` holds ``config.json``, ``rootfs`` and ``runsc``'s state for the container."""

    folder: str
    binds: int

    def host_tasks(self, processes: int) -> int:
        """The host tasks the sandbox may need when its program may have ``processes`` processes and threads (the
        cgroup's line behind the sandbox's kernel, which counts the program's own)."""
        return HOST_TASKS + HOST_TASKS_PER_PROCESS * processes + HOST_TASKS_PER_MOUNT * self.binds

    def command(self, runsc: str) -> list[str]:
        """The ``runsc`` command that runs the bundle's worker in the foreground, its stdio the sandbox's channel."""
        state = os.path.join(self.folder, "state")
        container = os.path.basename(self.folder)
        return [runsc, *RUNSC_FLAGS, "--root", state, "run", "--bundle", self.folder, container]

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def make_bundle(
    parent: str,
    view: InterpreterView,
    worker_files: Sequence[tuple[str, str]],
    arguments: Sequence[str],
    tmp_bytes: int | None,
    data: Mapping[str, bytes] | None = None,
) -> Bundle:
    """A bundle in a new folder under ``parent`` (an in-memory file system), running ``arguments`` as the sandbox's
    root in /tmp with ``view``'s files and ``worker_files`` (``(source, destination)``) bound read-only, and each of
    ``data`` (destination -> content) written in the bundle and bound read-only there; /tmp a file system of
    ``tmp_bytes`` in the sandbox's memory, or read-only where None."""
    folder = tempfile.mkdtemp(prefix="gvisor-", dir=parent)  # a name nobody can have made first
    try:
        os.chmod(folder, 0o755)
        files = list(worker_files)
        for index, (destination, content) in enumerate((data or {}).items()):
            source = os.path.join(folder, f"data-{index}")
            with open(source, "xb") as file:
                file.write(content)
            os.chmod(source, 0o644)
            files.append((source, destination))
        mounts = _view_mounts(view) + [_read_only(source, destination) for source, destination in files]
        mounts.append({"destination": "/proc", "type": "proc", "source": "proc"})
        if tmp_bytes is not None:
            options = [f"size={tmp_bytes}", "mode=1777"]
            mounts.append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": options})
        else:  # runsc puts a file system in memory at /tmp where the bundle mounts nothing there
            os.mkdir(os.path.join(folder, "empty"), 0o755)
            mounts.append(_read_only(os.path.join(folder, "empty"), "/tmp"))
        destinations = [mount["destination"] for mount in mounts]
        if len(set(destinations)) < len(destinations):
            twice = sorted({path for path in destinations if destinations.count(path) > 1})
            raise ValueError(f"the bundle would mount twice at {', '.join(twice)}")
        _make_root(os.path.join(folder, "rootfs"), view, mounts)
        with open(os.path.join(folder, "config.json"), "x") as config:
            json.dump(_config(arguments, mounts), config)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return Bundle(folder, sum(mount["type"] == "bind" for mount in mounts))


def _view_mounts(view: InterpreterView) -> list[dict]:
    if view.copy is not None:
        tops = sorted(os.listdir(view.copy))
        return [_read_only(os.path.join(view.copy, top), f"/{top}") for top in tops]
    return [_read_only(source, destination) for source, destination in view.binds]


def _read_only(source: str, destination: str) -> dict:
    return {"destination": destination, "type": "bind", "source": source, "options": ["rbind", "ro"]}


def _make_root(root: str, view: InterpreterView, mounts: list[dict]) -> None:
    """The sandbox's root folder: the view's top-level links and a mount point for every mount (a folder, or an
    empty file where a file is bound), every folder 0755 so that the program's user reaches what it holds."""
    os.mkdir(root, 0o755)
    for target, path in view.links:
        os.symlink(target, root + path)
    for name in MOUNT_POINTS:
        os.mkdir(os.path.join(root, name), 0o755)
    for mount in mounts:
        point = root + mount["destination"]
        if os.path.lexists(point):
            continue
        os.makedirs(os.path.dirname(point), mode=0o755, exist_ok=True)
        if mount["type"] == "bind" and not os.path.isdir(mount["source"]):
            open(point, "x").close()
        else:
            os.mkdir(point, 0o755)


def _config(arguments: Sequence[str], mounts: list[dict]) -> dict:
    capabilities = list(PROGRAM_CAPABILITIES)
    return {
        "ociVersion": "1.0.0",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": list(arguments),
            "env": ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=/tmp", "TMPDIR=/tmp"],
            "cwd": "/tmp",
            "capabilities": {kind: capabilities for kind in ("bounding", "effective", "permitted")},
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": "sandbox",
        "mounts": mounts,
        "linux": {"namespaces": [{"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount")]},
    }
