import json

import pytest

from algos.campaign.ablations import read_spec
from reports.ablation import main, write_report
from reports.analysis.family import analyse
from reports.analysis.provenance import environment_warnings, provenance
from reports.analysis.rows import measure_rows
from reports.render.tables import HEADER, table_cells
from tests.reports.test_benchmarks import fake_score


def fake_run(directory, value, steps=3, commit="abc"):
    """A finished run as the trainer leaves it: final metrics, per-step metrics and provenance."""
    directory.mkdir(parents=True)
    (directory / "final_metrics.json").write_text(
        json.dumps({"eval/test/accuracy_t1": value, "perf/train_seconds_total": 10.0})
    )
    lines = [{"step": 0, "eval/test/accuracy_t1": value / 2}]
    lines += [
        {"step": s, "rollout/reward_mean": value * s / steps, "actor/entropy": 1.0 / s} for s in range(1, steps + 1)
    ]
    lines += [{"step": steps, "eval/test/accuracy_t1": value}]
    (directory / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (directory / "config.yaml").write_text(
        f"run:\n  steps: {steps}\n  eval_every: 1\nmodel:\n  name_or_path: {directory / 'no-base'}\n"
    )
    (directory / "run.json").write_text(
        json.dumps(
            {
                "git_commit": commit,
                "config_hash": "h",
                "hardware": "cpu",
                "version.torch": "2.13.0",
                "tracker_run_id": None,
            }
        )
    )


@pytest.fixture
def dapo_runs(tmp_path):
    """DAPO Table 1 with 3 seeds per row, each row about 0.1 above the one before, except the last row, never run.

    Row k, seed s: 0.1 k + 0.01 s + 0.002 (k s mod 3), so row 1 against row 0 differs by 0.1, 0.102, 0.104.
    """
    spec = read_spec("dapo_table1")
    for index, row in enumerate(spec.rows[:-1]):
        for seed in range(3):
            value = 0.1 * index + 0.01 * seed + 0.002 * (index * seed % 3)
            fake_run(tmp_path / "runs" / spec.name / row.id / f"seed{seed}", value)
    return tmp_path


def test_table_compares_each_row_with_the_one_before_in_the_papers_order(dapo_runs):
    spec = read_spec("dapo_table1")
    results = analyse(spec, dapo_runs / "runs", seeds=3).rows
    assert [r.row.id for r in results] == [r.id for r in spec.rows]
    assert results[0].comparison is None and results[0].estimate.mean == pytest.approx(0.01)
    second = results[1]
    assert list(second.values.values()) == pytest.approx([0.1, 0.112, 0.124]) and second.comparison.paired
    assert second.comparison.delta.mean == pytest.approx(0.102) and second.comparison.p_improvement == 1.0
    assert str(second.judgement.verdict) == "agrees"  # paper: 30 -> 36; ours up, t = 0.102 / (0.002 / sqrt 3)
    cells = table_cells(spec, results)
    assert len(cells[0]) == len(HEADER) and cells[1][:2] == ["+ Overlong Filtering", "36"]
    # Student t with 2 df: 11.2 ± 4.303 * 1.2 / sqrt 3 and 10.2 ± 4.303 * 0.2 / sqrt 3, in points.
    assert cells[1][2] == "11.2 [8.2, 14.2] (n=3)" and cells[1][3] == "+10.2 [9.7, 10.7] vs Naive GRPO"
    assert cells[1][6] == "0.25 (≥ 0.25 at this n)"  # the sign-flip check cannot pass at 3 seeds
    assert cells[-1][2:] == ["not run", "—", "—", "—", "—", "—", "—"]


def test_the_primary_comparisons_are_the_family(dapo_runs):
    analysis = analyse(read_spec("dapo_table1"), dapo_runs / "runs", seeds=3)
    judged = [r for r in analysis.rows if r.judgement and r.judgement.adjusted_p is not None]
    judged += [e for e in analysis.endpoints if e.judgement and e.judgement.adjusted_p is not None]
    # The four rows' primaries that ran; the fake runs' endpoints (secondary) are equal on every seed (no p-value).
    assert analysis.family_size == len(judged) == 4
    raw = sorted(item.comparison.p_value for item in judged)
    adjusted = sorted(item.judgement.adjusted_p for item in judged)
    assert adjusted[0] == pytest.approx(min(1.0, len(judged) * raw[0]))


def test_reports_are_written_from_the_runs_files_alone(dapo_runs):
    markdown, page = write_report("dapo_table1", dapo_runs / "runs", dapo_runs / "reports", seeds=3)
    text = markdown.read_text()
    assert text.index("Naive GRPO") < text.index("+ Clip-Higher") < text.index("+ Dynamic Sampling")
    assert "final step of every run" in text and '"training seconds (sum)": 150.0' in text
    assert '"4 evaluations over 3 steps (every 1), 256 problems each, 256 at the last step"' in text  # eval_every 1
    figures = sorted((dapo_runs / "reports" / "dapo_table1_figures").glob("*.png"))
    assert figures and all(f"dapo_table1_figures/{f.name}" in text for f in figures)
    assert text.index("![Every comparison at a glance") < text.index("| Naive GRPO |")  # the forest plot leads
    assert text.index("## Study design") < text.index("![Every comparison at a glance")  # after the design
    design = next(line for line in text.splitlines() if line.startswith("| + Overlong Filtering | eval/test"))
    # Primary up (36 after 30), 5 points; 3 seeds; α/4 over the four primaries that ran; one secondary decided.
    assert "| 5 points | 3 | 0.0125 |" in design and design.endswith("| agrees | — |")
    html = page.read_text()
    assert "data:image/png;base64," in html and "src='http" not in html and "<table>" in html


def test_missing_metric_and_unknown_spec_fail_clearly(dapo_runs, capsys):
    run = dapo_runs / "runs" / "dapo_table1" / "naive_grpo" / "seed0"
    (run / "final_metrics.json").write_text(json.dumps({"other": 1.0}))
    with pytest.raises(ValueError, match="eval/test/accuracy_t1"):
        measure_rows(read_spec("dapo_table1"), dapo_runs / "runs", seeds=3)
    assert main(["--spec", "nope", "--runs", str(dapo_runs / "runs"), "--out", str(dapo_runs / "r")]) == 2
    assert "valid specs" in capsys.readouterr().err


def test_benchmark_scores_of_the_runs_become_columns_with_their_protocol(dapo_runs):
    spec = read_spec("dapo_table1")
    first, second = spec.rows[0].id, spec.rows[1].id
    for seed, value in enumerate((0.25, 0.5, 0.75)):
        metrics = {"problems": 4, "greedy_pass@1": 0.0, "avg@4": value, "samples_unanswered": value / 5}
        fake_score(dapo_runs / "eval" / spec.name / first / f"seed{seed}" / "aime24", metrics, samples=4, top_p=0.7)
    fake_score(dapo_runs / "eval" / spec.name / second / "seed0" / "aime24", {"problems": 4, "greedy_pass@1": 1.0})
    markdown, _ = write_report(
        spec.name, dapo_runs / "runs", dapo_runs / "reports", 3, dapo_runs / "eval", ["aime24", "math500"]
    )
    text = markdown.read_text()
    assert "| aime24: mean [95% CI] (n) | math500: mean [95% CI] (n) |" in text
    naive = next(line for line in text.splitlines() if line.startswith("| Naive GRPO |"))
    # 50 ± 4.303 * 25 / sqrt 3, and the mean share of sampled responses without an answer
    assert naive.endswith("| 50.0 [−12.1, 112.1] (n=3); no answer 10.0 % | not scored |")
    assert "| 100.0 (n=1) | not scored |" in text  # the second row: one scored seed, greedy, no interval
    assert "aime24 (avg@4: greedy + k=4 at T=1, top-p 0.7;" in text and "math500 (not scored)." in text
    assert "greedy_pass@1: greedy; 64 new tokens" in text  # both protocols are listed when they differ


def test_one_seed_per_row_is_inconclusive_with_no_interval(dapo_runs):
    spec = read_spec("dapo_table1")
    cells = table_cells(spec, analyse(spec, dapo_runs / "runs", seeds=1).rows)
    assert cells[1][2] == "10.0 (n=1)" and cells[1][3] == "+10.0 vs Naive GRPO"
    assert cells[1][4:7] == ["—", "—", "—"] and cells[1][8] == "inconclusive (n = 1)"


def test_runs_from_two_environments_are_named_in_a_warning(dapo_runs):
    spec = read_spec("dapo_table1")
    environment = {
        "fingerprint": "f1",
        "cpu_model": "cpu",
        "cpu_flags": ["avx2"],
        "cpu_capability": "AVX2",
        "kernel_settings": {"ATEN_CPU_CAPABILITY": "avx2"},
        "threads": {"torch": 1},
        "python": "3.11.7",
        "packages": {"torch": "2.13.0", "transformers": "5.24.0"},
    }
    for seed, (fingerprint, transformers) in enumerate((("f1", "5.24.0"), ("f2", "5.23.0"), ("f1", "5.24.0"))):
        record = dapo_runs / "runs" / spec.name / "naive_grpo" / f"seed{seed}" / "run.json"
        packages = {"torch": "2.13.0", "transformers": transformers}
        record.write_text(
            json.dumps(
                {
                    **json.loads(record.read_text()),
                    "environment": {**environment, "fingerprint": fingerprint, "packages": packages},
                }
            )
        )
    results = measure_rows(spec, dapo_runs / "runs", seeds=3)
    (warning,) = environment_warnings(provenance(spec, results)["environments"])
    assert "the runs came from 3 environments (f1: 2 runs, f2: 1 runs, unrecorded: 12 runs)" in warning
    assert "they differ in package transformers" in warning
    # The other rows' runs recorded none: one (unknown) environment.
    assert environment_warnings(provenance(spec, results[1:])["environments"]) == []


def test_a_fixed_designs_plan_names_each_rows_seeds(tmp_path):
    spec = read_spec("dapo_table1")
    for index, row in enumerate(spec.rows[:2]):
        for seed in (3, 4, 5):
            fake_run(tmp_path / "runs" / spec.name / row.id / f"seed{seed}", 0.1 * index + 0.01 * seed)
    plan = tmp_path / "design.json"
    seeds = {row.id: [3, 4, 5] for row in spec.rows}
    plan.write_text(
        json.dumps({"pilot_seeds": None, "seeds": seeds, "summary": "Seeds from a fixed design.", "unresolved": []})
    )
    markdown, _ = write_report(spec.name, tmp_path / "runs", tmp_path / "reports", seeds=3, plan=plan)
    text = markdown.read_text()
    assert "Seeds from a fixed design." in text and "| + Overlong Filtering | 36 | 14.0 [11.5, 16.5] (n=3)" in text


def test_an_equivalence_claim_is_judged_and_drawn(tmp_path):
    spec = read_spec("gepo_staleness")
    for seed in range(3):
        fake_run(tmp_path / "runs" / spec.name / "gepo_online" / f"seed{seed}", 0.7 + 0.01 * seed)
        fake_run(tmp_path / "runs" / spec.name / "gepo_online_micro_batch" / f"seed{seed}", 0.7 + 0.011 * seed)
    markdown, _ = write_report(spec.name, tmp_path / "runs", tmp_path / "reports", seeds=3)
    text = markdown.read_text()
    # Δ = 0, +0.1, +0.2 points: inside ±5 points by both one-sided tests at α (the one primary that ran).
    line = next(row for row in text.splitlines() if row.startswith("| GEPO, on-policy, E_q over"))
    assert "equivalence within the margin" in line and "| equivalent |" in line
    assert "![Every comparison at a glance" in text
