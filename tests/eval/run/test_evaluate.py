import json
import math

import pytest

from eval.benchmarks.suites import SUITES, answer_judge
from eval.run.engines import generation_steps
from eval.run.evaluate import (
    METRICS_FILE,
    PROTOCOL_FILE,
    RECORDS_FILE,
    Protocol,
    default_protocol,
    evaluate,
    grid_steps,
    main,
    render,
    response_lengths,
    sample_grid,
    throughput,
)
from eval.tasks.records import Problem, read_problems, write_problems
from eval.tasks.synthetic import extract_answer, grade


def test_render_puts_the_problem_into_the_template():
    problem = Problem(id="p", prompt="1+1?", answer="2")
    assert render("Q: {problem}\nBox it: \\boxed{}", problem).prompt == "Q: 1+1?\nBox it: \\boxed{}"


def test_sample_grid_groups_samples_by_problem():
    problems = [Problem(id=str(i), prompt=f"p{i}", answer="") for i in range(3)]
    calls = []

    def fake_generate(batch, greedy, generator, progress):
        calls.append((greedy, generator is not None))
        progress(generation_steps(len(batch), 5))
        texts = [f"{p.prompt}-{'g' if greedy else i}" for i, p in enumerate(batch)]
        return texts, [len(text) for text in texts]

    steps = []
    greedy, sampled = sample_grid(fake_generate, problems, samples=2, seed=0, progress=steps.append)
    assert sum(steps) == grid_steps(3, 2, 5) == 10  # one batch of 3 greedy, one of 6 sampled, 5 steps each
    assert greedy == [("p0-g", 4), ("p1-g", 4), ("p2-g", 4)]
    assert sampled == [[("p0-0", 4), ("p0-1", 4)], [("p1-2", 4), ("p1-3", 4)], [("p2-4", 4), ("p2-5", 4)]]
    assert calls == [(True, False), (False, True)]
    assert sample_grid(fake_generate, problems, samples=0, seed=0)[1] == [[], [], []]


def test_metrics_by_hand():
    problems = [Problem(id="a", prompt="", answer="1"), Problem(id="b", prompt="", answer="2")]
    suite = SUITES["chain"]
    greedy = ["answer 1", "answer 3"]
    sampled = [["answer 1", "answer 5", "answer 5", "answer 1"], ["answer 2", "x", "answer 7", "answer 7"]]
    records = suite.score(problems, greedy, sampled)
    assert [r["greedy"]["correct"] for r in records] == [True, False]
    assert records[1]["samples"][1] == {"response": "x", "answer": None, "correct": False}
    metrics = suite.metrics(records, samples=4)
    assert metrics["problems"] == 2 and metrics["greedy_pass@1"] == 0.5
    assert metrics["avg@4"] == pytest.approx((2 / 4 + 1 / 4) / 2)
    assert metrics["pass@1"] == pytest.approx(metrics["avg@4"])
    # pass@2 = 1 - C(n-c, 2) / C(n, 2): problem a (c=2) 1 - 1/6, problem b (c=1) 1 - 3/6
    assert metrics["pass@2"] == pytest.approx(((1 - 1 / 6) + (1 - 3 / 6)) / 2)
    assert metrics["pass@4"] == 1.0
    intervals = {f"ci95_{side}/{name}" for side in ("low", "high") for name in ("greedy_pass@1", "avg@4")}
    unanswered = {"greedy_unanswered", "samples_unanswered"}
    assert (
        set(metrics)
        == {"problems", "greedy_pass@1", "avg@4", "pass@1", "pass@2", "pass@4", "maj@4"} | intervals | unanswered
    )
    assert metrics["greedy_unanswered"] == 0.0 and metrics["samples_unanswered"] == 1 / 8  # "x" states no answer
    assert metrics["ci95_low/avg@4"] < metrics["avg@4"] < metrics["ci95_high/avg@4"]
    assert 0.0 <= metrics["maj@4"] <= 1.0


def test_response_lengths_and_throughput_by_hand():
    greedy = [("a", 3), ("b", 8)]
    sampled = [[("c", 8), ("d", 1)], [("e", 2), ("f", 8)]]
    assert response_lengths(greedy, sampled, max_new_tokens=8) == {
        "response_tokens_mean": 5.0,
        "truncated_fraction": 0.5,
    }
    assert throughput(greedy, sampled, seconds=2.0) == {"tokens_per_second": 15.0, "seconds_per_problem": 1.0}


def test_answer_judge_extracts_and_grades():
    judge = answer_judge(grade, extract_answer)
    problem = Problem(id="a", prompt="", answer="4")
    assert judge([problem, problem], ["+ 1 = 4 ; answer 4", "answer 5"]) == [("4", True), ("5", False)]


def test_protocols_are_validated_with_the_valid_choices():
    with pytest.raises(ValueError, match="valid benchmarks: chain, aime24"):
        default_protocol("aime2099")
    with pytest.raises(ValueError, match="{problem}"):
        default_protocol("math500", prompt_template="no slot")
    with pytest.raises(ValueError, match="top_p"):
        default_protocol("math500", top_p=0.0)
    aime = default_protocol("aime24")
    assert (aime.samples, aime.temperature, aime.top_p) == (32, 1.0, 0.7)
    assert isinstance(default_protocol("gsm8k", limit=3), Protocol)


def test_problem_files_round_trip_and_name_the_bad_line(tmp_path):
    problems = [Problem(id="a", prompt="x", answer="1", metadata={"k": 1}), Problem(id="b", prompt="y", answer="2")]
    write_problems(tmp_path / "p.jsonl", problems)
    assert read_problems(tmp_path / "p.jsonl") == problems
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "a", "prompt": "x", "answer": "1"}) + "\n{oops\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        read_problems(tmp_path / "bad.jsonl")


def test_scoring_the_base_writes_records_metrics_and_protocol(tiny_base, tmp_path, capsys):
    protocol = default_protocol("chain", limit=4, samples=2, max_new_tokens=8)
    metrics = evaluate(str(tiny_base), protocol, tmp_path / "chain", device="cpu")
    progress = capsys.readouterr().err  # one batch greedy, one sampled: 8 decode steps each, all told
    assert "chain: 4 problems x 3 responses, decode steps" in progress and "16/16" in progress
    records = [json.loads(line) for line in (tmp_path / "chain" / RECORDS_FILE).read_text().splitlines()]
    assert len(records) == 4 and all(len(r["samples"]) == 2 for r in records)
    assert json.loads((tmp_path / "chain" / METRICS_FILE).read_text()) == metrics
    assert metrics["greedy_pass@1"] == sum(r["greedy"]["correct"] for r in records) / 4
    assert metrics["avg@2"] == sum(s["correct"] for r in records for s in r["samples"]) / 8
    provenance = json.loads((tmp_path / "chain" / PROTOCOL_FILE).read_text())
    assert provenance["protocol"]["samples"] == 2 and provenance["grader"] == "eval.tasks.synthetic.grade"
    assert provenance["packages"]["torch"] and not math.isnan(provenance["seconds"]["total"])
    again = evaluate(str(tiny_base), protocol, tmp_path / "again", device="cpu")
    assert again == metrics  # seeded sampling


def test_command_line_fails_cleanly_and_writes_nothing(tmp_path, capsys):
    assert main(["--model", "nowhere", "--benchmark", "nope", "--out", str(tmp_path / "x")]) == 2
    assert "valid benchmarks" in capsys.readouterr().err and not (tmp_path / "x").exists()
    assert main(["--model", str(tmp_path / "missing"), "--benchmark", "chain", "--out", str(tmp_path / "y")]) == 2
    assert "no model" in capsys.readouterr().err and not (tmp_path / "y" / METRICS_FILE).exists()


def test_the_benchmark_folder_is_given_on_the_command_line_or_named_when_missing(tiny_base, tmp_path, capsys):
    command = ["--model", str(tiny_base), "--benchmark", "math500", "--limit", "1", "--max-new-tokens", "2"]
    assert main([*command, "--out", str(tmp_path / "a"), "--data-dir", str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert "--data-dir" in error and "math500.jsonl" in error and "RL_BENCHMARKS_DIR" in error
    data = tmp_path / "benchmarks"
    data.mkdir()
    (data / "math500.jsonl").write_text(json.dumps({"id": "m1", "problem": "1 + 1?", "answer": "2"}) + "\n")
    assert main([*command, "--out", str(tmp_path / "b"), "--data-dir", str(data)]) == 0
    assert json.loads((tmp_path / "b" / PROTOCOL_FILE).read_text())["problems"] == 1
