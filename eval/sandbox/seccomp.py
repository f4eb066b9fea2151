"""A seccomp filter for the code sandbox: the system calls a graded program never needs, refused.

bubblewrap loads it (``--seccomp FD``) before it starts the sandbox's init, so every process in the
sandbox inherits it. The refused calls (they fail with EPERM) are the ones that reach past the
namespaces and limits:

- the kernel keyrings (``keyctl``, ``add_key``, ``request_key``): a sandbox would otherwise inherit
  the grader's session keyring, and under root share ``nobody``'s user keyrings with the others;
- memory outside RLIMIT_AS: SysV shared memory, message queues and semaphores (``shmget``,
  ``msgget``, ``semget``), POSIX message queues (``mq_open``), ``memfd_create`` and ``memfd_secret``;
- the page cache's state, which outlives the sandbox where its files are the host's (bound one by one when
  no in-memory copy can be made, :mod:`eval.sandbox.view`): reading
  it (``mincore``, ``cachestat``, ``preadv2``, whose RWF_NOWAIT reads only what is cached) or
  steering it (``fadvise64``, ``readahead``; ``pwritev2`` with its twin);
- host disk past RLIMIT_FSIZE: ``fallocate`` (with FALLOC_FL_KEEP_SIZE it skips that limit);
- other processes' memory and control: ``ptrace``, ``process_vm_readv``/``writev``,
  ``process_madvise``, and process descriptors (``pidfd_open``, ``pidfd_getfd``, which copies
  another process's open files);
- new namespaces and mounts: ``unshare``, ``setns``, ``clone`` with a new-namespace flag (``clone3``,
  whose flags a filter cannot read, answers ENOSYS, so the C library falls back to ``clone``),
  ``mount``, ``umount2``, ``pivot_root`` and the new mount API;
- asynchronous I/O (``io_uring_*`` and the older ``io_setup``/``io_submit`` family): a process
  with large direct reads in flight cannot be killed until they finish, so it would outlive grading;
- large kernel attack surface a program does not need: ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``open_by_handle_at``, ``fanotify_init``;
- sockets of every family (``socket``, ``socketpair``): their buffers (a loopback TCP connection, a
  listener's backlog, a UDP or netlink receive queue, a Unix socket's queue) are kernel memory that
  neither the address-space limit nor every memory cgroup counts, and a graded program needs none;
- moving pages between pipes and memory (``splice``, ``vmsplice``, ``tee``): a pipe slot can pin a
  whole transparent huge page that the program then unmaps, memory its limit no longer counts;
- state a later grading can read that one grading leaves without writing anything (:data:`REFUSED_ARGUMENTS`):
  ``madvise`` advice that rebuilds or evicts a mapped file's shared page cache (``MADV_COLLAPSE`` turns a
  region of a read-only file into one huge page, ``MADV_PAGEOUT`` and ``MADV_COLD`` evict or age its pages),
  ``fcntl``'s write-lifetime hints (``F_SET_RW_HINT``, ``F_SET_FILE_RW_HINT``: stored on the inode by an owner
  check alone, no write to the mount), and inotify watches (``inotify_add_watch``, ``inotify_init1``), which
  read the host-wide rename cookie that every rename moves;
- a file system's free space (``statfs``, ``fstatfs``, ``ustat``): the files a sandbox sees lie on the host's file
  systems, whose free space every grading running at the same time can move (its stderr capture grows a host
  file) and read;
- kernel objects that no per-process limit bounds, which under gVisor grow the sandbox's kernel's own memory, outside
  every limit where the grader has no cgroup: POSIX timers (``timer_create``: gVisor applies no RLIMIT_SIGPENDING,
  and 82,258 timers in 8 s grew it by 266 MB; CPython's ``signal.setitimer``, ``time.sleep`` and threads use other
  calls), and ``fcntl``'s record locks (``F_SETLK``, ``F_SETLKW``, ``F_OFD_SETLK``, ``F_OFD_SETLKW``: a lock on
  every other byte of a file the program may read is one more range each, 191,600 of them 79 MB; on Linux they are
  kernel memory outside RLIMIT_AS, and locks on the view's shared files are seen by every grading running beside
  it). ``flock`` (one lock an open file) and ``F_GETLK`` stay; ``sqlite3`` on a file cannot lock it (``:memory:``
  databases work).

A call from another architecture's ABI (x86-64's 32-bit and x32 entry points) kills the process,
so the filter cannot be sidestepped through a second system-call table. Built for x86-64 and
AArch64; elsewhere :func:`filter_for_this_machine` returns None and the sandbox says so.
"""

from __future__ import annotations

import platform
import struct

REFUSED = (
    "keyctl", "add_key", "request_key", "shmget", "msgget", "semget", "mq_open", "memfd_create", "memfd_secret",
    "mincore", "cachestat", "preadv2", "pwritev2", "fadvise64", "readahead", "fallocate", "ptrace",
    "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_open", "pidfd_getfd", "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "open_tree_attr",
    "move_mount", "fsopen", "fsmount", "fspick", "fsconfig", "mount_setattr", "io_uring_setup", "io_uring_enter", "io_uring_register", "io_setup", "io_submit", "io_getevents",
    "io_pgetevents", "io_cancel", "io_destroy", "bpf", "perf_event_open", "userfaultfd", "open_by_handle_at",
    "fanotify_init", "socket", "socketpair", "splice", "vmsplice", "tee", "inotify_init1", "inotify_add_watch",
    "statfs", "fstatfs", "ustat", "timer_create",
)  # fmt: skip
ABSENT = {"aarch64": ("ustat",)}
"""Refused calls an architecture does not have."""
MADV_COLD, MADV_PAGEOUT, MADV_COLLAPSE = 20, 21, 25
F_SET_RW_HINT, F_SET_FILE_RW_HINT = 1036, 1038
F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW = 6, 7, 37, 38
REFUSED_ARGUMENTS: dict[str, tuple[int, tuple[int, ...]]] = {
    "madvise": (2, (MADV_COLD, MADV_PAGEOUT, MADV_COLLAPSE)),
    "fcntl": (1, (F_SET_RW_HINT, F_SET_FILE_RW_HINT, F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)),
}
"""Calls refused for some values of one argument: name -> (the argument's index, the values refused)."""
SYSCALL_NUMBERS: dict[str, dict[str, int]] = {
    "x86_64": {
        "keyctl": 250, "add_key": 248, "request_key": 249, "shmget": 29, "memfd_create": 319, "fallocate": 285,
        "msgget": 68, "semget": 64, "mq_open": 240, "memfd_secret": 447, "mincore": 27, "cachestat": 451,
        "preadv2": 327, "pwritev2": 328, "fadvise64": 221, "readahead": 187, "process_madvise": 440,
        "pidfd_open": 434, "pidfd_getfd": 438,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272, "setns": 308,
        "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsmount": 432, "fspick": 433, "fsconfig": 431, "mount_setattr": 442, "open_tree_attr": 467,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "io_setup": 206,
        "io_destroy": 207, "io_getevents": 208, "io_submit": 209, "io_cancel": 210, "io_pgetevents": 333, "bpf": 321,
        "perf_event_open": 298, "userfaultfd": 323, "open_by_handle_at": 304, "fanotify_init": 300, "clone": 56,
        "clone3": 435, "socket": 41, "socketpair": 53, "splice": 275, "tee": 276, "vmsplice": 278,
        "inotify_init1": 294, "inotify_add_watch": 254, "madvise": 28, "fcntl": 72, "statfs": 137, "fstatfs": 138,
        "ustat": 136, "timer_create": 222,
    },
    "aarch64": {
        "keyctl": 219, "add_key": 217, "request_key": 218, "shmget": 194, "memfd_create": 279, "fallocate": 47,
        "msgget": 186, "semget": 190, "mq_open": 180, "memfd_secret": 447, "mincore": 232, "cachestat": 451,
        "preadv2": 286, "pwritev2": 287, "fadvise64": 223, "readahead": 213, "process_madvise": 440,
        "pidfd_open": 434, "pidfd_getfd": 438,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "unshare": 97, "setns": 268,
        "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsmount": 432, "fspick": 433, "fsconfig": 431, "mount_setattr": 442, "open_tree_attr": 467,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "io_setup": 0,
        "io_destroy": 1, "io_submit": 2, "io_cancel": 3, "io_getevents": 4, "io_pgetevents": 292, "bpf": 280,
        "perf_event_open": 241, "userfaultfd": 282, "open_by_handle_at": 265, "fanotify_init": 262, "clone": 220,
        "clone3": 435, "socket": 198, "socketpair": 199, "splice": 76, "tee": 77, "vmsplice": 75,
        "inotify_init1": 26, "inotify_add_watch": 27, "madvise": 233, "fcntl": 25, "statfs": 43, "fstatfs": 44,
        "timer_create": 107,
    },
}  # fmt: skip
"""Each architecture's system-call numbers (the kernel's unistd tables): REFUSED's, REFUSED_ARGUMENTS', and
clone's."""
NEW_NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000
"""x86-64's x32 ABI numbers its calls from here, under the same AUDIT_ARCH."""

# Classic BPF over struct seccomp_data {int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];}.
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_IF_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_IF_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
NR_OFFSET, ARCH_OFFSET, FIRST_ARGUMENT_LOW_WORD = 0, 4, 16  # args[0]'s low 32 bits (little-endian)
ARGUMENT_SIZE = 8
ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
REFUSE = 0x00050000 | 1  # SECCOMP_RET_ERRNO with EPERM
NOT_IMPLEMENTED = 0x00050000 | 38  # SECCOMP_RET_ERRNO with ENOSYS: the C library then falls back to clone


def _instruction(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    """One ``struct sock_filter {u16 code; u8 jt; u8 jf; u32 k;}``."""
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def refused_on(machine: str) -> tuple[str, ...]:
    """The calls of REFUSED that ``machine`` has."""
    return tuple(name for name in REFUSED if name not in ABSENT.get(machine, ()))


def build_filter(machine: str) -> bytes:
    """The filter program for ``machine`` (a key of SYSCALL_NUMBERS) as bubblewrap reads it."""
    numbers = SYSCALL_NUMBERS[machine]
    program = [
        _instruction(LOAD_WORD, ARCH_OFFSET),
        _instruction(JUMP_IF_EQUAL, AUDIT_ARCH[machine], jump_true=1),
        _instruction(RETURN, KILL_PROCESS),
        _instruction(LOAD_WORD, NR_OFFSET),
    ]
    if machine == "x86_64":
        program += [_instruction(JUMP_IF_AT_LEAST, X32_SYSCALL_BIT, jump_false=1), _instruction(RETURN, KILL_PROCESS)]
    # clone3 passes its flags in memory, which a filter cannot read; clone passes them in args[0].
    program += [
        _instruction(JUMP_IF_EQUAL, numbers["clone3"], jump_false=1),
        _instruction(RETURN, NOT_IMPLEMENTED),
        _instruction(JUMP_IF_EQUAL, numbers["clone"], jump_false=4),
        _instruction(LOAD_WORD, FIRST_ARGUMENT_LOW_WORD),
        _instruction(JUMP_IF_ANY_BIT, NEW_NAMESPACE_FLAGS, jump_false=1),
        _instruction(RETURN, REFUSE),
        _instruction(RETURN, ALLOW),
    ]
    for name in refused_on(machine):
        program += [_instruction(JUMP_IF_EQUAL, numbers[name], jump_false=1), _instruction(RETURN, REFUSE)]
    for name, (argument, values) in REFUSED_ARGUMENTS.items():
        # The call's own block: load the argument's low word, refuse each value, allow the rest.
        block = [_instruction(LOAD_WORD, FIRST_ARGUMENT_LOW_WORD + ARGUMENT_SIZE * argument)]
        for value in values:
            block += [_instruction(JUMP_IF_EQUAL, value, jump_false=1), _instruction(RETURN, REFUSE)]
        block.append(_instruction(RETURN, ALLOW))
        program += [_instruction(JUMP_IF_EQUAL, numbers[name], jump_false=len(block)), *block]
    program.append(_instruction(RETURN, ALLOW))
    return b"".join(program)


def filter_for_this_machine() -> bytes | None:
    """The filter for the machine this runs on, or None where no table is known."""
    machine = platform.machine()
    return build_filter(machine) if machine in SYSCALL_NUMBERS else None
