"""The sandbox's view of the host: no host folder, only the interpreter's files, copied in memory or bound one by one,
the standard library and every extension module importable either way."""

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from eval.sandbox import gvisor, host
from eval.sandbox import view as view_module
from eval.sandbox.host import WORKER_DIR, WORKER_FILES, Sandbox, SandboxLimits
from eval.sandbox.view import _VERIFIED, InterpreterView, _content_matches, _make_copy, interpreter_view
from tests.eval.sandbox import channels
from tests.eval.sandbox.hostile import RIGHT

pytestmark = pytest.mark.serial  # sandboxes: their survivors, cgroups and timings are the machine's
LIMITS = SandboxLimits(timeout_s=10.0)
MOUNTS = """\
import os


def mounts():
    found = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point, kind = fields[4], fields[fields.index("-") + 1]
        found.append((point, kind, os.path.isdir(point)))
    return found
"""
"""A program listing its mounts: each mount point, its file system and whether it is a folder."""
EVERYDAY_MODULES = [
    "array", "bisect", "collections", "copy", "dataclasses", "datetime", "decimal", "enum", "fractions", "functools",
    "hashlib", "heapq", "itertools", "json", "math", "operator", "random", "re", "statistics", "string", "struct",
    "typing", "unicodedata", "zlib", "sqlite3", "ctypes", "ssl",
]  # fmt: skip


@pytest.fixture
def each_file_bound(monkeypatch):
    """The view as it is where no in-memory file system has room: every file bound on its own."""
    monkeypatch.setattr(view_module, "memory_folder", lambda needed: None)
    interpreter_view.cache_clear()
    yield interpreter_view()
    interpreter_view.cache_clear()


def assert_no_host_folder(isolation):
    if isolation.kind == "gvisor":
        assert_gvisor_serves_no_host_folder()
        return
    with Sandbox(MOUNTS, LIMITS, isolation) as sandbox:
        mounts = sandbox.call("mounts")
    # In-memory file systems keep no negative dentry, and the sandbox's own procfs (of its PID namespace) and devpts
    # instance end with it; any other mount must be a single file (or device).
    assert [m for m in mounts if m[1] not in ("tmpfs", "proc", "devpts") and m[2]] == []
    assert sum(not m[2] for m in mounts) >= 2  # the worker's files at least


def assert_gvisor_serves_no_host_folder():
    """gVisor's file server reads every mount from the host: the folders it serves (the bundle's root, the copy's
    folders) are in memory, and what else it serves are single files (the worker's at least)."""
    view = interpreter_view()
    files = [(str(WORKER_DIR / name), f"/sandbox/{name}") for name in WORKER_FILES]
    bundle = gvisor.make_bundle(host.memory_folder(0), view, files, ["/bin/true"], None)
    try:
        config = json.loads(Path(bundle.folder, "config.json").read_text())
        served = [os.path.join(bundle.folder, config["root"]["path"])]
        served += [mount["source"] for mount in config["mounts"] if mount["type"] == "bind"]
        folders = [path for path in served if os.path.isdir(path)]
        assert [path for path in folders if not _in_memory(path)] == []
        assert len(served) - len(folders) >= len(WORKER_FILES)
    finally:
        bundle.remove()


def _in_memory(path):
    kind = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True, check=True).stdout
    return kind.strip() == "tmpfs"


def assert_everything_imports(isolation):
    extensions = sorted(
        name.split(".")[0]
        for name in os.listdir(os.path.dirname(view_module._extension_modules()[0]))
        if name.endswith(".so") and not view_module.LEFT_OUT_EXTENSIONS.match(name)
    )
    program = (
        "import importlib\n"
        "def failing(names):\n"
        "    failed = []\n"
        "    for name in names:\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "        except Exception as error:\n"
        "            failed.append(f'{name}: {error}')\n"
        "    return failed\n"
    )
    with Sandbox(program, LIMITS, isolation) as sandbox:
        assert sandbox.call("failing", EVERYDAY_MODULES + extensions) == []


def test_the_sandbox_sees_no_host_folder_and_the_files_are_copied_in_memory(each_strong_isolation):
    view = interpreter_view()
    if view.copy is None:
        pytest.skip("no in-memory file system with room here: the fallback is tested below")
    assert os.stat(view.copy).st_uid == os.geteuid() and not os.stat(view.copy).st_mode & 0o022
    arguments = view.bubblewrap_arguments()
    assert arguments.count("--ro-bind") <= 5 and all(a.startswith(view.copy) for a in arguments[1::3][-3:])
    assert_no_host_folder(each_strong_isolation)


def test_the_standard_library_and_every_extension_module_import(each_strong_isolation):
    assert_everything_imports(each_strong_isolation)


def test_without_room_in_memory_each_file_is_bound_alone_and_kept_in_the_page_cache(
    each_strong_isolation, each_file_bound
):
    assert each_file_bound.copy is None
    sources = [source for source, _ in each_file_bound.binds]
    assert each_file_bound.interpreter in sources and any(s.endswith("stdlib.zip") for s in sources)
    assert not any(os.path.isdir(source) for source in sources)
    assert_no_host_folder(each_strong_isolation)
    assert_everything_imports(each_strong_isolation)
    # The bound files are the host's: every page is read in before each program, so a mark left in one fails.
    from eval.benchmarks.humaneval import load_humaneval, run_humaneval

    problem = load_humaneval()[0]
    writer, reader = channels.completions("page-cache-fault-count", RIGHT)
    run_humaneval(problem, writer, LIMITS, each_strong_isolation)
    assert not run_humaneval(problem, reader, LIMITS, each_strong_isolation).passed


def test_a_copy_is_used_only_when_it_is_ours_and_no_one_else_can_write_it(tmp_path, monkeypatch):
    monkeypatch.setattr(view_module, "memory_folder", lambda needed: str(tmp_path))
    source = tmp_path / "source"
    source.write_bytes(b"\x7fELF")
    stdlib = os.path.realpath(view_module.sysconfig.get_path("stdlib"))
    files = [(str(source), "/opt/thing/file")]
    copy = view_module._memory_copy(files, stdlib)
    assert copy is not None and (tmp_path / os.path.basename(copy) / "opt/thing/file").read_bytes() == b"\x7fELF"
    assert view_module._memory_copy(files, stdlib) == copy  # found, not made again
    assert oct(stat.S_IMODE(os.stat(copy).st_mode)) == "0o755"
    source.write_bytes(b"\x7fELF changed")  # a changed file makes another copy, which replaces the earlier one
    planted = view_module._memory_copy(files, stdlib)
    assert planted not in (None, copy) and not os.path.exists(copy)
    os.rename(planted, planted + ".moved")
    os.mkdir(planted)
    os.chmod(planted, 0o777)  # as another user could in a shared /dev/shm
    assert view_module._memory_copy(files, stdlib) is None


@pytest.fixture
def small_copy(tmp_path):
    """A copy of one tool and a two-module standard library, as the sandbox makes it, and its view."""
    tool = tmp_path / "host" / "tool"
    tool.parent.mkdir()
    tool.write_bytes(b"#!/bin/sh\necho the real tool\n")
    tool.chmod(0o755)
    stdlib = tmp_path / "lib" / "python3"
    (stdlib / "package").mkdir(parents=True)
    (stdlib / "module.py").write_text("VALUE = 1\n")
    (stdlib / "package" / "__init__.py").write_text("NAME = 'package'\n")
    memory = tmp_path / "memory"
    memory.mkdir()
    sources = ((str(tool), "/opt/tools/tool"),)
    copy = str(memory / "copy")
    _make_copy(str(memory), copy, list(sources), str(stdlib))
    return InterpreterView("/opt/tools/tool", (), copy, sources=sources, stdlib=str(stdlib)), tool


def test_an_untouched_copy_is_used_as_it_is(small_copy):
    view, _ = small_copy
    view.ensure_intact()
    inode = os.stat(view.copy + "/opt/tools/tool").st_ino
    view.ensure_intact()
    assert os.stat(view.copy + "/opt/tools/tool").st_ino == inode


@pytest.mark.parametrize("change", ["same-size-content", "extra-file", "group-writable", "replaced-module"])
def test_a_copy_changed_by_another_process_is_made_anew_before_its_next_use(small_copy, change):
    """Another process of the grader's user rewrites the copy between two gradings (even with its times put back, or
    before this process first used it): the next use finds it changed, checks every byte and makes it anew."""
    view, tool = small_copy
    view.ensure_intact()
    planted = view.copy + "/opt/tools/tool"
    status = os.stat(planted)
    if change == "same-size-content":
        with open(planted, "r+b") as file:
            file.write(b"#!/bin/sh\necho the evil tool\n")
        os.utime(planted, ns=(status.st_atime_ns, status.st_mtime_ns))  # the times a user can set, put back
    elif change == "extra-file":
        Path(view.copy, "opt", "tools", "sitecustomize.py").write_text("import os\n")
    elif change == "group-writable":
        os.chmod(planted, 0o775)
    else:
        _VERIFIED.clear()  # as in a grader that starts after the copy was planted
        module = next(Path(view.copy).rglob("module*.pyc"))
        module.write_bytes(module.read_bytes()[:-1] + b"\0")
    view.ensure_intact()
    assert Path(planted).read_bytes() == tool.read_bytes()
    assert not Path(view.copy, "opt", "tools", "sitecustomize.py").exists()
    assert not os.stat(planted).st_mode & 0o022
    assert _content_matches(view.copy, view.sources, view.stdlib)
