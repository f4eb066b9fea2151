"""Finished runs are loaded once: a whole ablation report parses each file of each run a single time."""

import collections
import pathlib

import pytest

from reports.ablation import write_report
from reports.analysis.runs import finished_runs, load_run
from tests.reports.test_ablation import dapo_runs, fake_run  # noqa: F401 (dapo_runs is a fixture)

RUN_FILES = ("metrics.jsonl", "config.yaml", "final_metrics.json", "run.json")


def test_a_report_reads_every_file_of_every_run_once(dapo_runs, monkeypatch):  # noqa: F811
    reads = collections.Counter()
    read_text = pathlib.Path.read_text

    def counted(path, *args, **kwargs):
        reads[path.name] += 1
        return read_text(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "read_text", counted)
    write_report("dapo_table1", dapo_runs / "runs", dapo_runs / "reports", seeds=3)
    runs = len(list((dapo_runs / "runs").glob("*/*/seed*")))
    assert runs == 15 and {name: reads[name] for name in RUN_FILES} == dict.fromkeys(RUN_FILES, runs)


def test_a_run_is_its_files_and_unfinished_seeds_are_left_out(tmp_path):
    fake_run(tmp_path / "dapo_table1" / "naive_grpo" / "seed1", 0.5, steps=3)
    run = load_run(tmp_path / "dapo_table1" / "naive_grpo" / "seed1")
    assert run.seed == 1 and run.steps == 3 and run.final["eval/test/accuracy_t1"] == 0.5
    assert run.history[0] == {"step": 0, "eval/test/accuracy_t1": 0.25} and run.record["git_commit"] == "abc"
    assert [r.seed for r in finished_runs(tmp_path, "dapo_table1", "naive_grpo", seeds=3)] == [1]


def test_a_run_without_its_config_is_named(tmp_path):
    fake_run(tmp_path / "seed0", 0.5)
    (tmp_path / "seed0" / "config.yaml").unlink()
    with pytest.raises(FileNotFoundError, match="seed0/config.yaml"):
        load_run(tmp_path / "seed0")
