"""Run untrusted Python source in a sandboxed subprocess and say whether it ran to the end.

A program passes when it runs to its last line without raising. The sandbox proves that by writing
a random per-run nonce, known only to it, after the program returns; an exit status of 0 on its
own (``os._exit(0)`` or ``sys.exit(0)`` before the tests run) is a failure.

Protections, each enforced by the kernel where the OS allows it, with a Python-level guard as a
second layer that a determined program can get around:

- Working directory: a fresh temporary directory (also ``HOME`` and ``TMPDIR``), removed
  afterwards whatever happened. The environment is not inherited, so no secrets leak in.
- Processes: the program runs in a worker process under a supervisor that never runs untrusted
  code. At the deadline, and after every run, the supervisor kills the worker's process group and
  then every process still below it (it is a child subreaper, so orphans come back to it, even
  ones that left the group), and reaps them all. The parent kills the supervisor's process group
  if it overruns the deadline by more than a grace period.
- Resource limits (``setrlimit`` in the worker, before any untrusted code): address space, CPU
  seconds, process count, file size, open files, no core dumps. They are set after the fork, not
  before exec, so that the supervisor can always start the worker even when the user already runs
  more processes than the limit allows. Stdout is discarded; stderr goes to an anonymous file
  capped by the file-size limit, of which the parent reads only the tail.
- Privileges: when the parent runs as root, the worker switches to uid and gid 65534 (``nobody``)
  with no supplementary groups before any untrusted code runs. Root ignores the process-count
  limit and may write anywhere, so the switch is what makes those protections real. It happens
  after the interpreter has started, not before exec, because the interpreter may live where
  ``nobody`` cannot read (for example under root's 0700 home); imports keep working through
  directories opened while still root. ``no_new_privs`` stops any later exec from regaining
  privileges.
- Network: the worker moves into a new network namespace, which has no usable interface. This
  needs root with CAP_SYS_ADMIN, or unprivileged user namespaces; where neither is available the
  worker keeps the host network and only the Python guard stands in the way.
- Python guard: no sockets, no new processes or signals to others, no ctypes, and files may be
  opened for writing, created, removed, renamed or changed only inside the sandbox directory.

Known limits: the nonce lives in the worker's memory, so code written to dig it out of the
interpreter can forge a pass; disk use is bounded per file, not in total; sandboxes running at
once share the ``nobody`` user, so one that gets past the Python guard could signal another;
without root, the process limit counts all of the user's processes and the worker could signal
its supervisor. Linux only: it relies on /proc, prctl and setrlimit.

The parent imports this module; the sandbox runs it as a script (``python -I sandbox.py FD DEADLINE LIMITS``).
"""

from __future__ import annotations

import _io
import _posixsubprocess
import _socket
import builtins
import ctypes
import dataclasses
import functools
import io
import json
import linecache
import math
import os
import posix
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable
from types import TracebackType
from typing import Any, BinaryIO, NoReturn

STATUSES = ("passed", "failed", "timeout", "crashed", "error")
"""passed: ran to the end. failed: raised, exited early, or did not compile. timeout: over the
wall-clock or CPU limit. crashed: killed by another signal. error: the sandbox could not run the
program. A program that itself exits with status 125 or dies of SIGALRM reads as error or timeout:
never as passed."""

UNPRIVILEGED_ID = 65534
"""uid and gid the worker runs as when the parent is root: ``nobody`` and ``nogroup`` on Linux."""
SETUP_FAILED_EXIT = 125
"""Exit status of a worker that could not isolate itself, reported as status "error"."""
SUPERVISOR_GRACE_S = 1.0
"""How long past the deadline the parent waits for the supervisor before killing it."""
PROGRAM_NAME = "<sandboxed>"
"""File name of the untrusted program in tracebacks."""
PROGRAM_MODULE = "__sandboxed__"
"""Module name the untrusted program runs as."""
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


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """What one sandboxed run may use.

    timeout_s: wall-clock seconds for the whole run, interpreter start-up included. CPU time is
        capped at ``ceil(timeout_s) + 1`` seconds per process as a second line.
    memory_mb: address-space limit per process (RLIMIT_AS); allocating beyond it raises MemoryError.
    max_processes: RLIMIT_NPROC, threads included. The kernel counts it per user: sandboxes running
        at once as ``nobody`` share it, and without root it also counts the user's other processes.
    max_file_bytes: largest file the program may write (RLIMIT_FSIZE), its stderr included; a
        write beyond it fails.
    max_open_files: RLIMIT_NOFILE.
    stderr_tail_bytes: how much of the end of stderr the result keeps for diagnostics.
    """

    timeout_s: float = 10.0
    memory_mb: int = 1024
    max_processes: int = 32
    max_file_bytes: int = 16 * 2**20
    max_open_files: int = 64
    stderr_tail_bytes: int = 4096

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.memory_mb < 64:
            raise ValueError(
                f"memory_mb must be at least 64 (the interpreter alone needs about 30), got {self.memory_mb}"
            )
        if self.max_open_files < 16:
            raise ValueError(f"max_open_files must be at least 16 (the sandbox holds a few), got {self.max_open_files}")
        for name in ("max_processes", "max_file_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.stderr_tail_bytes < 0:
            raise ValueError(f"stderr_tail_bytes must be non-negative, got {self.stderr_tail_bytes}")


@dataclasses.dataclass(frozen=True)
class SandboxResult:
    """status: one of STATUSES. returncode: the sandbox's exit status (negative: killed by that
    signal), None when it never started. stderr_tail: the end of its stderr, or why it could not run."""

    status: str
    returncode: int | None
    stderr_tail: str

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def run_sandboxed(source: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run ``source`` as a program in a fresh sandbox. Never raises: a run that cannot happen is status "error"."""
    try:
        return _run(source, limits)
    except Exception as error:  # graders run on arbitrary model output: a failure to run is a result, not a crash
        return SandboxResult("error", None, f"{type(error).__name__}: {error}")


def _run(source: str, limits: SandboxLimits) -> SandboxResult:
    nonce = secrets.token_hex(16).encode()
    # surrogatepass keeps malformed text encodable; the sandbox then rejects it as invalid UTF-8.
    payload = nonce + b"\n" + source.encode("utf-8", "surrogatepass")
    workdir = tempfile.mkdtemp(prefix="sandbox-")
    try:
        if os.geteuid() == 0:
            os.chown(workdir, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
        with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr, tempfile.TemporaryFile() as verdict:
            stdin.write(payload)
            stdin.seek(0)
            finished, returncode = _execute(workdir, stdin, stderr, verdict, limits)
            verdict.seek(0)  # the sandbox moved the file offset it shares with this file object
            reported = verdict.read(len(nonce) + 1) == nonce
            status = _status(finished, returncode, reported)
            return SandboxResult(status, returncode, _tail(stderr, limits.stderr_tail_bytes))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _execute(
    workdir: str, stdin: BinaryIO, stderr: BinaryIO, verdict: BinaryIO, limits: SandboxLimits
) -> tuple[bool, int]:
    """Start the supervisor and wait for it: (whether it exited by the deadline plus grace, its exit status)."""
    deadline = time.monotonic() + limits.timeout_s  # CLOCK_MONOTONIC is system-wide, so the sandbox can share it
    arguments = [str(verdict.fileno()), repr(deadline), json.dumps(dataclasses.asdict(limits))]
    supervisor = subprocess.Popen(
        [sys.executable, "-I", os.path.abspath(__file__), *arguments],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        pass_fds=(verdict.fileno(),),
        cwd=workdir,
        env={"PATH": os.defpath, "HOME": workdir, "TMPDIR": workdir},
        start_new_session=True,
    )
    try:
        finished = _wait_unreaped(supervisor.pid, deadline + SUPERVISOR_GRACE_S)
    finally:
        _kill_group(supervisor.pid)
        returncode = supervisor.wait()
    return finished, returncode


def _wait_unreaped(pid: int, deadline: float) -> bool:
    """Wait until child ``pid`` exits, without reaping it; True if it did before ``deadline`` (time.monotonic).

    An unreaped child keeps its pid, which is also its process group's id, so killing the group
    afterwards cannot hit an unrelated group that reused the number.
    """
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


def _status(finished: bool, returncode: int, reported: bool) -> str:
    if not finished or returncode in (-signal.SIGALRM, -signal.SIGXCPU):
        return "timeout"
    if returncode == SETUP_FAILED_EXIT:
        return "error"
    if returncode < 0:
        return "crashed"
    return "passed" if reported and returncode == 0 else "failed"


def _tail(stream: BinaryIO, size: int) -> str:
    end = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, end - size))
    return stream.read(size).decode("utf-8", "replace")


# Child side: everything below runs in the sandbox. A supervisor process reads the program, forks a
# worker that runs it, and cleans up after the worker; the parent process only watches the supervisor.


def _supervise(verdict_fd: int, deadline: float, limits: SandboxLimits) -> NoReturn:
    """Run the program in a worker process, kill whatever it leaves behind, and end as the worker ended.

    The supervisor never runs untrusted code; under a root parent it stays root, out of the
    worker's reach. It is a child subreaper: descendants the worker orphans are reparented here,
    not to init, which in a container may never reap them, leaving zombies that count against
    the process limit.
    """
    nonce, _, source = sys.stdin.buffer.read().partition(b"\n")
    # Otherwise the program could seek back to the start of stdin and read the nonce.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    libc = ctypes.CDLL(None, use_errno=True)
    _prctl(libc, PR_SET_CHILD_SUBREAPER, 1)
    worker = os.fork()
    if worker == 0:
        _work(libc, nonce, source, verdict_fd, limits)
    finished = _wait_unreaped(worker, deadline)
    # The worker is not reaped yet, so its pid, which is also its group's id, cannot have been reused.
    _kill_group(worker)
    _kill(worker)
    _, status = os.waitpid(worker, 0)
    _reap_orphans()
    _end_as(os.waitstatus_to_exitcode(status) if finished else -signal.SIGALRM)


def _work(libc: ctypes.CDLL, nonce: bytes, source: bytes, verdict_fd: int, limits: SandboxLimits) -> NoReturn:
    """Isolate this process, run the program, and report the nonce if it ran to the end.

    An exception from the program propagates to the interpreter, which prints its traceback and
    exits with status 1.
    """
    os.setpgid(0, 0)
    try:
        _isolate(libc, limits)
    except OSError as error:
        print(f"sandbox: could not isolate the program: {error}", file=sys.stderr)
        os._exit(SETUP_FAILED_EXIT)
    report, exit_now = os.write, os._exit  # bound before the program runs, so it cannot swap them out
    text = source.decode("utf-8", "replace")
    linecache.cache[PROGRAM_NAME] = (len(text), None, text.splitlines(keepends=True), PROGRAM_NAME)
    sys.excepthook = _print_program_traceback
    # Not "__main__": a completion's `if __name__ == "__main__":` block (say, unittest.main()) must not run.
    # Registered, because dataclasses, enum and pickle look the defining module up in sys.modules.
    program = sys.modules[PROGRAM_MODULE] = types.ModuleType(PROGRAM_MODULE)
    exec(compile(source, PROGRAM_NAME, "exec"), program.__dict__)
    report(verdict_fd, nonce)
    exit_now(0)


def _print_program_traceback(kind: type[BaseException], error: BaseException, trace: TracebackType | None) -> None:
    """Print a traceback that starts at the program's own code, with its source lines (from linecache,
    which the interpreter's built-in hook does not read)."""
    while trace is not None and trace.tb_frame.f_code.co_filename != PROGRAM_NAME:
        trace = trace.tb_next
    traceback.print_exception(kind, error, trace)


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
    """Exit with ``code``, or die of signal ``-code``, so the parent sees what happened to the worker."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)  # does not return: the signal killed the worker, so by default it kills
    os._exit(code)


def _isolate(libc: ctypes.CDLL, limits: SandboxLimits) -> None:
    _apply_rlimits(limits)
    if os.geteuid() == 0:
        libc.unshare(CLONE_NEWNET)  # fails without CAP_SYS_ADMIN; the Python guard is then the only network barrier
        _reroute_imports()
        _drop_privileges(libc)
    else:
        _leave_network_unprivileged(libc)
    _prctl(libc, PR_SET_NO_NEW_PRIVS, 1)
    _install_guard(os.path.realpath(os.getcwd()))


def _apply_rlimits(limits: SandboxLimits) -> None:
    cpu_s = math.ceil(limits.timeout_s) + 1
    memory_bytes = limits.memory_mb * 2**20
    for kind, soft, hard in (
        (resource.RLIMIT_AS, memory_bytes, memory_bytes),
        # The soft limit sends SIGXCPU, which a program may catch; the hard one a second later kills.
        (resource.RLIMIT_CPU, cpu_s, cpu_s + 1),
        (resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes),
        (resource.RLIMIT_FSIZE, limits.max_file_bytes, limits.max_file_bytes),
        (resource.RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        ceiling = resource.getrlimit(kind)[1]  # an inherited hard limit may not be raisable
        resource.setrlimit(kind, (_at_most(soft, ceiling), _at_most(hard, ceiling)))


def _at_most(value: int, ceiling: int) -> int:
    return value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)


def _leave_network_unprivileged(libc: ctypes.CDLL) -> None:
    """Enter new user and network namespaces, mapping the user to itself so files stay writable.

    The capabilities the child holds inside its own user namespace are ones any unprivileged process
    on this machine can give itself, so the program gains nothing from them.
    """
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return  # user namespaces disabled here: the Python guard is the only network barrier
    for name, content in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as mapping:
            mapping.write(content)


def _reroute_imports() -> None:
    """Point sys.path, and the search paths of loaded packages, at directories opened while still root.

    A path through ``/proc/self/fd/N`` starts at the open directory, so the standard library and
    site-packages stay importable after the switch to ``nobody`` even when a parent directory is
    closed to it; nothing above those directories becomes reachable.
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


def _drop_privileges(libc: ctypes.CDLL) -> None:
    os.setgroups([])
    os.setresgid(UNPRIVILEGED_ID, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
    os.setresuid(UNPRIVILEGED_ID, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
    # Changing uid left the process non-dumpable, which makes /proc/self/fd root's and the rerouted imports unreachable.
    _prctl(libc, PR_SET_DUMPABLE, 1)


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
    _supervise(
        verdict_fd=int(sys.argv[1]), deadline=float(sys.argv[2]), limits=SandboxLimits(**json.loads(sys.argv[3]))
    )
