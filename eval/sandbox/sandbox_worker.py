"""The program side of a code sandbox: load an untrusted program, then answer calls into it.

Runs inside the sandbox (see :mod:`eval.sandbox.host`), standard library only. The grader sends
length-prefixed JSON messages on this process's stdin and reads the replies on its stdout:

0. the worker first says ``{"ready": true}``, once the sandbox around it stands (its filter, limits and user),
   before it reads anything: a sandbox that ends before saying it did not start, whatever the program;
1. ``{"program": source}`` -> ``{"loaded": true}``, or ``{"loaded": false, "error": ...}`` when the
   program does not compile or raises (``SystemExit`` included) while it runs.
2. then any number of ``{"calls": [call, ...]}``, each call ``{"call": name, "args": tree, "kwargs":
   tree}``: every call is made, in the list's order, and the reply ``{"outcomes": [outcome, ...]}``
   holds each one's ``{"value": tree}`` or ``{"raised": "TypeName: message"}``; trees are
   :mod:`plain_data`.

Nothing here decides pass or fail: the grader compares the values it receives, so a program that
forges a reply has only chosen a return value. Before the program runs, the channel moves to
private descriptors and stdin/stdout point at /dev/null, so its prints cannot break the framing.

Run as the sandbox's init, ``python -S -E -s -B sandbox_worker.py LIMITS_JSON DROP_TO_UID INIT_UID [FILTER]``
(DROP_TO_UID: the program's user, INIT_UID: init's own, -1: keep the current user; FILTER, a seccomp filter's file
to load first; see :func:`main`).
:mod:`eval.sandbox.process_sandbox` imports :func:`serve` for the fallback sandbox.
"""

from __future__ import annotations

import json
import linecache
import math
import os
import resource
import sys
import traceback
import types
from typing import Any, NoReturn

import plain_data

MAX_REQUEST_BYTES = 64 * 2**20
"""Largest message the worker reads: the program, or a call's arguments."""
PROGRAM_NAME = "<sandboxed>"
"""File name of the untrusted program in tracebacks."""
PROGRAM_MODULE = "__sandboxed__"
"""Module name the program runs as. Not "__main__": its ``if __name__ == "__main__":`` block must not run."""


def apply_limits(limits: dict[str, Any], processes: int | None) -> None:
    """Resource limits for this process and its children, from SandboxLimits' fields.

    processes: RLIMIT_NPROC, which the kernel counts per user (per user namespace since Linux
    5.14), threads included; None leaves it unset, where a pids cgroup caps the whole tree instead.
    """
    cpu_s = math.ceil(limits["timeout_s"]) + 1
    memory_bytes = limits["memory_mb"] * 2**20
    wanted = [
        (resource.RLIMIT_AS, memory_bytes, memory_bytes),
        # The soft limit sends SIGXCPU, which a program may catch; the hard one a second later kills.
        (resource.RLIMIT_CPU, cpu_s, cpu_s + 1),
        (resource.RLIMIT_FSIZE, limits["max_file_bytes"], limits["max_file_bytes"]),
        (resource.RLIMIT_NOFILE, limits["max_open_files"], limits["max_open_files"]),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if processes is not None:
        wanted.append((resource.RLIMIT_NPROC, processes, processes))
    for kind, soft, hard in wanted:
        ceiling = resource.getrlimit(kind)[1]  # an inherited hard limit may not be raisable
        resource.setrlimit(kind, (_at_most(soft, ceiling), _at_most(hard, ceiling)))


def _at_most(value: int, ceiling: int) -> int:
    return value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (and group ``uid``) with no supplementary groups; from root this also clears every capability."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def private_channel() -> tuple[int, int]:
    """Move the request and reply pipes off descriptors 0 and 1 and point those at /dev/null."""
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    return requests, replies


def serve(requests: int, replies: int) -> NoReturn:
    """Say the sandbox stands, load the program from the first request, answer calls until the grader closes the pipe,
    then exit 0."""
    send = _sender(replies)
    send({"ready": True})
    message = _receive(requests)
    source = message.get("program") if message else None
    if not isinstance(source, str):
        os._exit(2)
    linecache.cache[PROGRAM_NAME] = (len(source), None, source.splitlines(keepends=True), PROGRAM_NAME)
    # Registered, because dataclasses, enum and pickle look the defining module up in sys.modules.
    program = sys.modules[PROGRAM_MODULE] = types.ModuleType(PROGRAM_MODULE)
    try:
        exec(compile(source, PROGRAM_NAME, "exec"), program.__dict__)
    except BaseException as error:  # SystemExit too: the program does not get to end the session
        _print_program_traceback(error)
        send({"loaded": False, "error": _describe(error)})
        os._exit(0)
    send({"loaded": True})
    while (message := _receive(requests)) is not None:
        send({"outcomes": [_answer(program, call) for call in message["calls"]]})
    os._exit(0)


def _answer(program: types.ModuleType, message: dict[str, Any]) -> dict[str, Any]:
    try:
        function = program.__dict__[message["call"]]
        value = function(*plain_data.decode(message["args"]), **plain_data.decode(message["kwargs"]))
        return {"value": plain_data.encode(value)}
    except BaseException as error:  # whatever the call does, the grader gets one reply
        return {"raised": _describe(error)}


def _describe(error: BaseException) -> str:
    try:
        text = f"{type(error).__name__}: {error}"
    except BaseException:  # a hostile __str__
        text = type(error).__name__
    return str(text)[:1000]


def _print_program_traceback(error: BaseException) -> None:
    """The traceback from the program's own first frame, with its lines, to stderr (diagnostics only)."""
    trace = error.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename != PROGRAM_NAME:
        trace = trace.tb_next
    try:
        traceback.print_exception(type(error), error, trace)
    except BaseException:
        pass


def _sender(fd: int):
    write = os.write  # bound now, so a program that replaces os.write cannot change how replies go out

    def send(message: dict[str, Any]) -> None:
        data = plain_data.frame(message)
        while data:
            data = data[write(fd, data) :]

    return send


def _receive(fd: int) -> dict[str, Any] | None:
    """The next message, or None at the end of the stream."""
    header = _read_exactly(fd, plain_data.HEADER.size)
    if header is None:
        return None
    (size,) = plain_data.HEADER.unpack(header)
    if size > MAX_REQUEST_BYTES:
        os._exit(2)
    body = _read_exactly(fd, size)
    return None if body is None else json.loads(body)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, missing = [], size
    while missing:
        chunk = os.read(fd, min(missing, 2**20))
        if not chunk:
            return None
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def load_filter(path: str) -> None:
    """Load the seccomp filter (a classic BPF program, 8 bytes an instruction) in ``path`` for this process and every
    one it starts, with no new privileges from then on; exit 2 if either is refused."""
    import ctypes

    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    with open(path, "rb") as file:
        program = file.read()
    instructions = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(instructions))
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    if (
        prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0
        or prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) != 0
    ):
        os._exit(2)


def not_dumpable() -> None:
    """Make this process and the ones it forks non-dumpable: a process of the same user can then neither
    open its /proc/PID/mem nor attach to it (a change of user has the same effect; this covers the rest)."""
    import ctypes

    pr_set_dumpable = 4
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        os._exit(2)


def main(argv: list[str]) -> NoReturn:
    """The sandbox's init (PID 1 of its namespace): under the seccomp filter where it is to load it (gVisor's
    sandbox; bubblewrap loads it before), made non-dumpable and limited as the program will be, fork the
    server, drop both to the program's user, then reap every process orphaned to init until the server
    ends, and end the same way. Init drops to ``init_uid``: the program's own where the kernel keeps a PID
    namespace's init from its signals (Linux), another where it does not (gVisor's, where a stop signal from the
    program would otherwise stop init), so the program may not signal it at all.

    The server sets RLIMIT_NPROC once forked: Linux counts the processes of the user it drops to (init's
    and its own included), gVisor's kernel those that user's processes start, and gVisor's would count
    init's fork, which root makes, against a limit set before it.

    Init ending makes the kernel kill whatever else is left in the namespace. Ending as the server
    did (its status, or 128 + the signal that killed it) lets bubblewrap, which waits for init,
    pass that on to the grader; an exit status above 128 becomes 128, so that it cannot pass for
    a signal. The server, not init, runs the program: init ignores signals from
    inside its namespace that it does not handle, which would hide a crash.
    """
    limits, drop_to, init_uid = json.loads(argv[1]), int(argv[2]), int(argv[3])
    if len(argv) > 4:
        load_filter(argv[4])
    requests, replies = private_channel()
    not_dumpable()
    apply_limits(limits, None)
    server = os.fork()
    if server == 0:
        if limits["processes"] is not None:
            ceiling = resource.getrlimit(resource.RLIMIT_NPROC)[1]
            processes = _at_most(limits["processes"], ceiling)
            resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
        if drop_to >= 0:
            drop_privileges(drop_to)
        serve(requests, replies)
    os.close(requests)
    os.close(replies)
    if init_uid >= 0:
        drop_privileges(init_uid)
    while True:
        pid, status = os.wait()
        if pid == server:
            os._exit(min(os.WEXITSTATUS(status), 128) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main(sys.argv)
