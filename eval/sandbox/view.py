"""The files a sandbox sees: the interpreter and what it loads, in folders of the sandbox's own or of memory.

A sandbox that bound the host's ``/usr`` (or any host folder) would let its program make the kernel
remember things after it ends: every failed lookup in a host folder leaves a negative dentry in the host's
cache, which no cgroup counts where none is used and which stays when the sandbox is gone (a flood of
1.77 million in 8 s was measured), and whether a later lookup of the same name is quick tells the next
grading which names were looked up. So no host folder on a disk is bound. The files the sandbox needs are
the interpreter, the shared libraries it and its extension modules load (as ``ldd`` resolves them), the
extension modules, the dynamic loader's cache and the standard library's compiled modules (the
installation's own compiled files where fresh). They are copied once, at their own paths, into a folder
on a host file system in memory (``/dev/shm``, say), shared by this user's graders of one installation
and replaced when those files change, and that folder's top-level folders are bound read-only (a few
mounts). A file system in memory keeps no negative dentries: a failed lookup there leaves nothing. Where
none has room, each file is bound on its own in folders of the sandbox's root (itself in memory and gone
with the sandbox), the standard library as one zip (``python3X.zip`` under the prefix, first on
``sys.path``): about a hundred mounts, and a grading took 87 ms rather than 42 (measured on a 2-core
machine).

Which pages of the host's files are in the page cache is host state that outlives a sandbox: a program
could read pages to bring them in or, for files its user owns, evict them (``MADV_PAGEOUT``), and the
next program could tell from fault counts, ``/proc/self/pagemap``, first-touch times or
``/proc/self/io``. Copies in memory never leave it (unless the host swaps), and
:meth:`InterpreterView.make_resident` reads every page of every file the sandbox sees before each program
runs otherwise, so each starts with all of them in memory whatever ran before.

The standard library's test suite, IDLE, tkinter and its demos, lib2to3 and ensurepip (which need data
files or a display) and the installation's third-party packages are left out.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

LEFT_OUT = frozenset(
    {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip"}
)
"""Standard-library folders not in the sandbox's archive."""
LEFT_OUT_EXTENSIONS = re.compile(r"^(_tkinter|_test|_xxtest|xx)")
"""Extension modules left out: tkinter's (which loads the X libraries) and CPython's own test modules."""
LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)$")
"""A line of ``ldd`` naming a library it resolved (``libz.so.1 => /lib/.../libz.so.1 (0x...)``, or the loader's
``/lib64/ld-linux-x86-64.so.2 (0x...)``)."""
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64")
"""Top-level folders that are symbolic links into /usr on merged-/usr systems: the same links in the sandbox,
so that paths through them (the loader's, in every binary) resolve."""
LOADER_CACHE = "/etc/ld.so.cache"
MEMORY_FOLDERS = ("/dev/shm", "/run/shm")
"""Where the copy is made, the first that is an in-memory file system with room (after ``$XDG_RUNTIME_DIR``)."""
COPY_PREFIX = "rl-harness-sandbox-"
SPARE_BYTES = 64 * 2**20
"""Room an in-memory file system must keep beyond the copy for it to be used."""
READ_CHUNK = 2**20


class ViewError(RuntimeError):
    """The interpreter's files could not be gathered (no ``ldd``, an unreadable standard library)."""


@dataclasses.dataclass(frozen=True)
class InterpreterView:
    """The host files a sandbox sees, and how they get there.

    interpreter: the interpreter's path, the same inside the sandbox and out.
    links: ``(target, path)`` of each top-level symbolic link recreated in the sandbox.
    copy: the in-memory folder holding every file at its path under it, its top-level folders bound; None when
        there is none, and then each of ``binds`` (``(source, destination)``) is bound alone.
    sources, stdlib: with a copy, what it holds: ``(source, destination)`` of each file copied, and the standard
        library whose compiled modules it holds (see :meth:`ensure_intact`).
    """

    interpreter: str
    links: tuple[tuple[str, str], ...]
    copy: str | None
    binds: tuple[tuple[str, str], ...] = ()
    sources: tuple[tuple[str, str], ...] = ()
    stdlib: str = ""

    def ensure_intact(self) -> None:
        """Before each sandbox: the copy as this process last verified it (every entry's inode, owner, mode, size and
        change time, which only the kernel sets), else verified again against the host's files (owner, modes,
        names and every byte) and, where it no longer matches, made anew. Another process of the grader's user
        could otherwise plant or change a copy that later gradings run; none without a copy."""
        if self.copy is None or _VERIFIED.get(self.copy) == _snapshot(self.copy):
            return
        if not _content_matches(self.copy, self.sources, self.stdlib):
            shutil.rmtree(self.copy, ignore_errors=True)
            _make_copy(os.path.dirname(self.copy), self.copy, list(self.sources), self.stdlib)
            if not _content_matches(self.copy, self.sources, self.stdlib):
                raise ViewError(f"the sandbox's copy {self.copy} changes while it is made: another process writes it")
        _VERIFIED[self.copy] = _snapshot(self.copy)

    def bubblewrap_arguments(self) -> list[str]:
        """bubblewrap arguments making this view: the links, then the copy's top-level folders bound read-only or,
        without a copy, every folder on the way to a file (0755, so that an unprivileged program reaches it
        whatever the host's modes) and each file bound read-only."""
        arguments: list[str] = []
        for target, path in self.links:
            arguments += ["--symlink", target, path]
        if self.copy is not None:
            for top in sorted(os.listdir(self.copy)):
                arguments += ["--ro-bind", os.path.join(self.copy, top), f"/{top}"]
            return arguments
        folders = sorted({str(parent) for _, destination in self.binds for parent in Path(destination).parents})
        linked = {path for _, path in self.links}
        for folder in folders:
            if folder != "/" and folder not in linked:
                arguments += ["--perms", "0755", "--dir", folder]
        for source, destination in self.binds:
            arguments += ["--ro-bind", source, destination]
        return arguments

    def make_resident(self) -> None:
        """Read every page of every host file the sandbox sees, so that the next program finds them all in memory;
        nothing to do for a copy in memory on a host without swap, whose pages cannot leave it."""
        if self.copy is not None and not _host_swaps():
            return
        buffer = bytearray(READ_CHUNK)
        for path in self.seen_paths():
            with open(path, "rb", buffering=0) as file:
                while file.readinto(buffer):
                    pass

    def seen_paths(self) -> list[str]:
        """The host paths of the files the sandbox sees: the copies, or the bound files."""
        if self.copy is None:
            return sorted({source for source, _ in self.binds})
        return sorted(os.path.join(folder, name) for folder, _, names in os.walk(self.copy) for name in names)


@functools.cache
def interpreter_view() -> InterpreterView:
    """This interpreter's view (its base interpreter, under a virtual environment), gathered once per process."""
    interpreter = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    extensions = _extension_modules()
    stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
    files = [(interpreter, interpreter), *((path, path) for path in extensions)]
    files += [(os.path.realpath(path), _canonical(path)) for path in _shared_libraries([interpreter, *extensions])]
    if os.path.isfile(LOADER_CACHE):
        files.append((os.path.realpath(LOADER_CACHE), LOADER_CACHE))
    by_destination = {destination: source for source, destination in files}
    files = [(source, destination) for destination, source in sorted(by_destination.items())]
    links = tuple((os.readlink(top), top) for top in TOP_LEVEL_LINKS if os.path.islink(top))
    copy = _memory_copy(files, stdlib)
    if copy is not None:
        return InterpreterView(interpreter, links, copy, sources=tuple(files), stdlib=stdlib)
    archive = os.path.join(_archive_folder().name, "stdlib.zip")
    _write_archive(stdlib, archive)
    # The interpreter finds its prefix from the landmark os.py; the modules themselves come from the archive.
    landmark = os.path.join(stdlib, "os.py")
    binds = [*files, (archive, _archive_destination()), (landmark, landmark)]
    return InterpreterView(interpreter, links, None, tuple(binds))


def _host_swaps() -> bool:
    """Whether the host has swap in use (a header line only in /proc/swaps: none)."""
    with open("/proc/swaps") as swaps:
        return len(swaps.read().splitlines()) > 1


def _canonical(path: str) -> str:
    """``path`` with its folder's symbolic links resolved and its own name kept (a library's soname, say)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _extension_modules() -> list[str]:
    """The installation's compiled extension modules (``lib-dynload``), less those in :data:`LEFT_OUT_EXTENSIONS`."""
    folder = sysconfig.get_config_var("DESTSHARED")
    if not folder or not os.path.isdir(folder):
        return []
    folder = os.path.realpath(folder)
    return sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if name.endswith(".so") and not LEFT_OUT_EXTENSIONS.match(name)
    )


def _shared_libraries(binaries: list[str]) -> list[str]:
    """Every shared library (the dynamic loader included) that ``binaries`` load, as ``ldd`` resolves them."""
    try:
        listing = subprocess.run(["ldd", *binaries], capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ViewError(f"cannot list the interpreter's shared libraries with ldd: {error}") from error
    found = {match.group(1) for line in listing.stdout.splitlines() if (match := LDD_LINE.match(line))}
    if not found:
        raise ViewError(f"ldd named no shared library for {binaries[0]}: {listing.stderr.strip()[:300]}")
    return sorted(path for path in found if os.path.isfile(path))


def _archive_destination() -> str:
    """Where the interpreter looks for its standard library as a zip: ``<prefix>/<platlibdir>/python3X.zip``."""
    name = f"python{sys.version_info.major}{sys.version_info.minor}.zip"
    return os.path.join(os.path.realpath(sys.base_prefix), sys.platlibdir, name)


def _archived(stdlib: str) -> list[str]:
    """The standard library's top-level modules and packages that go into the archive."""
    return [
        os.path.join(stdlib, name)
        for name in sorted(os.listdir(stdlib))
        if name not in LEFT_OUT and (name.endswith(".py") or os.path.isfile(os.path.join(stdlib, name, "__init__.py")))
    ]


def _write_archive(stdlib: str, path: str) -> None:
    """The standard library's modules, compiled (the installation's own compiled files where fresh), zipped at ``path``."""
    try:
        with zipfile.PyZipFile(path, "w", optimize=-1) as archive:
            for entry in _archived(stdlib):
                archive.writepy(entry)
    except (OSError, SyntaxError, zipfile.BadZipFile) as error:
        raise ViewError(f"cannot build the sandbox's standard library from {stdlib}: {error}") from error
    os.chmod(path, 0o644)  # for the program's user, under a root grader


@functools.cache
def _archive_folder() -> tempfile.TemporaryDirectory[str]:
    """This process's folder for the archive when there is no copy, removed when the process ends."""
    return tempfile.TemporaryDirectory(prefix="sandbox-stdlib-")


def _memory_copy(files: list[tuple[str, str]], stdlib: str) -> str | None:
    """The in-memory folder holding ``files`` and the compiled standard library at their paths, made if it is not
    there yet (named by this user, the installation and a hash of everything in it; the installation's earlier
    copies are removed); None when no in-memory file system has room or the name is taken by another user."""
    key = hashlib.sha256(f"{sys.version}\0{stdlib}".encode())
    for source, destination in files:
        key.update(f"{source}\0{destination}\0".encode())
    sources = [source for source, _ in files]
    for entry in _archived(stdlib):
        for folder, _, names in os.walk(entry) if os.path.isdir(entry) else [("", [], [entry])]:
            sources += [os.path.join(folder, name) for name in sorted(names)]
    for path in sources:
        status = os.stat(path)
        key.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\0".encode())
    needed = sum(os.path.getsize(source) for source, _ in files) * 2 + SPARE_BYTES
    parent = memory_folder(needed)
    if parent is None:
        return None
    stem = f"{COPY_PREFIX}{os.geteuid()}-{hashlib.sha256(stdlib.encode()).hexdigest()[:8]}-"
    copy = os.path.join(parent, stem + key.hexdigest()[:20])
    if os.path.lexists(copy):
        return copy if _ours(copy) else None  # a name taken by another user: bind the files one by one
    _make_copy(parent, copy, files, stdlib)
    for name in os.listdir(parent):  # this installation's earlier copies, from before its files changed
        earlier = os.path.join(parent, name)
        if name.startswith(stem) and earlier != copy and _ours(earlier):
            shutil.rmtree(earlier, ignore_errors=True)
    return copy


def memory_folder(needed: int) -> str | None:
    """The first candidate folder on an in-memory file system (tmpfs) with ``needed`` bytes free."""
    mounts = {}
    with open("/proc/self/mounts") as table:
        for line in table:
            _, point, kind, *_ = line.split()
            mounts[point.replace("\\040", " ")] = kind
    candidates = [os.environ.get("XDG_RUNTIME_DIR", ""), *MEMORY_FOLDERS]
    for folder in filter(None, candidates):
        real = os.path.realpath(folder)
        point = max((p for p in mounts if real == p or real.startswith(p.rstrip("/") + "/")), key=len, default="")
        if mounts.get(point) != "tmpfs" or not os.access(real, os.W_OK | os.X_OK):
            continue
        status = os.statvfs(real)
        if status.f_bavail * status.f_frsize >= needed:
            return real
    return None


_VERIFIED: dict[str, tuple] = {}
"""Copy -> its :func:`_snapshot` when this process last found its content right."""


def _snapshot(copy: str) -> tuple:
    """Every entry under ``copy`` (and itself): path, inode, mode, owner, size, modification and change times."""
    paths = [copy]
    for folder, folders, names in os.walk(copy):
        paths += [os.path.join(folder, name) for name in (*folders, *names)]
    entries = []
    for path in sorted(paths):
        status = os.lstat(path)
        entries.append(
            (path, status.st_ino, status.st_mode, status.st_uid, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
        )
    return tuple(entries)


def _content_matches(copy: str, sources: Sequence[tuple[str, str]], stdlib: str) -> bool:
    """Whether ``copy`` holds exactly the files :func:`_make_copy` writes: each source's bytes at its destination and
    the standard library's compiled modules, as regular files and folders of ours that nobody else may write."""
    expected = {destination: source for source, destination in sources}
    with tempfile.TemporaryDirectory(prefix=f"{COPY_PREFIX}check-", dir=os.path.dirname(copy)) as scratch:
        archive_path = os.path.join(scratch, "stdlib.zip")
        _write_archive(stdlib, archive_path)
        with zipfile.ZipFile(archive_path) as archive:
            members = {os.path.join(stdlib, name): name for name in archive.namelist() if not name.endswith("/")}
            found = set()
            for folder, folders, names in os.walk(copy):
                for name in (*folders, *names):
                    path = os.path.join(folder, name)
                    status = os.lstat(path)
                    if status.st_uid != os.geteuid() or status.st_mode & 0o022:
                        return False
                    if stat.S_ISREG(status.st_mode):
                        found.add(path[len(copy) :])
                    elif not stat.S_ISDIR(status.st_mode):
                        return False
            if found != set(expected) | set(members):
                return False
            for relative in sorted(found):
                with open(copy + relative, "rb") as held:
                    content = held.read()
                if relative in expected:
                    with open(expected[relative], "rb") as original:
                        if content != original.read():
                            return False
                elif content != archive.read(members[relative]):
                    return False
    return True


def _ours(path: str) -> bool:
    """Whether ``path`` is a finished copy of this user's: a folder, not a link, owned by us, writable by nobody else."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid() and not status.st_mode & 0o022


def _make_copy(parent: str, copy: str, files: list[tuple[str, str]], stdlib: str) -> None:
    """``files`` and the archive copied under a new folder, renamed to ``copy`` once complete (another grader doing
    the same at once wins or loses the rename; either copy is whole)."""
    building = tempfile.mkdtemp(prefix=f"{COPY_PREFIX}building-", dir=parent)
    try:
        os.chmod(building, 0o755)
        for source, destination in files:
            target = building + destination
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            shutil.copyfile(source, target)
            os.chmod(target, 0o755 if os.access(source, os.X_OK) else 0o644)
        archive = os.path.join(building, "stdlib.zip")
        _write_archive(stdlib, archive)
        with zipfile.ZipFile(archive) as compiled:
            compiled.extractall(building + stdlib)
        os.remove(archive)
        for folder, _, names in os.walk(building + stdlib):
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        for folder, _, _ in os.walk(building):
            os.chmod(folder, 0o755)
        try:
            os.rename(building, copy)
        except OSError:
            if not _ours(copy):
                raise
    except OSError as error:
        raise ViewError(f"cannot copy the sandbox's files to {parent}: {error}") from error
    finally:
        shutil.rmtree(building, ignore_errors=True)
