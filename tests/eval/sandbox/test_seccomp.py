"""The seccomp filter's program, instruction by instruction."""

import struct

import pytest

from eval.sandbox.seccomp import (
    ALLOW,
    AUDIT_ARCH,
    KILL_PROCESS,
    NEW_NAMESPACE_FLAGS,
    NOT_IMPLEMENTED,
    REFUSE,
    REFUSED,
    SYSCALL_NUMBERS,
    build_filter,
)


def instructions(program):
    return [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_every_refused_call_has_a_number_and_gets_eperm(machine):
    assert set(SYSCALL_NUMBERS[machine]) == {*REFUSED, "clone", "clone3"}
    program = instructions(build_filter(machine))
    assert program[:3] == [(0x20, 0, 0, 4), (0x15, 1, 0, AUDIT_ARCH[machine]), (0x06, 0, 0, KILL_PROCESS)]
    assert program[-1] == (0x06, 0, 0, ALLOW)
    checks = program[-1 - 2 * len(REFUSED) : -1]
    for name, (test, refuse) in zip(REFUSED, zip(checks[::2], checks[1::2])):
        assert test == (0x15, 0, 1, SYSCALL_NUMBERS[machine][name])
        assert refuse == (0x06, 0, 0, REFUSE)


def test_x86_64_kills_x32_calls():
    program = instructions(build_filter("x86_64"))
    assert program[3:6] == [(0x20, 0, 0, 0), (0x35, 0, 1, 0x40000000), (0x06, 0, 0, KILL_PROCESS)]
    assert len(program) == 6 + 7 + 2 * len(REFUSED) + 1
    assert len(instructions(build_filter("aarch64"))) == 4 + 7 + 2 * len(REFUSED) + 1


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
