"""The sandbox contains hostile programs, and keeps grading normally after each one.

Programs that use a fresh instance of the ``posix`` module get past the Python-level guard, so
they show what the OS-level layer holds on its own.
"""

import os
import resource
import signal
import socket
import time

import pytest

from eval.sandbox import UNPRIVILEGED_ID, SandboxLimits, run_sandboxed

FAST = SandboxLimits(timeout_s=2.0)
MARGIN_S = 1.5
"""Interpreter start-up and clean-up on a busy two-core machine."""
FRESH_POSIX = """\
import importlib.util
spec = importlib.util.find_spec("posix")
posix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(posix)
"""
"""Program prefix binding ``posix`` to functions the Python guard has not replaced."""
AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="only a root parent drops the sandbox to an unprivileged user")


def assert_still_works():
    """The next, ordinary program runs and passes."""
    result = run_sandboxed("assert sum(range(10)) == 45", FAST)
    assert result.passed, result


def timed(source, limits=FAST):
    start = time.monotonic()
    result = run_sandboxed(source, limits)
    return result, time.monotonic() - start


def test_program_that_runs_to_the_end_passes():
    result = run_sandboxed("import math\nassert math.gcd(12, 18) == 6\nprint('fine')", FAST)
    assert (result.status, result.returncode, result.passed) == ("passed", 0, True)


def test_failing_assertion_fails_and_shows_where():
    result = run_sandboxed("x = 1\nassert x == 2, 'x is wrong'", FAST)
    assert result.status == "failed" and not result.passed
    assert "AssertionError: x is wrong" in result.stderr_tail and "assert x == 2" in result.stderr_tail


@pytest.mark.parametrize(
    "source",
    ["import os\nos._exit(0)", "import sys\nsys.exit(0)", "raise SystemExit", FRESH_POSIX + "posix._exit(0)"],
    ids=["os._exit", "sys.exit", "SystemExit", "posix._exit"],
)
def test_exiting_with_status_zero_before_the_end_fails(source):
    result = run_sandboxed(source + "\nassert False, 'the tests would fail'", FAST)
    assert result.status == "failed" and result.returncode == 0
    assert_still_works()


def test_program_cannot_replay_what_it_finds_on_stdin():
    """The nonce arrives on stdin; the program must not be able to read it back and report it itself."""
    source = """\
import os
os.lseek(0, 0, os.SEEK_SET)
leaked = os.read(0, 4096).split(b"\\n")[0]
for fd in range(3, 64):
    try:
        os.write(fd, leaked)
    except OSError:
        pass
os._exit(0)
"""
    assert run_sandboxed(source, FAST).status == "failed"


@pytest.mark.parametrize(
    "source",
    [
        "def broken(:",
        "x = 1\x00",
        "s = '\ud800'",
        "\x7fELF\x02\x01\x01\x00",
        "return 5",
        "    indented = 1",
        "import no_such_module_42",
    ],
    ids=["syntax", "null-byte", "lone-surrogate", "binary", "return-outside-function", "indentation", "missing-import"],
)
def test_malformed_source_fails_without_raising(source):
    result = run_sandboxed(source, FAST)
    assert result.status == "failed"
    assert "Error" in result.stderr_tail
    assert_still_works()


def test_source_that_is_not_text_is_an_error_not_an_exception():
    result = run_sandboxed(None, FAST)
    assert result.status == "error" and result.returncode is None
    assert_still_works()


@pytest.mark.parametrize("source", ["while True:\n    pass", "import time\ntime.sleep(60)"], ids=["busy", "sleeping"])
def test_endless_program_is_killed_on_time(source):
    result, elapsed = timed(source)
    assert result.status == "timeout"
    assert FAST.timeout_s <= elapsed < FAST.timeout_s + MARGIN_S
    assert_still_works()


def test_memory_bomb_is_refused():
    result, elapsed = timed("hoard = bytearray(10 * 2**30)")
    assert result.status == "failed" and "MemoryError" in result.stderr_tail
    assert elapsed < FAST.timeout_s
    assert_still_works()


def test_fork_is_refused_by_the_guard():
    result = run_sandboxed("import os\nwhile True:\n    os.fork()", FAST)
    assert result.status == "failed" and "os.fork is not allowed" in result.stderr_tail
    assert_still_works()


FORK_BOMB = (
    FRESH_POSIX
    + """\
import sys, time
children = []
try:
    for _ in range(200):
        pid = posix.fork()
        if pid == 0:
            posix.setsid()  # out of the worker's process group: only the supervisor's sweep can find it
            time.sleep(60)
            posix._exit(0)
        children.append(pid)
except OSError:
    pass
print("group", posix.getpgid(0), "children", *children, file=sys.stderr, flush=True)
"""
)


@pytest.mark.parametrize("ending", ["", "time.sleep(60)"], ids=["finishes", "times-out"])
def test_fork_bomb_past_the_guard_hits_the_process_limit_and_leaves_nothing(ending):
    limits = SandboxLimits(timeout_s=FAST.timeout_s, max_processes=8)
    result = run_sandboxed(FORK_BOMB + ending, limits)
    assert result.status == ("passed" if not ending else "timeout")
    words = result.stderr_tail.split()
    group, children = int(words[1]), [int(pid) for pid in words[3:]]
    assert len(children) < limits.max_processes
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)
    for pid in children:
        assert not os.path.exists(f"/proc/{pid}"), f"process {pid} outlived its sandbox"
    assert_still_works()


@pytest.mark.parametrize(
    "attack",
    [
        pytest.param("import os\nos.remove({file!r})", id="os.remove"),
        pytest.param("import shutil\nshutil.rmtree({folder!r})", id="shutil.rmtree"),
        pytest.param("open({file!r}, 'w').write('overwritten')", id="open-for-writing"),
        pytest.param("import pathlib\npathlib.Path({file!r}).write_text('overwritten')", id="pathlib-write"),
        pytest.param("import os\nos.rename({file!r}, {file!r} + '.moved')", id="os.rename"),
        pytest.param(FRESH_POSIX + "posix.unlink({file!r})", marks=needs_root, id="posix.unlink"),
        pytest.param(
            FRESH_POSIX + "fd = posix.open({file!r}, posix.O_WRONLY | posix.O_TRUNC)\nposix.write(fd, b'overwritten')",
            marks=needs_root,
            id="posix.open-for-writing",
        ),
    ],
)
def test_files_outside_the_sandbox_are_untouchable(attack, tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("original")
    result = run_sandboxed(attack.format(file=str(target), folder=str(tmp_path)), FAST)
    assert result.status == "failed"
    assert target.read_text() == "original"
    assert_still_works()


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 that nobody should reach; yields (port, accepted connections so far)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)

    def accepted():
        connections = []
        while True:
            try:
                connections.append(server.accept())
            except BlockingIOError:
                return connections

    yield server.getsockname()[1], accepted
    server.close()


def test_network_connection_is_refused_by_the_guard(listener):
    port, accepted = listener
    result = run_sandboxed(
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi')", FAST
    )
    assert result.status == "failed" and "sockets are not allowed" in result.stderr_tail
    assert accepted() == []
    assert_still_works()


def test_network_namespace_has_no_route_even_past_the_guard(listener):
    probe = run_sandboxed("import os, sys\nprint(os.readlink('/proc/self/ns/net'), file=sys.stderr)", FAST)
    if probe.stderr_tail.strip() == os.readlink("/proc/self/ns/net"):
        pytest.skip("no network namespaces here (needs root with CAP_SYS_ADMIN, or user namespaces)")
    port, accepted = listener
    shell = f"echo hi > /dev/tcp/127.0.0.1/{port}"
    result = run_sandboxed(FRESH_POSIX + f"posix.execv('/bin/bash', ['bash', '-c', {shell!r}])", FAST)
    assert result.status == "failed" and "unreachable" in result.stderr_tail
    assert accepted() == []
    assert_still_works()


@pytest.mark.parametrize(
    "source, status",
    [
        ("while True:\n    print('x' * 4096)", "timeout"),
        ("import sys\nwhile True:\n    sys.stderr.write('y' * 65536)", "failed"),
    ],
    ids=["stdout", "stderr"],
)
def test_endless_output_is_capped(source, status):
    limits = SandboxLimits(timeout_s=FAST.timeout_s, max_file_bytes=2**20, stderr_tail_bytes=1000)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, elapsed = timed(source, limits)
    assert result.status == status
    assert elapsed < limits.timeout_s + MARGIN_S
    assert len(result.stderr_tail) <= limits.stderr_tail_bytes
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_kib < 50 * 1024
    assert_still_works()


def test_crash_is_reported():
    result = run_sandboxed("import signal\nsignal.raise_signal(signal.SIGSEGV)", FAST)
    assert (result.status, result.returncode) == ("crashed", -signal.SIGSEGV)
    assert_still_works()


@pytest.mark.parametrize("ending", ["", "import time\ntime.sleep(60)"], ids=["finishes", "times-out"])
def test_each_run_gets_a_fresh_directory_that_is_removed(ending):
    source = "import os, sys\nassert os.listdir('.') == []\nopen('scratch.txt', 'w').write('x')\n"
    source += "print(os.getcwd(), file=sys.stderr, flush=True)\n" + ending
    limits = SandboxLimits(timeout_s=1.0)
    first, second = run_sandboxed(source, limits), run_sandboxed(source, limits)
    directories = {first.stderr_tail.strip(), second.stderr_tail.strip()}
    assert len(directories) == 2
    assert not any(os.path.exists(directory) for directory in directories)


def test_environment_is_not_inherited(monkeypatch):
    monkeypatch.setenv("SANDBOX_TEST_SECRET", "hunter2")
    assert run_sandboxed("import os\nassert 'SANDBOX_TEST_SECRET' not in os.environ", FAST).passed


@needs_root
def test_root_parent_runs_the_program_unprivileged():
    result = run_sandboxed(
        f"import os\nassert os.getresuid() == os.getresgid() == ({UNPRIVILEGED_ID},) * 3\nassert os.getgroups() == []",
        FAST,
    )
    assert result.passed, result.stderr_tail


def test_limits_are_checked_at_construction():
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=8)
    with pytest.raises(ValueError, match="max_processes"):
        SandboxLimits(max_processes=0)
