"""The sandbox loads a program, answers calls with plain data, contains what the program does, and
leaves nothing behind. The hostile set in tests/eval/sandbox/test_hostile.py attacks it from every side;
these tests pin each mechanism down on its own, under bubblewrap and, where it applies, the fallback."""

import errno
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval.sandbox import host as sandbox_module
from eval.sandbox import seccomp
from eval.sandbox.host import (
    CALL_COPIES,
    HOST_WIDE_PROC_FILES,
    UNPRIVILEGED_ID,
    Isolation,
    ProgramCrashed,
    ProgramFailed,
    Sandbox,
    SandboxError,
    SandboxLimits,
    WeakIsolationError,
    detect_isolation,
    judge,
    require_strong_isolation,
)
from tests.eval.conftest import isolation_of
from tests.eval.sandbox.hostile import living_processes, survivors

pytestmark = pytest.mark.serial  # sandboxes: their survivors, cgroups and timings are the machine's
FAST = SandboxLimits(timeout_s=2.0)
MARGIN_S = 1.5
"""Interpreter start-up and clean-up on a busy two-core machine."""
FALLBACK = Isolation("process", "fallback process sandbox (forced by the tests)")
FRESH_POSIX = """\
import importlib.util
spec = importlib.util.find_spec("posix")
posix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(posix)
"""
"""Program prefix binding ``posix`` to functions the fallback's Python guard has not replaced."""


@pytest.fixture(params=["gvisor", "bubblewrap", "process"])
def isolation(request):
    return FALLBACK if request.param == "process" else isolation_of(request.param)


def calls(program, isolation, *calls_, limits=FAST):
    """judge() with a test that makes the given (name, args, expected) calls; the reference answers as expected."""

    def test(functions):
        for name, args, expected in calls_:
            assert functions(name)(*args) == expected

    expected_answers = {}
    for name, args, expected in calls_:
        expected_answers.setdefault(name, {})[repr(args)] = expected
    reference = {name: lambda *args, answers=answers: answers[repr(args)] for name, answers in expected_answers.items()}
    return judge(program, test, reference, limits, isolation)


def assert_still_works(isolation):
    result = calls("def add(a, b):\n    return a + b\n", isolation, ("add", (2, 3), 5))
    assert result.passed, result


def test_calls_cross_the_boundary_as_plain_data(isolation):
    program = (
        "def describe(x, *, twice=False):\n    return {'x': x, 'pair': (x, [x] * (2 if twice else 1)), 's': {1.5}}\n"
    )
    with Sandbox(program, FAST, isolation) as sandbox:
        assert sandbox.call("describe", "a", twice=True) == {"x": "a", "pair": ("a", ["a", "a"]), "s": {1.5}}
        assert sandbox.function("describe")(None) == {"x": None, "pair": (None, [None]), "s": {1.5}}


def test_test_that_returns_passes_and_one_that_asserts_fails(isolation):
    program = "def double(x):\n    return 2 * x\n"
    assert calls(program, isolation, ("double", (4,), 8)).passed
    result = calls(program, isolation, ("double", (4,), 9))
    assert result.status == "failed" and "AssertionError" in result.detail


@pytest.mark.parametrize(
    "program, why",
    [
        ("def f(:\n", "SyntaxError"),
        ("x = 1\x00", "SyntaxError"),
        ("s = '\ud800'", "Error"),
        ("\x7fELF\x02\x01\x01\x00", "SyntaxError"),
        ("return 5", "SyntaxError"),
        ("import no_such_module_42", "ModuleNotFoundError"),
        ("import sys\nsys.exit(0)", "SystemExit"),
    ],
    ids=["syntax", "null-byte", "lone-surrogate", "binary", "return-outside-function", "missing-import", "exit"],
)
def test_program_that_does_not_load_fails_and_says_why(program, why, isolation):
    result = calls(program, isolation)
    assert result.status == "failed" and "did not load" in result.detail and why in result.detail
    assert_still_works(isolation)


def test_program_that_is_not_text_is_an_error(isolation):
    assert judge(None, lambda functions: None, {}, FAST, isolation).status == "error"


@pytest.mark.parametrize(
    "body, why",
    [
        ("raise KeyError('k')", "raised KeyError"),
        ("return object()", "not plain data"),
        ("class Yes(int):\n        __eq__ = lambda self, other: True\n    return Yes(1)", "not plain data"),
        ("import os\n    os._exit(0)", "exited with status 0"),
        ("l = []\n    l.append(l)\n    return l", "nested deeper"),
    ],
    ids=["raises", "object", "int-subclass", "exits", "self-containing"],
)
def test_a_call_that_does_not_return_plain_data_fails(body, why, isolation):
    result = calls(f"def f():\n    {body}\n", isolation, ("f", (), 1))
    assert result.status == "failed" and why in result.detail, result


@pytest.mark.parametrize("where", ["load", "call"])
def test_endless_program_times_out_on_time(where, isolation):
    program = "while True:\n    pass\n" if where == "load" else "def f():\n    while True:\n        pass\n"
    start = time.monotonic()
    result = calls(program, isolation, ("f", (), None))
    assert result.status == "timeout"
    assert FAST.timeout_s <= time.monotonic() - start < FAST.timeout_s + MARGIN_S
    assert_still_works(isolation)


def test_crash_is_reported(isolation):
    result = calls("def f():\n    import signal\n    signal.raise_signal(signal.SIGSEGV)\n", isolation, ("f", (), 1))
    assert result.status == "crashed" and "SIGSEGV" in result.detail
    assert_still_works(isolation)


def test_memory_bomb_is_refused(isolation):
    result = calls("def f():\n    return len(bytearray(20 * 2**30))\n", isolation, ("f", (), 1))
    assert result.status == "failed" and "MemoryError" in result.detail


def test_reply_over_the_cap_fails():
    limits = SandboxLimits(timeout_s=FAST.timeout_s, max_reply_bytes=1000)
    result = calls("def f():\n    return 'x' * 5000\n", None, ("f", (), "x" * 5000), limits=limits)
    assert result.status == "failed" and "max_reply_bytes" in result.detail


def test_environment_is_not_inherited(monkeypatch, isolation):
    monkeypatch.setenv("SANDBOX_TEST_SECRET", "hunter2")
    program = "import os\ndef leaked():\n    return 'SANDBOX_TEST_SECRET' in os.environ\n"
    assert calls(program, isolation, ("leaked", (), False)).passed


@pytest.mark.parametrize("ending", ["return 1", "while True:\n        pass"], ids=["returns", "times-out"])
def test_daemons_and_forked_children_do_not_outlive_the_sandbox(ending, isolation):
    program = (
        FRESH_POSIX
        + "import time\n"
        + "def f():\n"
        + "    for _ in range(4):\n"
        + "        try:\n"
        + "            if posix.fork() == 0:\n"
        + "                posix.setsid()\n"
        + "                if posix.fork() == 0:\n"
        + "                    time.sleep(600)\n"
        + "                posix._exit(0)\n"
        + "        except OSError:\n"
        + "            pass\n"
        + f"    {ending}\n"
    )
    before = living_processes()
    result = calls(program, isolation, ("f", (), 1))
    assert result.status == ("passed" if ending == "return 1" else "timeout"), result
    assert survivors(before) == []


def test_sandbox_runs_unprivileged_with_a_private_tmp_and_nothing_else_writable(each_strong_isolation, tmp_path):
    (tmp_path / "host-file.txt").write_text("host")
    program = (
        "import os\n"
        "def look(host):\n"
        "    try:\n"
        "        open('/tmp/scratch', 'w').write('x')\n"
        "    except OSError:\n"
        "        pass\n"
        "    caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
        "    writable = []\n"
        "    for folder in ('/', '/dev', '/dev/shm', '/sandbox', '/usr'):\n"
        "        try:\n"
        "            open(folder + '/probe', 'w').close()\n"
        "            writable.append(folder)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return os.getcwd(), os.listdir('/tmp'), os.path.exists(host), int(caps, 16), os.getuid() == 0, writable\n"
    )
    scratch = ["scratch"] if each_strong_isolation.cgroups else []  # without a cgroup /tmp is read-only
    for _ in range(2):  # each sandbox starts with an empty /tmp of its own
        with Sandbox(program, FAST, each_strong_isolation) as sandbox:
            assert sandbox.call("look", str(tmp_path / "host-file.txt")) == ("/tmp", scratch, False, 0, False, [])
    if os.geteuid() == 0:
        with Sandbox(
            "import os\ndef ids():\n    return os.getresuid(), os.getgroups()\n", FAST, each_strong_isolation
        ) as sb:
            assert sb.call("ids") == ((UNPRIVILEGED_ID,) * 3, [])


def test_calls_past_the_namespaces_are_refused_by_the_seccomp_filter(each_strong_isolation):
    numbers = seccomp.SYSCALL_NUMBERS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"no seccomp table for {platform.machine()}")
    program = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "libc.syscall.restype = ctypes.c_long\n"
        "def errno_of(number):\n"
        "    result = libc.syscall(number, 0, 0, 0, 0, 0)\n"
        "    return ctypes.get_errno() if result == -1 else None\n"
        "def new_user_namespace():\n"
        "    import os\n"
        f"    result = libc.syscall({numbers['clone']}, 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD\n"
        "    if result == 0:\n"
        "        os._exit(0)\n"
        "    return ctypes.get_errno() if result == -1 else 'cloned'\n"
        "def forked():\n"
        "    import os\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os._exit(0)\n"
        "    return os.waitpid(pid, 0)[1]\n"
    )
    with Sandbox(program, FAST, each_strong_isolation) as sandbox:
        for name in seccomp.REFUSED:  # refused before they run, so all-zero arguments are harmless
            assert sandbox.call("errno_of", numbers[name]) == errno.EPERM, name
        assert sandbox.call("errno_of", numbers["clone3"]) == errno.ENOSYS
        assert sandbox.call("new_user_namespace") == errno.EPERM
        if each_strong_isolation.cgroups:
            assert sandbox.call("forked") == 0  # an ordinary fork still works where a cgroup counts the tree
        else:
            with pytest.raises(ProgramFailed, match="BlockingIOError"):
                sandbox.call("forked")


def test_program_that_ends_itself_leaves_no_zombie(isolation):
    before = living_processes()
    result = calls("def f():\n    import os\n    os._exit(3)\n", isolation, ("f", (), 1))
    assert result.status == "failed" and "status 3" in result.detail
    assert survivors(before) == []


def test_details_are_capped_and_printable(isolation):
    program = "def f():\n    raise ValueError('\\ud800\\x1b[31m' + 'x' * 100000)\n"
    result = calls(program, isolation, ("f", (), 1))
    assert result.status == "failed" and len(result.detail) <= sandbox_module.MAX_DETAIL_CHARS
    assert "\x1b" not in result.detail
    result.detail.encode("utf-8")


def test_the_whole_tree_shares_one_memory_cap(each_strong_isolation):
    if not each_strong_isolation.cgroups:
        pytest.skip("no cgroup here: memory is capped per process only")
    program = (
        FRESH_POSIX
        + "import time\n"
        + "def hoard():\n"
        + "    children = []\n"
        + "    for _ in range(4):\n"
        + "        pid = posix.fork()\n"
        + "        if pid == 0:\n"
        + "            block = bytearray(150 * 2**20)\n"
        + "            block[::4096] = b'x' * len(block[::4096])\n"
        + "            time.sleep(1)\n"
        + "            posix._exit(0)\n"
        + "        children.append(pid)\n"
        + "    return [posix.waitpid(pid, 0)[1] for pid in children]\n"
    )
    limits = SandboxLimits(timeout_s=10.0, memory_mb=256)  # each child alone fits; four do not (with gVisor's room)
    with Sandbox(program, limits, each_strong_isolation) as sandbox:
        try:
            statuses = sandbox.call("hoard")
        except ProgramCrashed as crash:  # under gVisor the host's kill may take the program's process or kernel
            assert each_strong_isolation.kind == "gvisor" and "the memory cap was hit" in str(crash)
            return
    assert signal.SIGKILL in [os.WTERMSIG(status) for status in statuses if os.WIFSIGNALED(status)]


def test_processes_are_capped_for_the_tree(each_strong_isolation):
    program = (
        FRESH_POSIX
        + "import time\n"
        + "def spawn():\n"
        + "    started = 0\n"
        + "    for _ in range(100):\n"
        + "        try:\n"
        + "            if posix.fork() == 0:\n"
        + "                time.sleep(600)\n"
        + "            started += 1\n"
        + "        except OSError:\n"
        + "            break\n"
        + "    return started\n"
    )
    limits = SandboxLimits(timeout_s=FAST.timeout_s, max_processes=8)
    with Sandbox(program, limits, each_strong_isolation) as sandbox:
        assert sandbox.call("spawn") < limits.max_processes


def test_cgroups_are_removed_afterwards(strong_isolation):
    if not strong_isolation.cgroups:
        pytest.skip("no cgroup here")
    memory_root = Path("/sys/fs/cgroup/memory")
    before = set(memory_root.rglob("sandbox-*"))
    assert calls("def f():\n    return 1\n", strong_isolation, ("f", (), 1)).passed
    assert calls("while True:\n    pass\n", strong_isolation).status == "timeout"
    assert set(memory_root.rglob("sandbox-*")) == before


def test_without_gvisor_and_bubblewrap_the_fallback_is_named_and_training_refuses_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(sandbox_module, "strong_isolation", sandbox_module.strong_isolation.__wrapped__)
    with pytest.warns(UserWarning, match="gvisor is not installed"):
        fallback = detect_isolation.__wrapped__()
    assert fallback.kind == "process" and not fallback.strong
    assert "gvisor is not installed (the `runsc` command" in fallback.description
    assert "bubblewrap is not installed (the `bwrap` command" in fallback.description
    monkeypatch.setattr(sandbox_module, "detect_isolation", lambda: fallback)
    with pytest.raises(WeakIsolationError, match="allow_weak_sandbox=True"):
        require_strong_isolation(allow_fallback=False)
    assert require_strong_isolation(allow_fallback=True) is fallback


def test_the_environment_picks_a_strong_isolation_and_an_unknown_one_is_an_error(monkeypatch, bubblewrap_isolation):
    monkeypatch.setenv("RL_SANDBOX", "bubblewrap")
    assert detect_isolation.__wrapped__() is bubblewrap_isolation
    monkeypatch.setenv("RL_SANDBOX", "firejail")
    with pytest.raises(SandboxError, match="RL_SANDBOX='firejail' is no sandbox; choose gvisor, bubblewrap"):
        detect_isolation.__wrapped__()
    monkeypatch.setattr(sandbox_module, "strong_isolation", lambda kind: f"{kind} is not installed")
    monkeypatch.setenv("RL_SANDBOX", "gvisor")
    with pytest.raises(SandboxError, match="RL_SANDBOX=gvisor: gvisor is not installed"):
        detect_isolation.__wrapped__()


def test_an_installed_sandbox_that_cannot_start_is_an_error_not_a_step_down(monkeypatch, bubblewrap_isolation):
    monkeypatch.delenv("RL_SANDBOX", raising=False)
    broken = "gvisor cannot start a sandbox here: SandboxError: the gvisor sandbox did not start"
    tiers = {"gvisor": broken, "bubblewrap": bubblewrap_isolation}
    monkeypatch.setattr(sandbox_module, "strong_isolation", tiers.get)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    with pytest.raises(SandboxError, match=f"{broken}; set RL_SANDBOX to another sandbox \\(bubblewrap\\)"):
        detect_isolation.__wrapped__()
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "runsc" else f"/usr/bin/{name}")
    assert detect_isolation.__wrapped__() is bubblewrap_isolation  # not installed: the next tier, as documented


def test_a_sandbox_that_does_not_start_is_an_error_not_a_failed_program(gvisor_isolation, tmp_path, monkeypatch):
    runsc = tmp_path / "runsc"
    runsc.write_text("#!/bin/sh\necho 'running container: starting container: /tmp: input/output error' >&2\nexit 2\n")
    runsc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    result = calls("def add(a, b):\n    return a + b\n", gvisor_isolation, ("add", (2, 3), 5))
    assert result.status == "error", result
    assert "the gvisor sandbox did not start: the program exited with status 2" in result.detail
    assert "/tmp: input/output error" in result.detail


def test_a_grading_leaves_no_file_open(isolation, recwarn):
    import gc

    warnings_before = len(recwarn)
    assert calls("def add(a, b):\n    return a + b\n", isolation, ("add", (2, 3), 5)).passed
    assert calls("raise ValueError('no')\n", isolation).status == "failed"
    gc.collect()
    assert not [w for w in list(recwarn)[warnings_before:] if issubclass(w.category, ResourceWarning)]


def test_the_stderr_capture_stops_at_max_file_bytes(each_strong_isolation):
    program = """\
import os
def flood(mb):
    chunk, sent = b"x" * 2**16, 0
    while sent < mb * 2**20:
        try:
            sent += os.write(2, chunk)
        except OSError:
            return sent
    return sent
"""
    limits = SandboxLimits(timeout_s=20.0, max_file_bytes=2**20)
    with Sandbox(program, limits, each_strong_isolation) as sandbox:
        sandbox.call("flood", 8)  # gVisor's kernel takes all 8 MiB; bubblewrap's RLIMIT_FSIZE stops the writes at 1
        time.sleep(0.5)  # what is still in flight
        assert os.fstat(sandbox._stderr.fileno()).st_size <= limits.max_file_bytes


@pytest.mark.slow
@pytest.mark.parametrize("nobody", [False, True], ids=["root", "uid 65534"])
@pytest.mark.parametrize("kind", ["gvisor", "bubblewrap"])
def test_no_zombie_is_left_where_nothing_reaps_orphans(kind, nobody):
    isolation_of(kind)
    if os.geteuid() != 0:
        pytest.skip("a PID namespace of its own needs root")
    command = ["-m", "tests.eval.sandbox.reaping", "--gradings", "6", "--processes", "2", "--isolation", kind]
    done = subprocess.run(
        [sys.executable, *command, *(["--as-nobody"] if nobody else [])],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    report = json.loads(done.stdout)
    assert report["grader uid"] == (65534 if nobody else 0)
    assert report["pid 1"] == "timeout"
    for part, gradings in (("one process", 6), ("processes in a row", 2)):
        assert report[part]["verdicts right"] == gradings and report[part]["tiers"] == [kind], report
        assert report[part]["zombies"] == 0, report


@pytest.mark.slow
def test_the_grading_time_measurement_reports_every_phase_of_each_tier():
    for kind in ("gvisor", "bubblewrap"):
        isolation_of(kind)
    command = [sys.executable, "-m", "tests.eval.sandbox.grading_time", "--gradings", "2", "--block", "1"]
    report = json.loads(subprocess.run(command, capture_output=True, text=True, timeout=600, check=True).stdout)
    phases = ("started and loaded", "calls answered", "torn down")
    for kind in ("gvisor", "bubblewrap"):
        assert all(report[kind][name] > 0 for name in ("grading", "grading's CPU", *phases)), report
        assert sum(report[kind][name] for name in phases) < 2 * report[kind]["grading"] + 50, report
    assert 0 < report["gvisor"]["runsc, empty interpreter"] < report["gvisor"]["started and loaded"], report
    assert report["gvisor / bubblewrap"]["grading"] == pytest.approx(
        report["gvisor"]["grading"] / report["bubblewrap"]["grading"], abs=0.01
    )


def test_program_failure_is_an_exception_for_direct_use(isolation):
    with pytest.raises(ProgramFailed, match="did not load"):
        Sandbox("raise ValueError('no')", FAST, isolation)


def test_limits_are_checked_at_construction():
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=8)
    with pytest.raises(ValueError, match="max_processes"):
        SandboxLimits(max_processes=0)
    with pytest.raises(ValueError, match="max_reply_bytes"):
        SandboxLimits(max_reply_bytes=0)


WITNESS = """\
import sys
seen = []
def f(x):
    seen.append(x)
    if len(seen) == ALL:
        print(f"order {seen}", file=sys.stderr, flush=True)
    return -1
"""
"""A program that answers every call wrongly and, at its last call (ALL in all), reports on stderr, which a
failed test's detail shows, the arguments it got in order."""


def four_checks(functions):
    f = functions("f")
    for x in (1, 2, 3):
        assert f(x) == 2 * x
    f(4)


def test_the_program_answers_every_call_whatever_its_answers_and_in_no_telling_order(strong_isolation):
    program = WITNESS.replace("ALL", str(4 * CALL_COPIES))
    orders = set()
    for _ in range(6):
        # A wrong first answer ends the test, but only after the program answered every copy of all four calls.
        result = judge(program, four_checks, {"f": lambda x: 2 * x}, FAST, strong_isolation)
        assert result.status == "failed" and "order [" in result.detail
        orders.add(result.detail.split("order [")[1].split("]")[0])
    assert {tuple(sorted(order.split(", "))) for order in orders} == {tuple(sorted("1234" * CALL_COPIES))}
    assert len(orders) > 1  # 6 gradings in one order: 1 in 369 600^5 by chance


def test_every_copy_of_a_call_must_get_the_same_answer(strong_isolation):
    def one_check(functions):
        assert functions("f")(1) == 2

    flip = "answers = iter([2, 3] * 10)\ndef f(x):\n    return next(answers)\n"
    result = judge(flip, one_check, {"f": lambda x: 2 * x}, FAST, strong_isolation)
    assert result.status == "failed" and "answered the same call of f differently" in result.detail
    assert judge("def f(x):\n    return 2 * x\n", one_check, {"f": lambda x: 2 * x}, FAST, strong_isolation).passed


def test_a_test_that_would_take_another_path_fails_and_a_failing_reference_is_an_error(strong_isolation):
    def chained(functions):
        f = functions("f")
        assert f(f(1)) >= 0

    # The reference answers 2 and then 4; a program answering 3 would make the test ask f(3), never planned.
    result = judge("def f(x):\n    return x + 2\n", chained, {"f": lambda x: 2 * x}, FAST, strong_isolation)
    assert result.status == "failed" and "did not make" in result.detail
    result = judge("def f(x):\n    return 2 * x\n", chained, {"f": lambda x: -abs(x) - 1}, FAST, strong_isolation)
    assert result.status == "error" and "fails on its reference" in result.detail
    assert judge("def f(x):\n    return x\n", chained, {}, FAST, strong_isolation).status == "error"


def test_tests_that_draw_random_inputs_draw_the_same_ones_on_the_reference_and_the_answers(strong_isolation):
    def random_checks(functions):
        import random

        for _ in range(20):
            x = random.randint(0, 10**9)
            assert functions("f")(x) == x % 7

    program = "def f(x):\n    return x % 7\n"
    assert judge(program, random_checks, {"f": lambda x: x % 7}, FAST, strong_isolation).passed


TREE_PROBES = """\
import os, threading

def outcome(action):
    try:
        action()
        return "done"
    except BaseException as error:
        return type(error).__name__

def fork():
    if os.fork() == 0:
        os._exit(0)

def hoard():
    blocks = []
    for _ in range(64):
        blocks.append(bytearray(16 * 2**20))  # 1 GiB in all, over the 192 MB cap

def probes():
    return {
        "fork": outcome(fork),
        "thread": outcome(lambda: threading.Thread(target=int).start()),
        "memory": outcome(hoard),
        "tmp": outcome(lambda: open("/tmp/x", "w").write("x")),
    }
"""
UNPRIVILEGED_GRADER = """\
import json, sys
from eval.sandbox.host import Sandbox, SandboxLimits, strong_isolation
isolation = strong_isolation(sys.argv[2])
with Sandbox(sys.argv[1], SandboxLimits(timeout_s=10.0, memory_mb=192, max_processes=16), isolation) as sandbox:
    print(json.dumps({"isolation": isolation.description, "cgroups": isolation.cgroups, **sandbox.call("probes")}))
"""


def test_an_unprivileged_grader_without_a_cgroup_keeps_the_whole_tree_in_one_process(each_strong_isolation):
    """No cgroup counts a user's tree, so the program gets one process and one thread, and the memory
    cap, its own, is the tree's; /tmp, which would hold inodes in kernel memory, is read-only."""
    from tests.eval.sandbox.unprivileged import unprivileged, unprivileged_python

    if os.geteuid() != 0:
        pytest.skip("needs root to become another user")
    kind = each_strong_isolation.kind
    run = unprivileged([*unprivileged_python(), "-c", UNPRIVILEGED_GRADER, TREE_PROBES, kind], cwd="/", timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert not report["cgroups"] and "one process and one thread" in report["isolation"], report
    assert report["fork"] == "BlockingIOError" and report["thread"] == "RuntimeError", report
    assert report["memory"] == "MemoryError" and report["tmp"] in ("OSError", "PermissionError"), report


def test_host_wide_kernel_state_is_not_readable_from_one_grading_to_the_next(bubblewrap_isolation):
    """A grading could flood the host's dentries or page cache and the next read the counts: those /proc files are
    hidden, while the program's own /proc entries still work."""
    program = (
        "def read(path):\n"
        "    try:\n"
        "        return len(open(path).read())\n"
        "    except OSError as error:\n"
        "        return type(error).__name__\n"
        "def write(path):\n"
        "    try:\n"
        "        open(path, 'w').write('1')\n"
        "        return 'wrote'\n"
        "    except OSError as error:\n"
        "        return type(error).__name__\n"
    )
    hidden = [f"/proc/{name}" for name in HOST_WIDE_PROC_FILES if Path("/proc", name).exists()]
    hidden += ["/proc/sys/fs/dentry-state", "/proc/sys/fs/inode-nr"]
    hidden += ["/proc/pressure/memory"] if Path("/proc/pressure/memory").exists() else []
    with Sandbox(program, FAST, bubblewrap_isolation) as sandbox:
        for path in hidden:
            assert Path(path).exists() and isinstance(sandbox.call("read", path), str), path  # the host has it
        assert sandbox.call("read", "/proc/self/status") > 0
        assert sandbox.call("write", "/proc/sys/state") in ("OSError", "PermissionError")
