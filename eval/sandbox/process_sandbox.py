"""The fallback code sandbox, for machines without bubblewrap: a supervised worker process with
resource limits and a Python-level guard.

It keeps the program off the network and out of other files only as far as the kernel allows an
ordinary process to restrict itself, with a Python guard as a second layer that a determined program
can get around. :mod:`eval.sandbox.host` says so in every result's ``isolation`` and refuses to grade a
training run's code with it unless the user opts in. What it does:

- Processes: the worker runs under a supervisor that never runs untrusted code. At the deadline,
  and after every run, the supervisor kills the worker's process group and then every process still
  below it (it is a child subreaper, so orphans come back to it, even ones that left the group), and
  reaps them all. The grader kills the supervisor's group if it overruns.
- Resource limits: :func:`sandbox_worker.apply_limits`, process count included.
- Privileges: under a root grader the worker switches to ``nobody`` before any untrusted code runs,
  after the interpreter has started (imports keep working through directories opened while still
  root); ``no_new_privs`` stops any later exec from regaining privileges.
- Network: a new network namespace where the OS allows it (root with CAP_SYS_ADMIN, or
  unprivileged user namespaces).
- Python guard: no sockets, no new processes or signals to others, no ctypes, and files may be
  opened for writing, created, removed, renamed or changed only inside the sandbox directory.

Known limits: memory is capped per process, not for the tree; the program can read any file its
user may read, and the keys of any kernel keyring the grader holds; sandboxes running at once share
the ``nobody`` user. Linux only.

Run as ``python -S -E -s -B process_sandbox.py DEADLINE LIMITS_JSON`` in the sandbox directory,
with the grader's pipes on stdin and stdout.
"""

from __future__ import annotations

import _io
import _posixsubprocess
import _socket
import builtins
import ctypes
import functools
import io
import json
import os
import posix
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from sandbox_worker import apply_limits, drop_privileges, private_channel, serve

UNPRIVILEGED_ID = 65534
"""uid and gid the worker runs as when the grader is root: ``nobody`` and ``nogroup`` on Linux."""
SETUP_FAILED_EXIT = 125
"""Exit status of a worker that could not isolate itself."""
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PROCESS_CALLS = (
    "fork", "forkpty", "execv", "execve", "posix_spawn", "posix_spawnp", "system", "kill", "killpg", "setsid",
    "setpgid", "setpgrp",
)  # fmt: skip
"""The primitives behind every way ``os`` starts, replaces or signals processes (``spawn*``,
``exec*`` and ``popen`` look them up at call time); refused in both ``os`` and ``posix``."""
PATH_CALLS = (
    "remove", "unlink", "rmdir", "rename", "replace", "truncate", "chmod", "chown", "lchown", "link", "symlink",
    "mkdir", "mkfifo", "mknod", "utime",
)  # fmt: skip
"""``os`` calls that change the file system, confined to the sandbox directory. ``removedirs``,
``renames``, ``makedirs``, ``shutil.rmtree`` and ``pathlib`` go through them."""


def supervise(deadline: float, limits: dict[str, Any]) -> NoReturn:
    """Run the worker, kill whatever it leaves behind, and end as the worker ended (SIGALRM: out of time).

    The supervisor is a child subreaper: descendants the worker orphans are reparented here, not
    to init, which in a container may never reap them.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    _prctl(libc, PR_SET_CHILD_SUBREAPER, 1)
    worker = os.fork()
    if worker == 0:
        _work(libc, limits)
    # Only the worker may hold the grader's pipes, so the grader sees their end when the worker's tree is gone.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    finished = _wait_unreaped(worker, deadline)
    # The worker is not reaped yet, so its pid, which is also its group's id, cannot have been reused.
    _kill_group(worker)
    _kill(worker)
    _, status = os.waitpid(worker, 0)
    _reap_orphans()
    _end_as(os.waitstatus_to_exitcode(status) if finished else -signal.SIGALRM)


def _work(libc: ctypes.CDLL, limits: dict[str, Any]) -> NoReturn:
    os.setpgid(0, 0)
    requests, replies = private_channel()
    try:
        apply_limits(limits, limits["processes"])
        _isolate(libc)
    except OSError as error:
        print(f"sandbox: could not isolate the program: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED_EXIT)
    serve(requests, replies)


def _wait_unreaped(pid: int, deadline: float) -> bool:
    """Wait until child ``pid`` exits, without reaping it; True if it did before ``deadline`` (time.monotonic)."""
    pause = 0.001
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(pause, remaining))
        pause = min(2 * pause, 0.01)
    return True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _reap_orphans() -> None:
    """Kill and reap every process left below this one, including any that left the worker's group.

    Each round kills this process's children; their own children are then reparented here, so the
    rounds end when nothing is left (the process limit bounds how many there can be).
    """
    while children := _children():
        for pid in children:
            _kill(pid)
        for pid in children:
            os.waitpid(pid, 0)


def _children() -> list[int]:
    """Pids whose parent is this process, from /proc (``/proc/PID/stat``: ``pid (comm) state ppid ...``)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # exited while we looked
        if int(fields[1]) == me:
            found.append(int(entry))
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _end_as(code: int) -> NoReturn:
    """Exit with ``code``, or die of signal ``-code``, so the grader sees what happened to the worker."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def _isolate(libc: ctypes.CDLL) -> None:
    if os.geteuid() == 0:
        libc.unshare(CLONE_NEWNET)  # fails without CAP_SYS_ADMIN; the Python guard is then the only network barrier
        _reroute_imports()
        drop_privileges(UNPRIVILEGED_ID)
        # Changing uid left the process non-dumpable, which makes /proc/self/fd root's and the rerouted imports unreachable.
        _prctl(libc, PR_SET_DUMPABLE, 1)
    else:
        _leave_network_unprivileged(libc)
    _prctl(libc, PR_SET_NO_NEW_PRIVS, 1)
    _install_guard(os.path.realpath(os.getcwd()))


def _leave_network_unprivileged(libc: ctypes.CDLL) -> None:
    """Enter new user and network namespaces, mapping the user to itself so files stay writable."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return  # user namespaces disabled here: the Python guard is the only network barrier
    for name, content in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as mapping:
            mapping.write(content)


def _reroute_imports() -> None:
    """Point sys.path, and the search paths of loaded packages, at directories opened while still root.

    A path through ``/proc/self/fd/N`` starts at the open directory, so the standard library stays
    importable after the switch to ``nobody`` even when a parent directory is closed to it.
    """
    for index, entry in enumerate(sys.path):
        if not os.path.isdir(entry):
            continue
        rerouted = f"/proc/self/fd/{os.open(entry, os.O_RDONLY | os.O_DIRECTORY)}"
        sys.path[index] = rerouted
        for module in list(sys.modules.values()):
            search = getattr(module, "__path__", None)
            if isinstance(search, list):
                search[:] = [
                    rerouted + path[len(entry) :] if path == entry or path.startswith(entry + os.sep) else path
                    for path in search
                ]
    sys.path_importer_cache.clear()


def _prctl(libc: ctypes.CDLL, option: int, value: int) -> None:
    if libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl({option}): {os.strerror(errno)}")


def _install_guard(root: str) -> None:
    """Refuse, from Python, what the program has no business doing; ``root`` is the sandbox directory."""
    for module in (os, posix):
        for name in PROCESS_CALLS:
            if hasattr(module, name):
                setattr(module, name, _refusal(f"os.{name}"))
        for name in PATH_CALLS:
            if hasattr(module, name):
                setattr(module, name, _confined(getattr(module, name), root))
        module.open = _confined_os_open(module.open, root)
    subprocess.Popen = _refusal("subprocess.Popen")
    _posixsubprocess.fork_exec = _refusal("subprocess")
    socket.socket = _socket.socket = _refused_socket_type()
    socket.socketpair = _socket.socketpair = _refusal("socket.socketpair")
    builtins.open = io.open = _io.open = _confined_open(io.open, root)
    for name in ("ctypes", "_ctypes"):
        sys.modules[name] = None  # type: ignore[assignment]  # None in sys.modules makes `import` raise ImportError


def _refusal(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(f"sandbox: {what} is not allowed")

    return refuse


def _refused_socket_type() -> type:
    """A socket type that cannot be created; a subclass, so modules that subclass socket (ssl, asyncio) still import."""

    class RefusedSocket(socket.socket):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise PermissionError("sandbox: sockets are not allowed")

    return RefusedSocket


def _within(root: str, path: Any, dir_fd: int | None = None) -> bool:
    """Whether ``path`` (relative to ``dir_fd`` when given) resolves to ``root`` or below it."""
    location = os.fsdecode(path)
    if dir_fd is not None and not os.path.isabs(location):
        location = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), location)
    resolved = os.path.realpath(location)
    return resolved == root or resolved.startswith(root + os.sep)


def _confined(call: Callable[..., Any], root: str) -> Callable[..., Any]:
    """``call`` refusing any path argument outside ``root``. File descriptors pass: they are already open."""

    @functools.wraps(call)
    def confined(*args: Any, **kwargs: Any) -> Any:
        dir_fd = kwargs.get("dir_fd")
        paths = [value for value in (*args, *kwargs.values()) if isinstance(value, (str, bytes, os.PathLike))]
        if (
            kwargs.get("src_dir_fd") is not None
            or kwargs.get("dst_dir_fd") is not None
            or not all(_within(root, path, dir_fd) for path in paths)
        ):
            raise PermissionError(f"sandbox: {call.__name__} outside the sandbox directory is not allowed")
        return call(*args, **kwargs)

    return confined


def _confined_os_open(call: Callable[..., int], root: str) -> Callable[..., int]:
    @functools.wraps(call)
    def confined(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if flags & WRITE_FLAGS and not _within(root, path, dir_fd):
            raise PermissionError("sandbox: opening for writing outside the sandbox directory is not allowed")
        return call(path, flags, mode, dir_fd=dir_fd)

    return confined


def _confined_open(call: Callable[..., Any], root: str) -> Callable[..., Any]:
    @functools.wraps(call)
    def confined(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if not isinstance(file, int) and set(str(mode)) & set("wax+") and not _within(root, file):
            raise PermissionError("sandbox: opening for writing outside the sandbox directory is not allowed")
        return call(file, mode, *args, **kwargs)

    return confined


if __name__ == "__main__":
    supervise(deadline=float(sys.argv[1]), limits=json.loads(sys.argv[2]))
