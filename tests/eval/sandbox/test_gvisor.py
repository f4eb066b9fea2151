"""The gVisor bundle: what its sandbox sees and may do, read from the bundle itself (no ``runsc`` needed)."""

import json
import os
from pathlib import Path

import pytest

from eval.sandbox import gvisor
from eval.sandbox.view import InterpreterView

pytestmark = pytest.mark.serial  # sandboxes: their survivors, cgroups and timings are the machine's


@pytest.fixture
def view(tmp_path):
    """A view with a copy of two top-level folders and one top-level link, as on a merged-/usr system."""
    copy = tmp_path / "copy"
    (copy / "usr" / "bin").mkdir(parents=True)
    (copy / "usr" / "bin" / "python3").write_bytes(b"\x7fELF")
    (copy / "etc").mkdir()
    return InterpreterView("/usr/bin/python3", (("usr/bin", "/bin"),), str(copy))


def made(tmp_path, view, tmp_bytes, data=None):
    worker = tmp_path / "worker.py"
    worker.write_text("pass\n")
    arguments = ["/usr/bin/python3", "/sandbox/worker.py", "{}"]
    bundle = gvisor.make_bundle(str(tmp_path), view, [(str(worker), "/sandbox/worker.py")], arguments, tmp_bytes, data)
    return bundle, json.loads(Path(bundle.folder, "config.json").read_text())


def test_the_bundle_runs_its_arguments_with_two_capabilities_on_a_read_only_root(tmp_path, view):
    bundle, config = made(tmp_path, view, None)
    process = config["process"]
    assert process["args"] == ["/usr/bin/python3", "/sandbox/worker.py", "{}"]
    assert process["user"] == {"uid": 0, "gid": 0} and process["noNewPrivileges"] and process["cwd"] == "/tmp"
    assert all(process["capabilities"][kind] == ["CAP_SETUID", "CAP_SETGID"] for kind in process["capabilities"])
    assert config["root"] == {"path": "rootfs", "readonly": True}
    root = Path(bundle.folder, "rootfs")
    assert os.readlink(root / "bin") == "usr/bin"
    assert (root / "usr").is_dir() and (root / "etc").is_dir() and (root / "sandbox" / "worker.py").is_file()
    assert oct(root.stat().st_mode & 0o777) == oct(0o755) and oct(Path(bundle.folder).stat().st_mode & 0o777) == "0o755"


def test_every_host_file_is_bound_read_only_and_tmp_is_read_only_without_a_size(tmp_path, view):
    bundle, config = made(tmp_path, view, None)
    binds = {mount["destination"]: mount for mount in config["mounts"] if mount["type"] == "bind"}
    assert sorted(binds) == ["/etc", "/sandbox/worker.py", "/tmp", "/usr"]
    assert all("ro" in mount["options"] for mount in binds.values())
    assert binds["/usr"]["source"] == os.path.join(view.copy, "usr")
    assert binds["/tmp"]["source"] == os.path.join(bundle.folder, "empty") and os.listdir(binds["/tmp"]["source"]) == []
    assert bundle.binds == 4 and {"destination": "/proc", "type": "proc", "source": "proc"} in config["mounts"]


def test_tmp_is_a_file_system_of_the_given_size_and_data_is_written_then_bound(tmp_path, view):
    bundle, config = made(tmp_path, view, 2**20, {"/sandbox/rules.bin": b"\x01\x02"})
    tmp = [mount for mount in config["mounts"] if mount["destination"] == "/tmp"]
    assert tmp == [
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["size=1048576", "mode=1777"]}
    ]
    [rules] = [mount for mount in config["mounts"] if mount["destination"] == "/sandbox/rules.bin"]
    assert Path(rules["source"]).read_bytes() == b"\x01\x02" and rules["source"].startswith(bundle.folder)
    assert Path(bundle.folder, "rootfs", "sandbox", "rules.bin").is_file()


def test_the_command_has_no_network_and_keeps_its_state_in_the_bundle(tmp_path, view):
    bundle, _ = made(tmp_path, view, None)
    command = bundle.command("/usr/bin/runsc")
    assert command[:4] == ["/usr/bin/runsc", "--rootless", "--network=none", "--ignore-cgroups"]
    assert command[command.index("--root") + 1] == os.path.join(bundle.folder, "state")
    assert command[-3:] == ["--bundle", bundle.folder, os.path.basename(bundle.folder)]
    bundle.remove()
    assert not os.path.exists(bundle.folder)


def test_host_tasks_grow_with_the_programs_processes_and_the_bound_files():
    assert gvisor.Bundle("/nowhere", binds=7).host_tasks(3) == 64 + 6 * 3 + 5 * 7


def test_a_bundle_that_cannot_be_made_leaves_nothing(tmp_path, view):
    with pytest.raises(ValueError, match="mount twice at /sandbox/worker.py"):
        made(tmp_path, view, None, {"/sandbox/worker.py": b"x"})
    assert [entry.name for entry in tmp_path.iterdir() if entry.name.startswith("gvisor-")] == []
