"""Benchmark loaders: the offline files load with the documented counts, and bad input fails usefully."""

import json
import re
import sys
import types
from pathlib import Path

import pytest

from eval.benchmarks.graders import GRADERS
from eval.benchmarks.loaders import (
    BENCHMARKS,
    BENCHMARKS_DIR_ENV,
    HubSource,
    final_answer_after_hashes,
    load_benchmark,
    load_benchmark_file,
)
from eval.tasks.records import Problem

ROW_COUNTS = {"aime24": 30, "aime25": 30, "amc23": 40, "math500": 500, "gsm8k": 1319}
"""Rows per file, as listed in the offline benchmark files' README."""


def _write_rows(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _row(id_: str, answer: str = "1", **extra) -> str:
    return json.dumps({"id": id_, "problem": f"Problem {id_}?", "answer": answer, **extra})


@pytest.mark.parametrize("name", sorted(ROW_COUNTS))
def test_every_offline_benchmark_loads_with_its_documented_count(benchmarks_dir, name):
    problems = load_benchmark(name, data_dir=benchmarks_dir)
    assert len(problems) == ROW_COUNTS[name]
    assert all(isinstance(p, Problem) and p.prompt.strip() and p.answer.strip() for p in problems)
    assert len({p.id for p in problems}) == len(problems)


def test_the_environment_variable_points_at_the_files(benchmarks_dir, monkeypatch):
    monkeypatch.setenv(BENCHMARKS_DIR_ENV, str(benchmarks_dir))
    assert len(load_benchmark("aime25")) == 30


def test_records_keep_answers_solutions_and_source_fields(benchmarks_dir):
    aime = load_benchmark("aime24", data_dir=benchmarks_dir)
    assert (aime[0].id, aime[0].answer, aime[0].metadata["exam"]) == ("aime24-I-1", "204", "AIME 2024 I")
    assert aime[0].solution and "problem" not in aime[0].metadata
    math = load_benchmark("math500", data_dir=benchmarks_dir)
    assert math[0].id == "test/precalculus/807.json" and math[0].answer == r"\left( 3, \frac{\pi}{2} \right)"
    assert {"level", "subject"} <= set(math[0].metadata) and math[0].solution
    gsm = load_benchmark("gsm8k", data_dir=benchmarks_dir)
    assert (gsm[0].id, gsm[0].answer) == ("gsm8k-test-0000", "18") and gsm[0].solution.endswith("#### 18")
    amc = load_benchmark("amc23", data_dir=benchmarks_dir)
    assert all(p.answer.lstrip("-").isdigit() for p in amc) and amc[0].solution is None


def test_limit_takes_the_first_problems(benchmarks_dir):
    everything = load_benchmark("math500", data_dir=benchmarks_dir)
    assert load_benchmark("math500", data_dir=benchmarks_dir, limit=5) == everything[:5]
    assert len(load_benchmark("aime24", data_dir=benchmarks_dir, limit=1000)) == 30
    with pytest.raises(ValueError, match="limit must be a positive"):
        load_benchmark("math500", data_dir=benchmarks_dir, limit=0)


def test_registry_names_a_file_or_loader_and_a_grader_for_each_benchmark(benchmarks_dir):
    assert set(BENCHMARKS) == set(ROW_COUNTS) | {"humaneval"}
    for name, spec in BENCHMARKS.items():
        assert (spec.file is None) == (spec.loader is not None), name
        assert spec.grader in GRADERS or (name, spec.grader) == ("humaneval", "code")
        assert spec.file is None or (benchmarks_dir / spec.file).is_file()


@pytest.mark.parametrize(
    ("bad_line", "complaint"),
    [
        ('{"id": "b", "problem": "P?", ', "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"problem": "P?", "answer": "1"}', "'id' must be a non-empty string"),
        (_row("b", answer="  "), "'answer' must be a non-empty string"),
        ('{"id": "b", "problem": "", "answer": "1"}', "'problem' must be a non-empty string"),
        ('{"id": "b", "problem": 7, "answer": "1"}', "'problem' must be a non-empty string"),
        ('{"id": 3, "problem": "P?", "answer": "1"}', "'id' must be a non-empty string"),
        (_row("a"), "duplicate id 'a'"),
    ],
)
def test_malformed_rows_fail_naming_file_and_line(tmp_path, bad_line, complaint):
    path = _write_rows(tmp_path / "math500.jsonl", [_row("a"), "", bad_line, _row("c")])
    with pytest.raises(ValueError, match=re.escape(f"{path}:3: ") + ".*" + re.escape(complaint)):
        load_benchmark("math500", data_dir=tmp_path)


def test_undecodable_line_fails_naming_file_and_line(tmp_path):
    path = tmp_path / "aime24.jsonl"
    path.write_bytes(_row("a").encode() + b"\n" + b'{"id": "\xff"}\n')
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: not valid UTF-8")):
        load_benchmark("aime24", data_dir=tmp_path)


def test_an_empty_benchmark_file_is_refused_naming_it(tmp_path):
    path = _write_rows(tmp_path / "gsm8k_test.jsonl", ["", ""])
    with pytest.raises(ValueError, match=re.escape(f"{path}: holds no problems")):
        load_benchmark("gsm8k", data_dir=tmp_path)


def test_a_custom_file_loads_with_blank_lines_skipped(tmp_path):
    path = _write_rows(tmp_path / "own.jsonl", [_row("a", solution="S", level=3), "", _row("b")])
    assert load_benchmark_file(path) == [
        Problem(id="a", prompt="Problem a?", answer="1", solution="S", metadata={"level": 3}),
        Problem(id="b", prompt="Problem b?", answer="1"),
    ]


def test_unknown_name_lists_the_valid_ones():
    with pytest.raises(
        ValueError, match="unknown benchmark 'math5'; valid names: aime24, aime25, amc23, math500, gsm8k"
    ):
        load_benchmark("math5")


def test_no_folder_given_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv(BENCHMARKS_DIR_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match=rf"data_dir in code\) or set {BENCHMARKS_DIR_ENV}"):
        load_benchmark("aime24")


def test_missing_folder_or_file_names_the_path_and_the_environment_variable(tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    monkeypatch.setenv(BENCHMARKS_DIR_ENV, str(missing))
    with pytest.raises(FileNotFoundError, match=f"{re.escape(str(missing))} \\(from {BENCHMARKS_DIR_ENV}\\)"):
        load_benchmark("aime24")
    with pytest.raises(
        FileNotFoundError, match=f"{re.escape(str(tmp_path / 'gsm8k_test.jsonl'))}.*{BENCHMARKS_DIR_ENV}"
    ):
        load_benchmark("gsm8k", data_dir=tmp_path)


def _fake_datasets(monkeypatch, rows: list[dict]) -> list[tuple]:
    """Replace the `datasets` package by one whose load_dataset returns ``rows``; returns the calls made."""
    calls: list[tuple] = []

    def load_dataset(path, name=None, split=None):
        calls.append((path, name, split))
        return rows

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_hub_rows_are_mapped_to_problems(monkeypatch):
    rows = [{"question": "Q0?", "answer": "3 + 4 = <<3+4=7>>7\n#### 7"}, {"question": "Q1?", "answer": "#### 1,250"}]
    calls = _fake_datasets(monkeypatch, rows)
    problems = load_benchmark("gsm8k", hub=BENCHMARKS["gsm8k"].hub)
    assert calls == [("openai/gsm8k", "main", "test")]
    assert [(p.id, p.prompt, p.answer) for p in problems] == [
        ("gsm8k-test-0000", "Q0?", "7"),
        ("gsm8k-test-0001", "Q1?", "1250"),
    ]
    assert problems[0].solution == rows[0]["answer"] and problems[0].metadata == {}


def test_hub_ids_and_numeric_answers_become_text(monkeypatch):
    _fake_datasets(monkeypatch, [{"pid": 60, "text": "P?", "answer": 27.0, "url": "u"}])
    source = HubSource("someone/amc", split="train", id_field="pid", problem_field="text")
    [problem] = load_benchmark("amc23", hub=source, limit=1)
    assert problem == Problem(id="60", prompt="P?", answer="27", metadata={"url": "u"})


def test_malformed_hub_row_names_the_row(monkeypatch):
    _fake_datasets(monkeypatch, [{"problem": "P?", "answer": "1"}, {"problem": "P?", "answer": ""}])
    with pytest.raises(ValueError, match=r"someone/math \[test\] row 1: field 'answer'"):
        load_benchmark("math500", hub=HubSource("someone/math"))


def test_hub_without_datasets_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(ImportError, match=r"pip install datasets.*hub"):
        load_benchmark("math500", hub=BENCHMARKS["math500"].hub)


def test_humaneval_plugs_in_through_its_own_loader(monkeypatch):
    problems = [Problem(id=f"HumanEval/{i}", prompt="def f():", answer="") for i in range(3)]
    fake = types.SimpleNamespace(load_humaneval=lambda: problems)
    monkeypatch.setitem(sys.modules, "eval.benchmarks.humaneval", fake)
    assert load_benchmark("humaneval", limit=2) == problems[:2]
    with pytest.raises(ValueError, match="own loader"):
        load_benchmark("humaneval", hub=HubSource("openai/openai_humaneval"))


def test_gsm8k_answer_is_the_text_after_the_last_marks():
    assert final_answer_after_hashes("a #### b\nwork\n#### 2,125 ") == "2125"


def test_every_math_benchmark_has_a_hub_source_with_its_published_columns():
    expected = {
        "aime24": ("HuggingFaceH4/aime_2024", "train", None, "problem", "id"),
        "aime25": ("math-ai/aime25", "test", None, "problem", "id"),
        "amc23": ("math-ai/amc23", "test", None, "question", "id"),
        "math500": ("HuggingFaceH4/MATH-500", "test", None, "problem", "unique_id"),
        "gsm8k": ("openai/gsm8k", "test", "main", "question", None),
    }
    for name, columns in expected.items():
        hub = BENCHMARKS[name].hub
        assert (hub.path, hub.split, hub.config, hub.problem_field, hub.id_field) == columns, name
