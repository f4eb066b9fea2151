"""The hostile set (tests/eval/sandbox/hostile.py): every completion fails, and none of them leaves a trace."""

import dataclasses
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from eval.benchmarks.humaneval import load_humaneval, run_humaneval
from eval.sandbox.host import ProgramFailed, Sandbox, SandboxLimits
from eval.sandbox.seccomp import SYSCALL_NUMBERS
from tests.eval.conftest import isolation_of
from tests.eval.sandbox import channels
from tests.eval.sandbox.hostile import (
    ATTACKS,
    GRACE_S,
    INITIAL_STATE,
    KERNEL_MEMORY_PROBES,
    LEARNER,
    LIMITS,
    SENTRY_FLOODS,
    SENTRY_GROWTH_MB,
    SHARED_STATE_PROBES,
    bait,
    living_processes,
    project_fingerprint,
    run_attacks,
    sentry_growth,
    survivors,
)
from tests.eval.sandbox.unprivileged import AS_NOBODY, NOBODY, PROJECT, unprivileged, unprivileged_python

pytestmark = pytest.mark.serial  # sandboxes: their survivors, cgroups and timings are the machine's

FORGERIES = [name for name, (category, _) in ATTACKS.items() if category == "forgery"]


@pytest.mark.slow
def test_every_hostile_completion_fails_and_leaves_nothing_behind(each_strong_isolation, tmp_path):
    assert len(ATTACKS) >= 40
    before, fingerprint = living_processes(), project_fingerprint()
    with bait(tmp_path) as target:
        outcomes = run_attacks(target, isolation=each_strong_isolation)
        time.sleep(4)  # past the daemons' delayed writes
        assert target.arrivals() == []
        assert target.canary_intact()
    assert [(o.name, o.result.status) for o in outcomes if o.result.passed] == []
    assert [o.name for o in outcomes if o.leaked_secret] == []
    assert [o.name for o in outcomes if o.seconds > LIMITS.timeout_s + GRACE_S] == []
    assert project_fingerprint() == fingerprint
    assert survivors(before) == []


def test_forged_verdicts_fail_in_the_fallback_sandbox_too(tmp_path):
    """The verdict is decided in the grader whatever the isolation."""
    from eval.sandbox.host import Isolation

    fallback = Isolation("process", "fallback process sandbox (forced by the tests)")
    with bait(tmp_path) as target:
        outcomes = run_attacks(target, FORGERIES, isolation=fallback)
    assert [o.name for o in outcomes if o.result.passed] == []


@pytest.mark.slow
def test_every_hostile_completion_fails_under_an_unprivileged_grader_too(each_strong_isolation):
    """As a user, the grader has no cgroup and the sandbox runs in a user namespace: the same set, the same checks."""
    if os.geteuid() != 0:
        pytest.skip("this grader is unprivileged already: the test above is this one")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")
    python = unprivileged_python()
    home = Path(tempfile.mkdtemp(prefix="hostile-unprivileged-"))
    try:
        home.chmod(0o777)
        report = home / "escaped.json"
        run = unprivileged(
            [
                f"HOME={home}",
                *python,
                *("-m", "tests.eval.sandbox.hostile", "--home", str(home), "--json", str(report)),
                *("--isolation", each_strong_isolation.kind),
            ],
            cwd=home,
            timeout=900,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        escaped = json.loads(report.read_text())
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert (
        escaped["uid"] == NOBODY
        and "user namespace" in escaped["isolation"]
        and escaped["attacks"] == len(ATTACKS) + len(channels.CHANNELS)
    )
    for what in ("passed", "leaked_secret", "late", "arrivals", "survivors"):
        assert escaped[what] == [], what
    assert not escaped["canary_changed"] and not escaped["sources_changed"]


def learned(state: dict, detail: str) -> dict:
    """The learner's state after a grading: its last report in the result's detail, else unchanged."""
    reports = [line for line in detail.splitlines() if line.startswith("STATE")]
    return json.loads(reports[-1][len("STATE") :]) if reports else state


def grade_repeatedly(grade, times: int) -> list[bool]:
    """``grade(completion) -> (passed, detail)`` on the learner ``times`` times, its memory carried over."""
    state, passes = INITIAL_STATE, []
    for _ in range(times):
        passed, detail = grade(LEARNER.replace("STATE", repr(json.dumps(state)), 1))
        passes.append(passed)
        state = learned(state, detail)
    return passes


@pytest.mark.slow
def test_a_completion_that_never_reads_its_arguments_learns_nothing_in_50_gradings(strong_isolation):
    problem = load_humaneval()[0]

    def grade(completion):
        result = run_humaneval(problem, completion, LIMITS, strong_isolation)
        return result.passed, result.detail

    assert not any(grade_repeatedly(grade, 50))


@pytest.mark.slow
def test_the_learner_does_learn_where_the_calls_follow_the_answers(strong_isolation):
    """The check above can fail: a test that calls the program as it runs stops at its first failed
    check, and the learner, given the same memory, then passes within a grading per answer."""
    problem = load_humaneval()[0]
    namespace = {}
    exec(problem.prompt + "    pass\n\n" + problem.metadata["test"], namespace)

    def grade(completion):
        with Sandbox(problem.prompt + completion, LIMITS, strong_isolation) as sandbox:
            try:
                namespace["check"](sandbox.function(problem.metadata["entry_point"]))
            except (AssertionError, ProgramFailed):
                return False, sandbox.stderr_tail()
        return True, ""

    passes = grade_repeatedly(grade, 10)
    assert passes[-1] and passes.index(True) <= 8


@pytest.mark.parametrize("name", sorted({**KERNEL_MEMORY_PROBES, **SHARED_STATE_PROBES}))
def test_each_kernel_memory_and_shared_state_probe_works_outside_the_sandbox_as_root_and_as_nobody(name):
    """The attacks the sandbox refuses are real: bare, each one makes the kernel hold its memory or take the call that
    leaves shared state, as this user and, from root, as uid 65534."""
    numbers = SYSCALL_NUMBERS.get(platform.machine())
    if numbers is None:
        pytest.skip(f"no system-call table for {platform.machine()}")
    probe = {**KERNEL_MEMORY_PROBES, **SHARED_STATE_PROBES}[name].format(**numbers) + "assert worked\n"
    bare = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert bare.returncode == 0, bare.stderr[-2000:]
    if os.geteuid() == 0 and shutil.which("setpriv") is not None:
        as_nobody = unprivileged([*unprivileged_python(), "-c", probe], timeout=60)
        assert as_nobody.returncode == 0, as_nobody.stderr[-2000:]


SENTRY_GROWTH_AS_NOBODY = """\
import json, sys
from eval.sandbox.host import strong_isolation
from tests.eval.sandbox.hostile import sentry_growth
isolation = strong_isolation(sys.argv[2])
print(json.dumps([isolation.cgroups, *sentry_growth(sys.argv[1], isolation)]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SENTRY_FLOODS))
def test_each_flood_of_kernel_objects_gvisor_would_hold_without_bound_is_refused(name, each_strong_isolation):
    """Bare, each object is created (the probes above, as root and as uid 65534); graded by a grader without a cgroup
    (root told there is none, under gVisor, and uid 65534, which has none), the flood creates none and gVisor's kernel
    grows no more than an idle program's does (before the filter refused them: by 266 MB for timers, 79 MB for
    locks, in 8 s)."""
    isolation = each_strong_isolation
    if isolation.kind == "gvisor":  # bubblewrap's sandbox has no kernel of its own to grow: the refusal is the check
        isolation = dataclasses.replace(isolation, cgroups=False)
    created, growth = sentry_growth(name, isolation)
    assert created == 0 and growth < SENTRY_GROWTH_MB, (created, growth)
    if os.geteuid() == 0 and shutil.which("setpriv") is not None:
        run = unprivileged(
            [*unprivileged_python(), "-c", SENTRY_GROWTH_AS_NOBODY, name, isolation.kind], cwd=PROJECT, timeout=120
        )
        assert run.returncode == 0, run.stderr[-2000:]
        cgroups, created, growth = json.loads(run.stdout.strip().splitlines()[-1])
        assert not cgroups and created == 0 and growth < SENTRY_GROWTH_MB, (cgroups, created, growth)


@pytest.fixture
def disk_folder():
    """A folder on a disk file system (one that keeps negative dentries) that every user can use."""
    folder = Path(tempfile.mkdtemp(prefix="channels-", dir="/var/tmp"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _bare_runners() -> list[list[str]]:
    """Interpreters to run a bare script with: this user's and, from root, uid 65534's."""
    runners = [[sys.executable]]
    if os.geteuid() == 0 and shutil.which("setpriv") is not None:
        runners.append([*AS_NOBODY, *unprivileged_python()])
    return runners


@pytest.mark.parametrize("name", sorted(channels.CHANNELS))
def test_each_channel_between_gradings_works_outside_the_sandbox_as_root_and_as_nobody(name, disk_folder):
    """Bare, the writer's pattern reaches the reader through each channel, as this user and, from root, as uid 65534;
    the hostile set grades the same pairs in the sandbox, where every reader fails."""
    target = disk_folder / "target"
    with open(target, "wb") as file:
        file.write(os.urandom(8 * 2**20))
        os.fsync(file.fileno())
    target.chmod(0o644)
    place = str(disk_folder if channels.CHANNELS[name] == "names" else target)
    for runner in _bare_runners():
        bits, token = channels.pattern(), secrets.token_hex(6)
        descriptor = os.open(target, os.O_RDONLY)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # the pages start out of the page cache
        os.close(descriptor)
        for role in ("write", "read"):
            source = channels.script(name, role, bits, token, place) + (
                "assert worked, read\n" if role == "read" else ""
            )
            run = subprocess.run([*runner, "-c", source], capture_output=True, text=True, timeout=60, check=False)
            assert run.returncode == 0, (runner[0], role, run.stderr[-2000:])


@pytest.mark.parametrize("name", sorted(channels.CHANNELS))
def test_each_reader_runs_in_the_sandbox_and_finds_the_same_state_whatever_was_written(name, bubblewrap_isolation):
    """The readers do run inside (the calls they need are not refused): the fault-count and I/O ones read every page as
    cached, the pagemap and timed ones no pattern, whatever the writer graded before them did."""
    bits, token = channels.pattern(), secrets.token_hex(6)
    with Sandbox(
        channels.script(name, "write", bits, token, None) + "def f():\n    return 0\n", LIMITS, bubblewrap_isolation
    ) as writer:
        writer.call("f")
    reader = channels.script(name, "read", bits, token, None) + "def f():\n    return read\n"
    with Sandbox(reader, LIMITS, bubblewrap_isolation) as sandbox:
        read = sandbox.call("f")
    if channels.CHANNELS[name] in ("faults", "io"):
        assert read == [True] * channels.K
    else:  # what the kernel maps around a fault, and times, vary a little on their own: no pattern, that is all
        assert read != bits


@pytest.mark.slow
def test_a_flood_of_failed_lookups_leaves_no_negative_dentry_on_the_host(strong_isolation, disk_folder):
    """Bare, failed lookups in a disk folder each leave a negative dentry no cgroup of a user counts; graded, the
    same flood over every folder the program sees leaves almost none, as root and as uid 65534."""
    before = channels.negative_dentries()
    flood = (
        f"import os\nfor i in range({channels.FLOOD_LOOKUPS}):\n    os.path.exists('{disk_folder}/.flood-' + str(i))\n"
    )
    subprocess.run([sys.executable, "-c", flood], check=True, timeout=120)
    assert channels.negative_dentries() - before > channels.FLOOD_LOOKUPS // 2
    assert channels.graded_flood_growth() < channels.FLOOD_LOOKUPS // 20
    if os.geteuid() == 0 and shutil.which("setpriv") is not None:
        run = unprivileged(
            [*unprivileged_python(), "-m", "tests.eval.sandbox.channels", "flood"], cwd=PROJECT, timeout=300
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert int(run.stdout.split()[-1]) < channels.FLOOD_LOOKUPS // 20


def test_survivors_are_the_programs_user_and_our_descendants_not_the_graders_other_work():
    """Under a root grader a process of uid 65534 started meanwhile, or one of this process's children, is a survivor;
    a root process of other work (a daemon that left its parent, as a campaign's jobs beside the tests) is not."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs a root grader and setpriv to start a process as uid 65534")
    before = living_processes()
    child = subprocess.Popen(["sleep", "60"])
    program = subprocess.Popen([*AS_NOBODY, "sleep", "61"])
    other = subprocess.run(  # a daemon of root's own: it outlives its shell, reparented away from us
        ["sh", "-c", "setsid sleep 62 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True
    )
    daemon = int(other.stdout.strip())
    try:
        time.sleep(0.2)
        found = {int(line.split()[0]) for line in survivors(before)}
        assert child.pid in found and daemon not in found
        assert any(f"uid {NOBODY}:" in line and "sleep 61" in line for line in survivors(before))
    finally:
        for process in (child, program):
            process.kill()
            process.wait()
        os.kill(daemon, signal.SIGKILL)


def _offsets(read: list[int], message: int) -> list[int]:
    return [(value - message) % channels.INODE_MODULUS for value in read]


def test_the_inode_counter_channel_works_outside_the_sandbox_as_root_and_as_nobody():
    """Bare, a reader started after the writer finds each CPU's inode counter just past the value the writer set."""
    for runner in _bare_runners():
        message = secrets.randbelow(channels.INODE_MODULUS)
        program = channels.INODE_WRITER + "import sys\nwrite(int(sys.argv[1])) if sys.argv[1] else print(read())\n"
        subprocess.run([*runner, "-c", program, str(message)], check=True, timeout=60)
        read = subprocess.run([*runner, "-c", program, ""], capture_output=True, text=True, check=True, timeout=60)
        assert max(_offsets(json.loads(read.stdout), message)) < 256, (runner[0], message, read.stdout)


@pytest.mark.parametrize("kind", ["gvisor", "bubblewrap"])
def test_the_inode_counter_carries_between_gradings_on_the_hosts_kernel_and_not_under_gvisor(kind):
    """bubblewrap's sandboxes share the host's counter: the reader finds what the writer graded before it set (the
    measurement works inside). gVisor's each have their own: the reader finds the same whatever was written. (The
    writer sets its first CPU's counter only: gVisor has one counter, which a second CPU would have to wrap.)"""
    isolation = isolation_of(kind)
    limits = SandboxLimits(timeout_s=30.0)
    reads = []
    for message in (300 + secrets.randbelow(100), 500 + secrets.randbelow(100)):
        with Sandbox(channels.INODE_WRITER, limits, isolation) as writer:
            writer.call("write", message, 1)
        with Sandbox(channels.INODE_WRITER, limits, isolation) as reader:
            reads.append((message, reader.call("read")[0]))
    if kind == "bubblewrap":
        assert max(offset for message, read in reads for offset in _offsets([read], message)) < 256, reads
    else:
        assert reads[0][1] == reads[1][1] < 300, reads
