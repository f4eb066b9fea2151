"""The grader audit: the project's grader beside math-verify, disagreements listed, bad records refused."""

import json

import pytest

from eval.benchmarks.audit import main


@pytest.mark.slow
def test_references_and_worked_solutions_grade_correct_and_every_disagreement_is_listed(benchmarks_dir, tmp_path):
    for benchmark in ("math500", "gsm8k"):
        out = tmp_path / f"{benchmark}.json"
        assert main(["--benchmark", benchmark, "--data-dir", str(benchmarks_dir), "--json", str(out)]) == 0
        report = json.loads(out.read_text())
        assert report["correct_ours"] == report["responses"] and report["unanswered_ours"] == 0
        assert report["responses"] - report["correct_math_verify"] == len(report["disagreements"])
        assert all(row["ours"] and not row["math_verify"] for row in report["disagreements"])


def test_an_evaluation_is_audited_response_by_response(tmp_path, capsys):
    records = tmp_path / "records.jsonl"
    rows = [
        {"id": "a", "reference": "5", "greedy": {"response": r"\boxed{5}. Wait, that is wrong."}, "samples": []},
        {"id": "b", "reference": "2", "greedy": {"response": r"\boxed{2}"}, "samples": [{"response": "no idea"}]},
    ]
    records.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "audit.json"
    assert main(["--benchmark", "math500", "--records", str(records), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["responses"] == 3 and report["correct_ours"] == 1 and report["unanswered_ours"] == 2
    [retracted] = report["disagreements"]  # math-verify does not read the retraction
    assert retracted["id"] == "a" and not retracted["ours"] and retracted["math_verify"]
    assert retracted["our_answer"] is None and retracted["math_verify_answer"] == "5"
    assert "only math-verify credits it" in capsys.readouterr().out


def test_a_malformed_record_names_its_line(tmp_path, capsys):
    records = tmp_path / "records.jsonl"
    records.write_text('{"id": "a", "reference": "1", "greedy": {"response": "1"}, "samples": []}\n{"id": "b"}\n')
    assert main(["--benchmark", "gsm8k", "--records", str(records)]) == 2
    assert f"{records}:2: not an evaluation record" in capsys.readouterr().err


@pytest.mark.slow
def test_the_forms_audit_sets_math_verify_beside_the_careful_reader(tmp_path, capsys):
    out = tmp_path / "forms.json"
    assert main(["--forms", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["differ_from_careful_reader"]["ours"] == 0
    assert report["differ_from_careful_reader"]["math_verify"] == len(report["disagreements"]) > 0
    assert "the project's grader differs on 0 cases" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        main(["--forms", "--records", str(out)])
    assert stopped.value.code == 2
