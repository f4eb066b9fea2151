"""The seccomp filter's program, instruction by instruction."""

import struct

import pytest

from eval.sandbox.seccomp import (
    ABSENT,
    ALLOW,
    AUDIT_ARCH,
    KILL_PROCESS,
    NEW_NAMESPACE_FLAGS,
    NOT_IMPLEMENTED,
    REFUSE,
    REFUSED,
    REFUSED_ARGUMENTS,
    SYSCALL_NUMBERS,
    build_filter,
    refused_on,
)

ARGUMENT_CHECKS = sum(3 + 2 * len(values) for _, values in REFUSED_ARGUMENTS.values())
"""Instructions of the argument checks: the call's test, the argument's load, a test and a refusal a value, an allow."""


def instructions(program):
    return [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_every_refused_call_has_a_number_and_gets_eperm(machine):
    refused = refused_on(machine)
    assert set(SYSCALL_NUMBERS[machine]) == {*refused, *REFUSED_ARGUMENTS, "clone", "clone3"}
    assert set(REFUSED) - set(refused) == set(ABSENT.get(machine, ()))
    program = instructions(build_filter(machine))
    assert program[:3] == [(0x20, 0, 0, 4), (0x15, 1, 0, AUDIT_ARCH[machine]), (0x06, 0, 0, KILL_PROCESS)]
    assert program[-1] == (0x06, 0, 0, ALLOW)
    checks = program[-1 - ARGUMENT_CHECKS - 2 * len(refused) : -1 - ARGUMENT_CHECKS]
    for name, (test, refuse) in zip(refused, zip(checks[::2], checks[1::2])):
        assert test == (0x15, 0, 1, SYSCALL_NUMBERS[machine][name])
        assert refuse == (0x06, 0, 0, REFUSE)


def test_x86_64_kills_x32_calls():
    program = instructions(build_filter("x86_64"))
    assert program[3:6] == [(0x20, 0, 0, 0), (0x35, 0, 1, 0x40000000), (0x06, 0, 0, KILL_PROCESS)]
    assert len(program) == 6 + 7 + 2 * len(refused_on("x86_64")) + ARGUMENT_CHECKS + 1
    assert len(instructions(build_filter("aarch64"))) == 4 + 7 + 2 * len(refused_on("aarch64")) + ARGUMENT_CHECKS + 1


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_clone_with_a_namespace_flag_is_refused_and_clone3_is_unavailable(machine):
    program = instructions(build_filter(machine))
    start = 6 if machine == "x86_64" else 4
    numbers = SYSCALL_NUMBERS[machine]
    assert program[start : start + 7] == [
        (0x15, 0, 1, numbers["clone3"]),
        (0x06, 0, 0, NOT_IMPLEMENTED),
        (0x15, 0, 4, numbers["clone"]),
        (0x20, 0, 0, 16),
        (0x45, 0, 1, NEW_NAMESPACE_FLAGS),
        (0x06, 0, 0, REFUSE),
        (0x06, 0, 0, ALLOW),
    ]


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_madvise_and_fcntl_are_refused_for_the_listed_values_only(machine):
    """By hand: madvise(addr, len, advice) reads args[2] (offset 16 + 2 x 8 = 32); fcntl(fd, cmd) reads args[1] (24):
    its write-lifetime hints and the commands that set record locks, which gVisor's kernel holds without a bound."""
    program = instructions(build_filter(machine))
    numbers = SYSCALL_NUMBERS[machine]
    start = len(program) - 1 - ARGUMENT_CHECKS
    assert program[start : start + 9] == [
        (0x15, 0, 8, numbers["madvise"]),
        (0x20, 0, 0, 32),
        (0x15, 0, 1, 20),  # MADV_COLD
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 21),  # MADV_PAGEOUT
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 25),  # MADV_COLLAPSE
        (0x06, 0, 0, REFUSE),
        (0x06, 0, 0, ALLOW),  # MADV_DONTNEED and the rest, which the allocator uses
    ]
    assert program[start + 9 : start + 24] == [
        (0x15, 0, 14, numbers["fcntl"]),
        (0x20, 0, 0, 24),
        (0x15, 0, 1, 1036),  # F_SET_RW_HINT
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 1038),  # F_SET_FILE_RW_HINT
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 6),  # F_SETLK
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 7),  # F_SETLKW
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 37),  # F_OFD_SETLK
        (0x06, 0, 0, REFUSE),
        (0x15, 0, 1, 38),  # F_OFD_SETLKW
        (0x06, 0, 0, REFUSE),
        (0x06, 0, 0, ALLOW),  # F_GETLK, F_SETFL, F_SETPIPE_SZ and the rest
    ]
    assert start + 24 == len(program) - 1


@pytest.mark.parametrize(("machine", "number"), [("x86_64", 222), ("aarch64", 107)])
def test_timer_create_is_refused(machine, number):
    """POSIX timers, which gVisor's kernel holds without a bound (it does not apply RLIMIT_SIGPENDING): by hand,
    timer_create's number in each kernel table, then its own check in the program, followed by a refusal."""
    assert SYSCALL_NUMBERS[machine]["timer_create"] == number and "timer_create" in refused_on(machine)
    program = instructions(build_filter(machine))
    assert program.count((0x15, 0, 1, number)) == 1  # no other check compares with the number
    assert program[program.index((0x15, 0, 1, number)) + 1] == (0x06, 0, 0, REFUSE)
