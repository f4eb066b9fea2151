"""The documentation: the site builds with no broken link, and every command the README and docs/ show is checked
without running it: a module's options against its --help, a workflow target against the Snakefile's rules, a
script, a constraint file or an extra against the project."""

import functools
import itertools
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.requirements import require_extra

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCK = re.compile(r"```(?:bash|sh)\n(.*?)```", re.DOTALL)
TOOLS = {
    "python", "python3", "snakemake", "pip", "bash", "source", "mlflow", "lint-imports", "conda", "mkdocs", "accelerate",
    "optuna-dashboard",
}  # fmt: skip
"""Commands the documentation may show."""
SNAKEMAKE_VALUE_OPTIONS = {
    "--profile", "--configfile", "--config", "--cores", "-j", "--jobs", "--directory", "-d", "--report",
}  # fmt: skip


def shown_commands() -> list[tuple[str, list[str]]]:
    """(document, the command's words) for every command in a bash block: comments dropped, continuation lines
    joined, ``&&`` chains split, leading ``VAR=value`` assignments left out."""
    found = []
    for path in DOCUMENTS:
        for block in SHELL_BLOCK.findall(path.read_text()):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                command: list[str] = []
                for word in [*words, "&&"]:
                    if word in ("&&", ";", "||"):
                        while command and re.match(r"^[A-Z_][A-Z0-9_]*=", command[0]):
                            command.pop(0)
                        if command:
                            found.append((path.name, command))
                        command = []
                    else:
                        command.append(word)
    return found


COMMANDS = shown_commands()


@functools.cache
def help_text(module: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert run.returncode == 0, f"python -m {module} --help failed: {run.stderr[-1000:]}"
    return run.stdout


@functools.cache
def workflow_rules() -> set[str]:
    run = subprocess.run(
        ["snakemake", "--list-rules"], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr[-1000:]
    return {line.split()[0] for line in run.stdout.splitlines() if line and not line[0].isspace()}


def check_python(words: list[str]) -> None:
    if words[1:2] != ["-m"]:
        pytest.fail(f"only `python -m <module>` commands are shown: {shlex.join(words)}")
    module = words[2]
    if module in ("venv", "pip"):
        return
    text = help_text(module)
    for word in words[3:]:
        option = word.split("=", 1)[0]
        if option.startswith("--"):
            assert option in text, f"python -m {module} has no option {option} (shown: {shlex.join(words)})"


def check_snakemake(words: list[str]) -> None:
    require_extra("workflow", command="snakemake")
    targets, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in SNAKEMAKE_VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            targets.append(word)
    assert set(targets) <= workflow_rules(), f"unknown targets {set(targets) - workflow_rules()}: {shlex.join(words)}"
    for option, value in itertools.pairwise(words):
        if option == "--profile":
            assert (ROOT / value).is_dir(), f"no profile {value}"


def check_pip(words: list[str]) -> None:
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for option, value in itertools.pairwise(words):
        if option == "-c":
            assert (ROOT / value).is_file(), f"no constraint file {value}"
        if option == "-e" and "[" in value:
            wanted = set(value.split("[", 1)[1].rstrip("]").split(","))
            assert wanted <= extras, f"unknown extras {wanted - extras}"


@pytest.mark.parametrize(("document", "words"), COMMANDS, ids=[f"{d}:{' '.join(w)[:60]}" for d, w in COMMANDS])
@pytest.mark.slow  # each command run in a process of its own
def test_every_shown_command_names_what_exists(document, words):
    assert words[0] in TOOLS, f"{document}: an unexpected command {words[0]!r}"
    if words[0] in ("python", "python3"):
        check_python(words)
    elif words[0] == "snakemake":
        check_snakemake(words)
    elif words[0] == "pip":
        check_pip(words)
    elif words[0] in ("bash", "source") and not words[1].startswith(".venv"):
        assert (ROOT / words[1]).is_file(), f"{document}: no script {words[1]}"


def test_the_readme_links_to_files_that_exist():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [target for target in targets if not target.startswith(("http://", "https://"))]
    assert local and [target for target in local if not (ROOT / target).exists()] == []


def test_the_documentation_site_builds_with_no_broken_link(tmp_path):
    require_extra("docs", command="mkdocs")
    run = subprocess.run(
        ["mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
