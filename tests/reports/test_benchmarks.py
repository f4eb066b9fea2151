import json

from eval.benchmarks.suites import BOXED_TEMPLATE, headline_metric
from reports.analysis.scores import protocol_summary, read_score
from reports.benchmarks import HEADER, main, table_cells, write_benchmark_report


def fake_score(directory, metrics, samples=0, temperature=1.0, top_p=1.0, template=BOXED_TEMPLATE, engine="hf"):
    """What eval.run.evaluate leaves for one (model, benchmark): metrics.json and protocol.json."""
    directory.mkdir(parents=True)
    (directory / "metrics.json").write_text(json.dumps(metrics))
    protocol = {
        "protocol": {
            "samples": samples,
            "temperature": temperature,
            "top_p": top_p,
            "max_new_tokens": 64,
            "prompt_template": template,
        },
        "chat_template_applied": False,
        "engine": {"name": engine, "version": "1.0"},
        "problems": metrics["problems"],
        "seconds": {"generation": 1.0, "total": 2.5},
        "packages": {"math-verify": "0.9"},
    }
    (directory / "protocol.json").write_text(json.dumps(protocol))


AIME = {
    "problems": 8,
    "greedy_pass@1": 0.125,
    "avg@4": 0.25,
    "pass@1": 0.25,
    "pass@2": 0.4,
    "pass@4": 0.5,
    "maj@4": 0.375,
    "greedy_unanswered": 0.25,
    "samples_unanswered": 0.125,
}
GSM8K = {"problems": 8, "greedy_pass@1": 0.5}


def test_the_headline_is_avg_at_k_when_sampled_else_greedy():
    assert headline_metric(AIME) == "avg@4" and headline_metric(GSM8K) == "greedy_pass@1"


def test_protocol_summary_states_the_decoding_the_budget_the_template_and_the_engine(tmp_path):
    fake_score(tmp_path / "a", AIME, samples=4, top_p=0.7, engine="vllm")
    line = protocol_summary(read_score(tmp_path / "a").protocol)
    assert line == "greedy + k=4 at T=1, top-p 0.7; 64 new tokens; boxed prompt; 8 problems; vllm 1.0"
    fake_score(tmp_path / "g", GSM8K, template="{problem}")
    assert protocol_summary(read_score(tmp_path / "g").protocol).startswith("greedy; 64 new tokens; raw prompt")


def test_table_rows_give_every_metric_in_percent_with_its_k(tmp_path):
    fake_score(tmp_path / "base_model" / "aime24", AIME, samples=4, top_p=0.7)
    fake_score(tmp_path / "base_model" / "gsm8k", GSM8K)
    scores = {(m, b): read_score(tmp_path / m / b) for m, b in [("base_model", "aime24"), ("base_model", "gsm8k")]}
    cells = table_cells(scores)
    assert len(cells[0]) == len(HEADER)
    assert cells[0][:7] == [
        "base_model",
        "aime24",
        "12.5",
        "25.0 (avg@4)",
        "50.0 (pass@4)",
        "37.5 (maj@4)",
        "25.0; 12.5",
    ]
    assert cells[1][2:7] == ["50.0", "—", "—", "—", "—"] and cells[1][-1] == "2.5"  # no answer: not recorded


def test_the_report_is_written_from_the_score_files_alone_and_names_a_missing_one(tmp_path, capsys):
    for model in ("base_model", "dapo/seed0"):
        fake_score(tmp_path / "eval" / model / "aime24", AIME, samples=4, top_p=0.7)
    markdown, page = write_benchmark_report(tmp_path / "eval", ["base_model", "dapo/seed0"], ["aime24"], tmp_path / "r")
    text = markdown.read_text()
    assert "| dapo/seed0 | aime24 | 12.5 | 25.0 (avg@4) |" in text and '"dapo/seed0/aime24"' in text
    assert (tmp_path / "r" / "benchmarks_figures" / "00.png").is_file()
    assert "data:image/png;base64," in page.read_text()
    code = main(["--eval", str(tmp_path / "eval"), "--models", "base_model", "--benchmarks", "gsm8k"])
    assert code == 2 and "base_model/gsm8k/metrics.json" in capsys.readouterr().err
