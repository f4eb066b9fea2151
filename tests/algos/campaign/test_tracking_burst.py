"""The burst check counts what a store kept against what each run wrote to its files, and notices what is missing.
Its run against a tracking server on PostgreSQL is in tests/test_shared_stores.py."""

import json

import pytest

from algos.campaign.tracking_burst import _same_param, _shown, count_logged, main

TASK = ["task.min_steps=1", "task.max_steps=3"]


@pytest.mark.slow
def test_two_jobs_on_a_sqlite_store_are_counted_whole_and_a_missing_value_is_noticed(tiny_base, tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["--uri", uri, "--jobs", "2", "--model", str(tiny_base), "--out", str(tmp_path / "burst"), *TASK]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["failed_jobs"] == {} and report["lost"] == 0
    assert report["runs"] == report["finished"] == {"expected": 2, "logged": 2}
    rows = [json.loads(line) for line in (tmp_path / "burst/job0/metrics.jsonl").read_text().splitlines()]
    assert report["metric_values"]["expected"] == 2 * sum(len(row) - 1 for row in rows)  # both runs' every value
    assert report["artifacts"] == {"expected": 6, "logged": 6}

    with open(tmp_path / "burst/job0/metrics.jsonl", "a") as metrics:  # a value the store never received
        metrics.write(json.dumps({"step": 9, "rollout/accuracy": 0.5}) + "\n")
    runs = [tmp_path / "burst/job0", tmp_path / "burst/job1", tmp_path / "burst/job2"]  # job2 never ran
    counts = count_logged(uri, report["experiment"], runs)
    assert counts["metric_values"]["expected"] - counts["metric_values"]["logged"] == 1
    assert counts["runs"] == {"expected": 3, "logged": 2}


def test_a_logged_tuple_is_the_config_files_list_and_passwords_are_hidden():
    assert _same_param("('validation', 'test')", "['validation', 'test']")
    assert _same_param("1e-06", "1e-06") and _same_param("grpo", "grpo") and _same_param("None", "None")
    assert not _same_param(None, "1") and not _same_param("0.2", "0.28")
    assert _shown("postgresql://user:secret@db:5433/mlflow") == "postgresql://user:***@db:5433/mlflow"
    assert _shown("http://host:5000") == "http://host:5000"
