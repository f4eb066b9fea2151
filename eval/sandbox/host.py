"""Run untrusted Python in a sandbox and judge it from outside.

The program (say, a HumanEval prompt plus a model's completion) is loaded in a fresh sandbox; the
grader's own test code runs here, in the grader, and the program's functions answer it as plain
data (:mod:`eval.sandbox.plain_data`), compared with the built-in ``==``. Pass or fail is decided
here, so nothing the program does inside its sandbox (exiting early, writing tokens, walking
frames, returning an object that equals everything) can make a test pass that its return values
fail. The program side is :mod:`eval.sandbox.sandbox_worker`.

:func:`judge` keeps the verdict from the program as well. A test that called the program as it
ran would stop at its first failed check, so which calls arrived would tell the program whether
its earlier answers were right, and a program graded many times could learn the answers. Instead
the test first runs against a trusted reference implementation, which fixes the calls it makes;
the program then gets all of them at once, each :data:`CALL_COPIES` times, in an order shuffled
afresh for every grading, and answers them all, the copies of a call alike; only after the
sandbox is gone does the test run again on those answers. The calls never depend on the program's
answers, a call's position says nothing about which test it is, and the program ends before
anything is judged.

Isolation (:func:`detect_isolation`), strongest available:

- ``gvisor`` (the ``runsc`` command, from the distribution's ``runsc`` package; :mod:`eval.sandbox.gvisor`): the
  program's every call answered by a kernel of the sandbox's own, started for one grading and gone with it, so no
  kernel state (inode numbers, the page cache of what it reads, dentries, counters) carries from one grading to the
  next; the view below, read-only, as its files; no network device; the program as uid and gid 65534 with no
  capabilities, the worker's limits counted by that kernel (RLIMIT_CPU excepted: there the deadline stops it).
  With a cgroup, the sandbox's kernel and everything it runs are in it (memory and tasks, with room for the
  kernel's own) and /tmp is a size-capped file system in its memory; without one, one process and a read-only /tmp,
  as below. The host's kernel sees only ``runsc``'s own calls, under gVisor's own seccomp filter.
- ``bubblewrap`` (the ``bwrap`` command, from the distribution's ``bubblewrap`` package): new PID,
  network, IPC and UTS namespaces and a private mount namespace holding no host folder: only the
  interpreter's files, read-only (:mod:`eval.sandbox.view`: the interpreter, its libraries and
  extension modules and its compiled standard library, copied in memory or bound one by one, every
  page in the page cache before each program), the two worker files, a fresh /proc and /dev, and /tmp
  as the working directory; everything else is read-only. The /proc files and folders that report the
  whole host's kernel state (page-cache and slab sizes, the dentry count) are hidden. The sandbox's init
  (:func:`sandbox_worker.main`) is non-dumpable and under the program's limits and user; it reaps
  orphans and ends with the program, and the kernel then kills every process left in the PID
  namespace, daemons that called setsid or double-forked included. No network interface and no
  host socket is reachable, Unix sockets included. A seccomp filter (:mod:`eval.sandbox.seccomp`)
  refuses the kernel keyrings, memory outside RLIMIT_AS, the page cache's state, other processes'
  memory and descriptors, fallocate, new namespaces and mounts, sockets of every family and
  splice/vmsplice/tee (kernel memory no limit counts). Under a root grader the program
  runs as uid and gid 65534 with no capabilities; under a non-root grader as that user inside its
  own user namespace. Where a cgroup can be had (root's, or one delegated to the grader's user), it
  caps memory (the kernel's memory for the program's files included) and processes for the whole
  tree, and /tmp is a size-capped file system in memory. Without one the program is a single
  process with a single thread (:data:`SINGLE_PROCESS`), so its memory cap is the tree's, and /tmp
  is read-only: a file system in memory would hold its inodes in kernel memory outside every limit.
- ``process``, the fallback when neither is installed or cannot run here
  (:mod:`eval.sandbox.process_sandbox`): resource limits, a network namespace where allowed, ``nobody``
  under root, and a Python-level guard that a determined program can get around. Grading a
  training run's code with it needs an explicit opt-in (:func:`require_strong_isolation`).

All apply per-process limits (address space, CPU seconds, file size, open files, no core
dumps), start from an empty environment, and kill the whole tree when the grader is done or the
deadline passes. Linux only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import platform
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from eval.sandbox import cgroup, gvisor, plain_data, seccomp
from eval.sandbox.view import ViewError, interpreter_view, memory_folder

STATUSES = ("passed", "failed", "timeout", "crashed", "error")
"""passed: the grader's test ran to its end. failed: it raised (a failed assertion, a wrong value
the test could not handle, a call into the program that raised or returned something that is not
plain data, a program that did not load or that exited). timeout: over the wall-clock or CPU
limit. crashed: the program was killed by a signal (the cgroup's out-of-memory kill included).
error: the sandbox could not run, or the tests themselves do not compile."""
ISOLATIONS = ("gvisor", "bubblewrap", "process")
STRONG_ISOLATIONS = ("gvisor", "bubblewrap")
"""Where the OS, not a Python guard, keeps the program in, strongest first."""
SANDBOX_VARIABLE = "RL_SANDBOX"
"""The environment variable that picks a strong isolation instead of the strongest (bubblewrap grades faster)."""
SANDBOX_COMMANDS = {"gvisor": ("runsc", "runsc"), "bubblewrap": ("bwrap", "bubblewrap")}
"""Each strong isolation's command and the Debian/Ubuntu package that brings it."""
UNPRIVILEGED_ID = 65534
"""uid and gid the program runs as under a root grader: ``nobody`` and ``nogroup`` on Linux."""
INIT_ID = 65533
"""uid and gid of a gVisor sandbox's init: unprivileged and not the program's, whose signals it is then beyond
(gVisor's kernel, unlike Linux's, lets a process of init's user stop or kill a PID namespace's init)."""
WORKER_DIR = Path(__file__).resolve().parent
WORKER_FILES = ("sandbox_worker.py", "plain_data.py")
"""The program side, bound read-only into the sandbox at /sandbox."""
SECCOMP_FILE = "/sandbox/seccomp.bpf"
"""Where a gVisor sandbox's worker finds the seccomp filter, which it loads before anything else (bubblewrap loads
the filter itself)."""
WORKER_FLAGS = ("-S", "-E", "-s", "-B", "/sandbox/sandbox_worker.py")
"""How the sandbox's init starts: no site, no environment, no user site, no bytecode written, then the worker."""
REAPER_FLAGS = ("-S", "-E", "-s", "-B")
"""The grader's interpreter starting :mod:`eval.sandbox.reaper` without site packages or environment: a few ms."""
TEARDOWN_S = 5.0
"""How long the grader waits for a killed sandbox to be gone."""
MAX_DETAIL_CHARS = 8000
"""Longest detail a result keeps: the program writes much of it."""
CALL_COPIES = 3
"""How many times :func:`judge` asks each call, among the others, and requires the same answer: a
program that does not read its arguments then matches the right answers only by a far smaller chance
(for HumanEval/0's 7 boolean checks, 1 in 293 930 rather than 1 in 35)."""
SINGLE_PROCESS = 2
"""RLIMIT_NPROC of a bubblewrap sandbox without a cgroup: its init and the program's process, so the
program can start neither a process nor a thread, and the per-process memory limit is the whole
tree's (the kernel counts per user namespace for a user; under root, every ``nobody`` process)."""
EXIT_GRACE_S = 1.0
"""How long past the deadline the grader waits for a sandbox that closed its channel to exit; the
fallback's supervisor kills its worker at the deadline and then needs a moment."""


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """What one sandbox may use.

    timeout_s: wall-clock seconds for the whole session: start-up, loading the program and every
        call. CPU time is capped at ``ceil(timeout_s) + 1`` seconds per process as a second line.
    memory_mb: address space per process (RLIMIT_AS: allocating beyond it raises MemoryError) and,
        with a cgroup, memory for the whole tree (beyond it the kernel kills: status "crashed").
    max_processes: processes and threads for the whole tree where a cgroup counts them; the
        fallback counts them per user (RLIMIT_NPROC); bubblewrap without a cgroup allows one.
    max_file_bytes: largest file the program may write (RLIMIT_FSIZE), its stderr included; under
        bubblewrap with a cgroup also the size of its whole /tmp.
    max_open_files: RLIMIT_NOFILE.
    max_reply_bytes: largest reply the grader reads; a bigger one fails the call.
    stderr_tail_bytes: how much of the end of the program's stderr a result keeps for diagnostics.
    """

    timeout_s: float = 10.0
    memory_mb: int = 1024
    max_processes: int = 32
    max_file_bytes: int = 16 * 2**20
    max_open_files: int = 64
    max_reply_bytes: int = 2**20
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
        for name in ("max_processes", "max_file_bytes", "max_reply_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.stderr_tail_bytes < 0:
            raise ValueError(f"stderr_tail_bytes must be non-negative, got {self.stderr_tail_bytes}")


@dataclasses.dataclass(frozen=True)
class Isolation:
    """How sandboxes are isolated on this machine.

    kind: one of ISOLATIONS. description: what holds, in one line, for protocol files.
    cgroups: whether a cgroup caps each sandbox's tree.
    """

    kind: str
    description: str
    cgroups: bool = False

    @property
    def strong(self) -> bool:
        """Whether the OS, not a Python guard, keeps the program in."""
        return self.kind in STRONG_ISOLATIONS


@dataclasses.dataclass(frozen=True)
class SandboxResult:
    """status: one of STATUSES. detail: why it did not pass, and the end of the program's stderr."""

    status: str
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class SandboxError(RuntimeError):
    """The sandbox could not be started."""


class ProgramFailed(Exception):
    """The program did not load, a call raised or returned something that is not plain data, or it exited."""


class ProgramTimedOut(Exception):
    """The session ran past its deadline."""


class ProgramCrashed(Exception):
    """The program was killed by a signal."""


class WeakIsolationError(RuntimeError):
    """Only the fallback sandbox is available and the caller did not accept it."""


@functools.cache
def detect_isolation() -> Isolation:
    """The strongest isolation installed here (chosen once per process): gVisor where ``runsc`` is installed, else
    bubblewrap where ``bwrap`` is, else the fallback, with the reasons. An installed sandbox that cannot start one
    is a SandboxError, never a quiet step down to the next: a machine whose gVisor breaks (say, its processes'
    limit filled) would otherwise grade under another tier than the one its evaluations record elsewhere.
    ``$RL_SANDBOX`` (one of STRONG_ISOLATIONS) asks for one instead: SandboxError where it is unknown or cannot
    start here."""
    wanted = os.environ.get(SANDBOX_VARIABLE, "")
    if wanted:
        if wanted not in STRONG_ISOLATIONS:
            choices = ", ".join(STRONG_ISOLATIONS)
            raise SandboxError(f"{SANDBOX_VARIABLE}={wanted!r} is no sandbox; choose {choices}, or unset it")
        isolation = strong_isolation(wanted)
        if isinstance(isolation, str):
            raise SandboxError(f"{SANDBOX_VARIABLE}={wanted}: {isolation}")
        return isolation
    reasons = []
    for kind in STRONG_ISOLATIONS:
        isolation = strong_isolation(kind)
        if isinstance(isolation, Isolation):
            return isolation
        if shutil.which(SANDBOX_COMMANDS[kind][0]) is not None:
            others = ", ".join(other for other in STRONG_ISOLATIONS if other != kind)
            raise SandboxError(f"{isolation}; set {SANDBOX_VARIABLE} to another sandbox ({others}) to grade with it")
        reasons.append(isolation)
    return _fallback("; ".join(reasons))


@functools.cache
def strong_isolation(kind: str) -> Isolation | str:
    """The isolation ``kind`` (one of STRONG_ISOLATIONS) when it starts a sandbox here, else why not."""
    if kind not in STRONG_ISOLATIONS:
        raise ValueError(f"unknown strong isolation {kind!r}; choose from {', '.join(STRONG_ISOLATIONS)}")
    command, package = SANDBOX_COMMANDS[kind]
    path = shutil.which(command)
    if path is None:
        return f"{kind} is not installed (the `{command}` command; Debian/Ubuntu package `{package}`)"
    if kind == "gvisor" and memory_folder(0) is None:
        return "gvisor needs an in-memory folder for its bundles (/dev/shm or $XDG_RUNTIME_DIR) and none is writable"
    cgroups = cgroup.unavailable_reason() is None  # root's, or a group delegated to this user
    caps = (
        "a cgroup caps memory and processes for the whole tree; private size-capped /tmp"
        if cgroups
        else "no cgroup: one process and one thread, so the memory cap (RLIMIT_AS) holds for the tree; /tmp read-only"
    )
    if kind == "gvisor":
        what = f"{_version(path) or 'runsc'}: a kernel of its own per sandbox (rootless: the grader's user "
        what += f"in a user namespace), no network, read-only interpreter, uid {UNPRIVILEGED_ID} without capabilities"
    else:
        user = (
            f"uid {UNPRIVILEGED_ID} without capabilities"
            if os.geteuid() == 0
            else "the grader's user in a user namespace"
        )
        what = f"{_version(path) or 'bubblewrap'}: PID, network, IPC, UTS and mount namespaces, read-only interpreter, "
        what += f"{_seccomp_state()}, {user}"
    candidate = Isolation(kind, f"{what}; {caps}", cgroups)
    probe = _probe(candidate)
    return candidate if probe is None else f"{kind} cannot start a sandbox here: {probe}"


def _version(command: str) -> str:
    """The first line ``command --version`` prints, or "" when it prints none."""
    printed = subprocess.run([command, "--version"], capture_output=True, text=True).stdout.strip()
    return printed.splitlines()[0] if printed else ""


def _seccomp_state() -> str:
    return "seccomp filter" if seccomp.filter_for_this_machine() else f"no seccomp filter on {platform.machine()}"


def _fallback(reason: str) -> Isolation:
    warnings.warn(f"code sandboxes fall back to process isolation: {reason}", stacklevel=3)
    return Isolation(
        "process",
        f"fallback process sandbox (resource limits, network namespace where allowed, Python guard): {reason}",
    )


def _probe(isolation: Isolation) -> str | None:
    """None when a sandbox under ``isolation`` loads a program and answers a call, else what went wrong."""
    try:
        with Sandbox("def ping():\n    return 'pong'\n", SandboxLimits(timeout_s=30.0), isolation) as sandbox:
            answer = sandbox.call("ping")
    except (SandboxError, ProgramFailed, ProgramTimedOut, ProgramCrashed) as error:
        return f"{type(error).__name__}: {error}"
    return None if answer == "pong" else f"the probe answered {answer!r}"


def require_strong_isolation(allow_fallback: bool) -> Isolation:
    """The isolation for grading a training run's code: refuses the fallback unless ``allow_fallback``."""
    isolation = detect_isolation()
    if not isolation.strong and not allow_fallback:
        raise WeakIsolationError(
            f"refusing to run a training run's generated code without OS isolation: {isolation.description}. "
            "Install gVisor (runsc) or bubblewrap, or pass allow_weak_sandbox=True to accept the fallback sandbox."
        )
    return isolation


Functions = Callable[[str], Callable[..., Any]]
"""What a test gets: ``functions(name)`` is the function ``name`` of the program under test."""
Test = Callable[[Functions], None]
"""A test: it calls the functions it is given and raises when a check fails; deterministic given the
global ``random`` stream (which :func:`judge` seeds)."""


@dataclasses.dataclass(frozen=True)
class Call:
    """One call a test makes: ``name(*args, **kwargs)``, the arguments as plain-data trees."""

    name: str
    args: list[Any]
    kwargs: list[Any]

    @classmethod
    def of(cls, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        return cls(name, plain_data.encode(list(args)), plain_data.encode(kwargs))

    def request(self) -> dict[str, Any]:
        return {"call": self.name, "args": self.args, "kwargs": self.kwargs}


class ReferenceFailed(Exception):
    """The test fails on its own reference implementation: the problem, not the program, is wrong."""


def judge(
    program: str,
    test: Test,
    reference: Mapping[str, Callable[..., Any]],
    limits: SandboxLimits = SandboxLimits(),
    isolation: Isolation | None = None,
) -> SandboxResult:
    """Judge ``program`` by ``test``: passed when the test, given the program's answers, returns.

    ``reference`` maps the names the test asks for to trusted implementations (say, a benchmark's
    canonical solution); the test runs on them first to fix the calls it makes (:func:`planned_calls`).
    The program answers every one of those calls in a fresh sandbox, and the test then runs here on
    the answers (:func:`_replayed`). Never raises: the status says what happened (STATUSES), the
    detail why; a test that fails on its reference is an "error".
    """
    status, detail = _judged(program, test, reference, limits, isolation)
    return SandboxResult(status, _printable(detail, MAX_DETAIL_CHARS))


def _judged(
    program: str,
    test: Test,
    reference: Mapping[str, Callable[..., Any]],
    limits: SandboxLimits,
    isolation: Isolation | None,
) -> tuple[str, str]:
    try:
        plan = planned_calls(test, reference)
        with Sandbox(program, limits, isolation) as sandbox:
            outcomes = sandbox.call_all(plan, copies=CALL_COPIES)
            stderr = sandbox.stderr_tail()
        _replayed(test, plan, outcomes)  # the program has ended: nothing it does can follow the verdict
        return "passed", ""
    except SandboxError as error:  # before the program ran: no verdict on it
        return "error", str(error)
    except ProgramFailed as error:
        return "failed", str(error)
    except ProgramTimedOut as error:
        return "timeout", str(error)
    except ProgramCrashed as error:
        return "crashed", str(error)
    except ReferenceFailed as error:
        return "error", str(error)
    except _TestFailed as error:
        return "failed", f"the test raised {error.__cause__!r:.2000}\n{stderr}"
    except Exception as error:  # graders run on arbitrary model output: a failure to run is a result
        return "error", f"{type(error).__name__}: {error}"


class _TestFailed(Exception):
    """The test raised on the program's answers (its cause): a failed check."""


_SEEDED = threading.Lock()


@contextlib.contextmanager
def _seeded_randomness() -> Iterator[None]:
    """The global ``random`` stream from a fixed seed while a test runs (tests that draw inputs from it
    then make the same calls on the reference and on the answers), restored afterwards; one test at a time."""
    with _SEEDED:
        state = random.getstate()
        random.seed(0)
        try:
            yield
        finally:
            random.setstate(state)


def planned_calls(test: Test, reference: Mapping[str, Callable[..., Any]]) -> list[Call]:
    """Every call ``test`` makes, in its order, when ``reference`` answers; ReferenceFailed if it fails there."""
    plan: list[Call] = []

    def functions(name: str) -> Callable[..., Any]:
        try:
            implementation = reference[name]
        except KeyError:
            raise ReferenceFailed(f"the test asks for {name!r}, which the reference does not define") from None

        def call(*args: Any, **kwargs: Any) -> Any:
            plan.append(Call.of(name, args, kwargs))  # before the call, which may change its arguments
            return implementation(*args, **kwargs)

        return call

    with _seeded_randomness():
        try:
            test(functions)
        except ReferenceFailed:
            raise
        except Exception as error:
            raise ReferenceFailed(f"the test fails on its reference: {type(error).__name__}: {error}") from error
    return plan


def _replayed(test: Test, plan: list[Call], outcomes: list[dict[str, Any]]) -> None:
    """Run ``test`` with each call answered by the program's outcome for it (``plan[i]`` -> ``outcomes[i]``).

    Raises ProgramFailed where the program's answer was an exception or not plain data, and where
    the test asks for a call the reference run did not make (the program's answers sent it down
    another path, which the program never saw); _TestFailed when a check fails.
    """
    answered = iter(zip(plan, outcomes, strict=True))

    def functions(name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            asked = Call.of(name, args, kwargs)
            planned, outcome = next(answered, (None, None))
            if asked != planned:
                raise ProgramFailed(f"the test made a call the reference run did not make: {name}")
            return _returned(name, outcome)

        call.__name__ = call.__qualname__ = name
        return call

    with _seeded_randomness():
        try:
            test(functions)
        except ProgramFailed:
            raise
        except Exception as error:  # a failed assertion, or a wrong value the test could not handle
            raise _TestFailed from error


def _printable(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, every control character but newline and tab (terminal escapes)
    and every character UTF-8 cannot encode (lone surrogates) replaced by U+FFFD."""
    return "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in text[:limit])


class Sandbox:
    """``program`` loaded in a fresh sandbox, answering calls until closed. Use as a context manager.

    Raises ProgramFailed when the program does not load, SandboxError when no sandbox starts.
    """

    def __init__(
        self, program: str, limits: SandboxLimits = SandboxLimits(), isolation: Isolation | None = None
    ) -> None:
        if not isinstance(program, str):
            raise TypeError(f"the program must be text, got {type(program).__name__}")
        self.limits = limits
        self.isolation = isolation or detect_isolation()
        self.deadline = time.monotonic() + limits.timeout_s  # CLOCK_MONOTONIC is system-wide: the fallback shares it
        self._stderr: BinaryIO = tempfile.TemporaryFile()
        self._workdir: str | None = None
        self._cgroup: cgroup.Cgroup | None = None
        self._bundle: gvisor.Bundle | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._init: int | None = None
        self._drain: threading.Thread | None = None
        try:
            self._process = self._start()
            self._await_ready()
            reply = self._exchange({"program": program}, "loading the program")
        except BaseException:
            self.close()
            raise
        if not reply.get("loaded"):
            error = reply.get("error", f"unexpected reply {str(reply)[:80]}")
            tail = self.stderr_tail()
            self.close()
            raise ProgramFailed(f"the program did not load: {error}\n{tail}")

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name(*args, **kwargs)`` in the program; the value it returned, decoded as plain data here.

        Raises ProgramFailed when the call raised, returned something that is not plain data, or
        ended the program; ProgramTimedOut past the deadline; ProgramCrashed when a signal killed it.
        """
        return _returned(name, self.call_all([Call.of(name, args, kwargs)])[0])

    def call_all(self, calls: Sequence[Call], copies: int = 1) -> list[dict[str, Any]]:
        """Every call made ``copies`` times in the program, in an order shuffled from the system's random
        source; each call's outcome, ``{"value": tree}`` or ``{"raised": text}``, in the order of ``calls``.

        The program sees all the arguments at once and no answer is looked at before it has given
        them all. Raises as :meth:`call`, and ProgramFailed when the reply does not hold one outcome per
        request or the copies of a call were answered differently.
        """
        order = [index for index in range(len(calls)) for _ in range(copies)]
        random.SystemRandom().shuffle(order)
        doing = f"calling {calls[0].name}" if len(order) == 1 else f"making {len(order)} calls"
        reply = self._exchange({"calls": [calls[i].request() for i in order]}, doing)
        shuffled = reply.get("outcomes")
        if (
            not isinstance(shuffled, list)
            or len(shuffled) != len(order)
            or not all(isinstance(o, dict) for o in shuffled)
        ):
            raise ProgramFailed(f"the reply to {len(order)} calls is not one outcome per call")
        outcomes: list[dict[str, Any] | None] = [None] * len(calls)
        for index, outcome in zip(order, shuffled, strict=True):
            if outcomes[index] is None:
                outcomes[index] = outcome
            elif outcomes[index] != outcome:
                raise ProgramFailed(f"the program answered the same call of {calls[index].name} differently")
        return outcomes

    def function(self, name: str) -> Callable[..., Any]:
        """A local stand-in for the program's function ``name``."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, *args, **kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    def stderr_tail(self) -> str:
        """The end of the program's stderr (diagnostics only: the program writes it); "" once the sandbox is closed."""
        try:
            end = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, end - self.limits.stderr_tail_bytes))
            return self._stderr.read(self.limits.stderr_tail_bytes).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        """Kill the sandbox's whole process tree, wait until it is gone, and remove what it used.

        Under bubblewrap, killing the sandbox's init (its PID namespace's process 1) makes the kernel
        kill everything in the namespace, and bubblewrap, its parent, then reaps it and exits: killing
        bubblewrap first would orphan the init to a system init that may never reap it. Under gVisor, ending
        ``runsc`` ends the sandbox's kernel and file server, which the kernel signals when their parent dies. The
        fallback's supervisor cleans up after its worker once the closed pipes end it, and is killed if it overruns.
        """
        process, self._process = self._process, None
        if process is not None:
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
            if self._init is not None:
                _kill_pidfd(self._init)
                patience = TEARDOWN_S
            elif self._bundle is not None:  # the worker ends at once on its closed channel unless the deadline passed
                patience = max(0.0, self.deadline - time.monotonic())
            else:
                patience = max(0.0, self.deadline - time.monotonic()) + EXIT_GRACE_S
            try:
                process.wait(timeout=patience)
            except subprocess.TimeoutExpired:
                _kill_group(process.pid)
            if self._cgroup is not None:
                self._cgroup.kill(TEARDOWN_S)
            process.wait()
        if self._drain is not None:  # its pipe ends with the sandbox's processes
            self._drain.join(TEARDOWN_S)
            self._drain = None
        if self._init is not None:
            os.close(self._init)
            self._init = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self._bundle is not None:
            self._bundle.remove()
            self._bundle = None
        self._stderr.close()

    # Starting.

    def _start(self) -> subprocess.Popen[bytes]:
        kind = self.isolation.kind
        if kind in STRONG_ISOLATIONS:
            try:
                interpreter_view().ensure_intact()
                command, cwd = (self._gvisor_command() if kind == "gvisor" else self._bubblewrap_command()), "/"
                interpreter_view().make_resident()
            except (ViewError, OSError) as error:
                raise SandboxError(f"could not gather the sandbox's files: {error}") from error
        else:
            command, cwd = self._process_command(), self._make_workdir()
        if self.isolation.cgroups:
            memory_mb, tasks = self.limits.memory_mb, self.limits.max_processes
            if self._bundle is not None:
                memory_mb, tasks = memory_mb + gvisor.KERNEL_MB, self._bundle.host_tasks(tasks)
            self._cgroup = cgroup.Cgroup.create(memory_mb * 2**20, tasks)
        passed: list[int] = []
        info_read = None
        if self.isolation.kind == "bubblewrap":
            info_read, info_write = os.pipe()
            passed.append(info_write)
            command = [command[0], "--info-fd", str(info_write), *command[1:]]
            rules = seccomp.filter_for_this_machine()
            if rules is not None:
                passed.append(os.memfd_create("sandbox-seccomp"))
                os.write(passed[-1], rules)
                os.lseek(passed[-1], 0, os.SEEK_SET)
                command = [command[0], "--seccomp", str(passed[-1]), *command[1:]]
        if self._cgroup is not None:
            command = _joining(self._cgroup.procs_files, command)
        if self.isolation.strong:  # outside the cgroup, the parent that reaps what the sandbox's command leaves
            command = [sys.executable, *REAPER_FLAGS, str(WORKER_DIR / "reaper.py"), *command]
        # Its own open file description: flags the program sets on its stderr (O_DIRECT, say) stay off the grader's.
        stderr = os.open(f"/proc/self/fd/{self._stderr.fileno()}", os.O_WRONLY | os.O_APPEND)
        if self._bundle is not None:  # gVisor's kernel writes to a host file past RLIMIT_FSIZE: a pipe, copied capped
            drained, written = os.pipe()
            copy = (drained, stderr, self.limits.max_file_bytes)
            self._drain = threading.Thread(target=_capped_copy, args=copy, daemon=True)
            self._drain.start()
            stderr = written
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=cwd,
                env={"PATH": os.defpath, "LANG": "C.UTF-8"},
                start_new_session=True,
                pass_fds=passed,
            )
        except OSError as error:
            raise SandboxError(f"could not start the sandbox: {error}") from error
        finally:
            for fd in (stderr, *passed):
                os.close(fd)
        if info_read is not None:
            self._process = process  # so that a failure here still tears it down
            self._init = self._sandbox_init(info_read)
        return process

    def _sandbox_init(self, info: int) -> int:
        """A pidfd of the sandbox's init, from the JSON bubblewrap writes on ``info`` once it is set up."""
        try:
            data = b""
            while chunk := self._read_by_deadline(info, "starting the sandbox"):
                data += chunk
        finally:
            os.close(info)
        try:
            return os.pidfd_open(json.loads(data)["child-pid"])
        except (ValueError, KeyError, TypeError, OSError) as error:
            raise SandboxError(f"bubblewrap did not start the sandbox ({error}): {self.stderr_tail()}") from None

    def _worker_limits(self, processes: int | None) -> str:
        """The limits for the sandbox's side, ``processes`` its RLIMIT_NPROC (None: unset)."""
        return json.dumps({**dataclasses.asdict(self.limits), "processes": processes})

    def _gvisor_command(self) -> list[str]:
        """``runsc`` running a new bundle whose init is the worker, as root of the sandbox's own kernel, which then
        drops to the program's user; RLIMIT_NPROC counted there."""
        parent = memory_folder(0)
        if parent is None:
            raise SandboxError("no in-memory folder (/dev/shm or $XDG_RUNTIME_DIR) for the sandbox's bundle")
        view = interpreter_view()
        tree = self.limits.max_processes if self.isolation.cgroups else SINGLE_PROCESS
        # The sandbox's kernel counts the tasks the program starts, not its init and its own process.
        processes = max(0, tree - SINGLE_PROCESS)
        worker = [view.interpreter, *WORKER_FLAGS, self._worker_limits(processes), str(UNPRIVILEGED_ID), str(INIT_ID)]
        files = [(str(WORKER_DIR / name), f"/sandbox/{name}") for name in WORKER_FILES]
        tmp_bytes = self.limits.max_file_bytes if self.isolation.cgroups else None
        rules = seccomp.filter_for_this_machine()
        data = {} if rules is None else {SECCOMP_FILE: rules}
        worker += [] if rules is None else [SECCOMP_FILE]
        self._bundle = gvisor.make_bundle(parent, view, files, worker, tmp_bytes, data)
        return self._bundle.command(shutil.which("runsc") or "runsc")

    def _bubblewrap_command(self) -> list[str]:
        root = os.geteuid() == 0
        view = interpreter_view()
        command = [
            shutil.which("bwrap") or "bwrap",
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
        ]  # fmt: skip
        if root:  # no user namespace (it would map the program to root outside); the worker drops to nobody itself
            command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            command += ["--unshare-user", "--disable-userns"]
        command += view.bubblewrap_arguments()
        command += ["--perms", "0755", "--dir", "/sandbox"]
        for name in WORKER_FILES:
            command += ["--ro-bind", str(WORKER_DIR / name), f"/sandbox/{name}"]
        command += ["--proc", "/proc", "--dev", "/dev"]
        command += _host_wide_proc_hidden()
        if self.isolation.cgroups:  # which charges the kernel memory of the files' inodes to the sandbox
            command += ["--perms", "1777", "--size", str(self.limits.max_file_bytes), "--tmpfs", "/tmp"]
        else:
            command += ["--perms", "0755", "--dir", "/tmp"]
        # Everything but a capped /tmp read-only: as a user, bubblewrap's root and /dev would be the program's to fill.
        command += ["--remount-ro", "/dev", "--remount-ro", "/"]
        command += ["--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"]
        processes = None if self.isolation.cgroups else SINGLE_PROCESS
        return [
            *command,
            view.interpreter,
            *WORKER_FLAGS,
            self._worker_limits(processes),
            str(UNPRIVILEGED_ID if root else -1),
            str(UNPRIVILEGED_ID if root else -1),  # Linux keeps the namespace's init from its processes' signals
        ]

    def _make_workdir(self) -> str:
        self._workdir = tempfile.mkdtemp(prefix="sandbox-")
        if os.geteuid() == 0:
            os.chown(self._workdir, UNPRIVILEGED_ID, UNPRIVILEGED_ID)
        return self._workdir

    def _process_command(self) -> list[str]:
        script = str(WORKER_DIR / "process_sandbox.py")
        return [
            sys.executable,
            "-S",
            "-E",
            "-s",
            "-B",
            script,
            repr(self.deadline),
            self._worker_limits(self.limits.max_processes),
        ]

    # Talking.

    def _await_ready(self) -> None:
        """Wait for the worker to say that the sandbox stands; SandboxError where it ends, or the deadline passes,
        first: no program has been sent, so whatever went wrong is the sandbox's, not the program's."""
        try:
            reply = self._reply("starting the sandbox")
        except (ProgramFailed, ProgramTimedOut, ProgramCrashed) as error:
            raise SandboxError(f"the {self.isolation.kind} sandbox did not start: {error}") from None
        if reply != {"ready": True}:
            raise SandboxError(f"the {self.isolation.kind} sandbox did not start: it said {str(reply)[:80]}")

    def _exchange(self, request: dict[str, Any], doing: str) -> dict[str, Any]:
        """Send ``request``, wait for the reply until the deadline, and return it."""
        if self._process is None:
            raise ProgramFailed(f"the sandbox is closed ({doing})")
        self._send(plain_data.frame(request), doing)
        return self._reply(doing)

    def _reply(self, doing: str) -> dict[str, Any]:
        """The next message from the sandbox, waited for until the deadline."""
        try:
            header = self._receive(plain_data.HEADER.size, doing)
            (size,) = plain_data.HEADER.unpack(header)
            if size > self.limits.max_reply_bytes:
                raise ProgramFailed(f"reply of {size} bytes while {doing}, over max_reply_bytes")
            reply = json.loads(self._receive(size, doing))
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            raise ProgramFailed(f"unreadable reply while {doing}: {type(error).__name__}") from None
        if not isinstance(reply, dict):
            raise ProgramFailed(f"unreadable reply while {doing}")
        return reply

    def _send(self, data: bytes, doing: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        fd = self._process.stdin.fileno()
        os.set_blocking(fd, False)
        view = memoryview(data)
        while view:
            self._wait(fd, select.POLLOUT, doing)
            try:
                written = os.write(fd, view)
            except BrokenPipeError:
                raise self._ended(doing) from None
            except BlockingIOError:  # the program filled the pipe through a second write end of its own
                continue
            view = view[written:]

    def _receive(self, size: int, doing: str) -> bytes:
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        chunks, missing = [], size
        while missing:
            chunk = self._read_by_deadline(fd, doing, missing)
            if not chunk:
                raise self._ended(doing)
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def _read_by_deadline(self, fd: int, doing: str, most: int = 2**20) -> bytes:
        """Up to ``most`` bytes from ``fd`` once it has some (b"" at its end); ProgramTimedOut at the deadline.

        The read does not block: the program can open the pipe's read end a second time (through
        /proc) and take the bytes that made it readable before this read.
        """
        os.set_blocking(fd, False)
        while True:
            self._wait(fd, select.POLLIN, doing)
            try:
                return os.read(fd, min(most, 2**20))
            except BlockingIOError:
                continue

    def _wait(self, fd: int, event: int, doing: str) -> None:
        poller = select.poll()
        poller.register(fd, event)
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise ProgramTimedOut(f"over {self.limits.timeout_s:g} s while {doing}\n{self.stderr_tail()}")
            if poller.poll(remaining * 1000):
                return

    def _ended(self, doing: str) -> Exception:
        """What it means that the program's side closed while ``doing``: why it ended, as an exception."""
        assert self._process is not None
        try:
            code = self._process.wait(timeout=max(0.0, self.deadline - time.monotonic()) + EXIT_GRACE_S)
        except subprocess.TimeoutExpired:  # it closed its channel but went on running
            return ProgramTimedOut(f"over {self.limits.timeout_s:g} s while {doing}\n{self.stderr_tail()}")
        # The fallback reports a signal as a negative status, the bubblewrap sandbox's init as 128 + N.
        signal_number = -code if code < 0 else code - 128 if 128 < code <= 128 + signal.SIGRTMAX else 0
        tail = self.stderr_tail()
        if signal_number in (signal.SIGXCPU, signal.SIGALRM):
            return ProgramTimedOut(f"out of CPU time while {doing}\n{tail}")
        memory_hit = self._cgroup is not None and self._cgroup.out_of_memory()
        memory = " (the memory cap was hit)" if memory_hit else ""
        if signal_number:
            return ProgramCrashed(f"killed by {_signal_name(signal_number)}{memory} while {doing}\n{tail}")
        if memory_hit and self.isolation.kind == "gvisor":  # the host's kill may end the sandbox's kernel itself
            return ProgramCrashed(f"ended with status {code}{memory} while {doing}\n{tail}")
        return ProgramFailed(f"the program exited with status {code} while {doing}\n{tail}")


def _capped_copy(source: int, capture: int, most: int) -> None:
    """Copy the pipe ``source`` to the descriptor ``capture`` until the pipe's end, keeping its first ``most`` bytes
    (the rest read and dropped, so the program's writes neither block nor grow the file); closes both."""
    kept = 0
    try:
        while chunk := os.read(source, 2**16):
            if kept < most:
                kept += os.write(capture, chunk[: most - kept])
    finally:
        os.close(source)
        os.close(capture)


def _returned(name: str, outcome: dict[str, Any]) -> Any:
    """The value a call of ``name`` returned, decoded from its outcome; ProgramFailed when it raised
    or returned something that is not plain data."""
    if "raised" in outcome:
        raised = outcome["raised"]
        raise ProgramFailed(f"{name} raised {raised[:1000] if isinstance(raised, str) else '(unreadable)'}")
    try:
        return plain_data.decode(outcome.get("value"))
    except plain_data.NotPlainData as error:
        raise ProgramFailed(f"{name} returned a value that is not plain data: {error}") from None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:  # a real-time signal
        return f"signal {number}"


def _kill_pidfd(pidfd: int) -> None:
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _joining(procs_files: tuple[str, ...], command: list[str]) -> list[str]:
    """``command`` run by a shell that first moves itself into the cgroups, so that nothing it starts escapes them."""
    moves = " && ".join(f'echo $$ > "${index}"' for index in range(1, len(procs_files) + 1))
    return ["/bin/sh", "-c", f'{moves} && shift {len(procs_files)} && exec "$@"', "sh", *procs_files, *command]


HOST_WIDE_PROC_FILES = (
    "meminfo", "vmstat", "zoneinfo", "buddyinfo", "pagetypeinfo", "slabinfo", "stat", "loadavg", "diskstats",
    "schedstat", "interrupts", "softirqs", "swaps",
)  # fmt: skip
"""Files of a fresh /proc that still report the whole host's kernel state (page cache and slab sizes, counters),
which one grading could set and the next read: in the sandbox each is a device node on a mount that allows none,
so it cannot be opened."""
HOST_WIDE_PROC_DIRECTORIES = ("sys", "pressure")
"""Folders of /proc with host-wide state (``sys/fs/dentry-state`` counts every negative dentry): empty in the
sandbox."""


def _host_wide_proc_hidden() -> list[str]:
    """bubblewrap arguments that hide :data:`HOST_WIDE_PROC_FILES` and :data:`HOST_WIDE_PROC_DIRECTORIES` (those
    this kernel has) under the sandbox's /proc: /dev/null over each file (unopenable there), an empty read-only
    folder over each folder."""
    arguments = []
    for name in HOST_WIDE_PROC_FILES:
        if Path("/proc", name).exists():
            arguments += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    for name in HOST_WIDE_PROC_DIRECTORIES:
        if Path("/proc", name).is_dir():
            arguments += ["--perms", "0555", "--tmpfs", f"/proc/{name}", "--remount-ro", f"/proc/{name}"]
    return arguments
