"""The parent of one sandbox's processes on the host: it starts the sandbox's command and reaps whatever that command
leaves behind, then exits as the command did.

``runsc`` leaves processes of its own (its file server and the sandbox's kernel) to whatever reaps orphans, three a
grading. Where nothing does (a container or a job whose PID 1 is the job itself, ``timeout`` or ``unshare -f``),
they stay as zombies, fill the user's process limit, and then no sandbox starts. This process marks itself the
child subreaper of its tree (``PR_SET_CHILD_SUBREAPER``), so every orphan of the command comes to it, and waits
until none is left. It runs outside the sandbox's cgroup (the command joins it), holds none of the sandbox's
descriptors once the command has started, and ends with the command's status, or 128 + the signal that ended it.

Command line: ``python -S -E -s -B reaper.py COMMAND [ARG ...]``; standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import NoReturn

PR_SET_CHILD_SUBREAPER = 36
STATUS_NO_SUBREAPER = 125


def main(argv: list[str]) -> NoReturn:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os._exit(STATUS_NO_SUBREAPER)
    command = os.fork()
    if command == 0:
        try:
            os.execvp(argv[1], argv[1:])
        finally:
            os._exit(127)
    os.closerange(0, os.sysconf("SC_OPEN_MAX"))  # the sandbox's channel ends when the command's side closes
    status = 0
    while True:
        try:
            pid, wait_status = os.wait()
        except ChildProcessError:  # nothing left to reap
            break
        if pid == command:
            status = os.waitstatus_to_exitcode(wait_status)
    os._exit(status if status >= 0 else 128 - status)


if __name__ == "__main__":
    main(sys.argv)
