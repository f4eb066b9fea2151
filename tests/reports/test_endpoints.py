"""The endpoint and diagnostics tables of an ablation report, from fake runs with known metrics."""

import dataclasses
import json
import subprocess

import pytest
import yaml

from algos.campaign.ablations import read_spec
from reports.ablation import write_report
from reports.analysis import endpoints
from reports.analysis.diagnostics import row_diagnostics, run_warnings
from reports.analysis.family import judged
from reports.analysis.provenance import declaration_warnings, spec_file_state
from reports.analysis.runs import load_run
from reports.render.tables import diagnostic_cells, endpoint_cells


def fake_run(directory, lines, steps=30):
    """A run directory with the given metrics.jsonl lines and a config of ``steps`` steps."""
    directory.mkdir(parents=True)
    (directory / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (directory / "config.yaml").write_text(yaml.safe_dump({"run": {"steps": steps}}))
    (directory / "final_metrics.json").write_text(json.dumps({"eval/test/accuracy_t1": 0.5}))


def entropy_lines(level, steps=30, short_at=()):
    lines = [{"step": 0, "eval/test/accuracy_t1": 0.4}]
    for step in range(1, steps + 1):
        lines.append(
            {
                "step": step,
                "actor/entropy": level + 0.01 * step,
                "actor/clip_frac_high": 0.02,
                "rollout/truncated_frac": 0.1,
                "rollout/short_batch": 1.0 if step in short_at else 0.0,
            }
        )
    return lines


@pytest.fixture
def runs(tmp_path):
    """DAPO Table 1's overlong-filtering and clip-higher rows, 3 seeds each, at half length (30 of 60 steps)."""
    spec = read_spec("dapo_table1")
    for seed in range(3):
        fake_run(tmp_path / "overlong_filtering" / f"seed{seed}", entropy_lines(1.0 + 0.01 * seed))
        fake_run(
            tmp_path / "clip_higher" / f"seed{seed}",
            entropy_lines(1.5 + 0.02 * seed, short_at=(3,) if seed == 1 else ()),
        )
    runs_of = {row.id: [load_run(run) for run in sorted((tmp_path / row.id).glob("seed*"))] for row in spec.rows}
    return spec, runs_of


def test_window_mean_hand_values():
    history = [{"step": 0, "m": 9.0}, {"step": 1, "m": 1.0}, {"step": 2}, {"step": 3, "m": 3.0}, {"step": 3, "m": 5.0}]
    assert endpoints.window_mean(history, "m", (1, 3)) == pytest.approx(3.0)  # steps 1 and 3 (its last line)
    assert endpoints.window_mean(history, "m", (4, 6)) is None


def test_endpoints_are_measured_on_scaled_windows_and_compared_by_seed(runs):
    spec, runs_of = runs
    spec = dataclasses.replace(spec, design=dataclasses.replace(spec.design, secondary="separate"))
    _, measured = judged(spec, [], endpoints.measure(spec, runs_of, {row.id: 60 for row in spec.rows}), "holm")
    entropy = next(r for r in measured if r.row.id == "clip_higher" and r.endpoint.metric == "actor/entropy")
    assert entropy.window == (15, 30)  # declared [30, 60] of 60 steps, the runs made 30
    mean_step = sum(range(15, 31)) / 16
    assert entropy.values == pytest.approx({s: 1.5 + 0.02 * s + 0.01 * mean_step for s in range(3)})
    assert entropy.comparison.delta.mean == pytest.approx(0.5 + 0.01)  # paired: seeds differ by 0.5 + 0.01 s
    assert str(entropy.judgement.verdict) == "agrees"  # expected up; differences 0.5, 0.51, 0.52
    clipped = next(r for r in measured if r.row.id == "clip_higher" and r.endpoint.metric == "actor/clip_frac_high")
    assert clipped.comparison.delta.mean == 0 and clipped.comparison.p_value is None
    assert str(clipped.judgement.verdict) == "inconclusive"
    cells = endpoint_cells(spec, measured)
    row = next(c for c in cells if c[0] == "+ Clip-Higher" and c[1].startswith("actor/entropy"))
    assert row[1] == "actor/entropy (15–30)" and row[3].startswith("+0.51 [0.4") and row[8:10] == ["up", "agrees"]
    clip_row = next(c for c in cells if c[0] == "+ Clip-Higher" and c[1].startswith("actor/clip_frac_high"))
    assert clip_row[9] == "inconclusive (no spread)"
    assert any(c[2] == "no data" for c in cells)  # rows never run


def test_diagnostics_and_warnings(runs):
    spec, runs_of = runs
    cells = {c[0]: c for c in diagnostic_cells(row_diagnostics(spec, runs_of))}
    assert cells["+ Clip-Higher"][1] == "2" and cells["+ Clip-Higher"][4] == "10"  # up-clip %, truncated %
    assert cells["+ Clip-Higher"][7] == "0.333" and cells["Naive GRPO"][1] == "—"  # short steps: mean over seeds
    warnings = run_warnings(spec, runs_of)
    assert warnings == [
        "+ Clip-Higher, seed 1: dynamic sampling reached its round cap and trained on a short batch at steps 3"
    ]


def test_non_finite_values_are_named(tmp_path):
    spec = read_spec("dapo_table1")
    fake_run(tmp_path / "naive_grpo" / "seed0", [{"step": 1, "critic/explained_variance": float("-inf")}])
    warnings = run_warnings(spec, {"naive_grpo": [load_run(tmp_path / "naive_grpo" / "seed0")]})
    assert warnings == ["Naive GRPO, seed 0: non-finite values logged for critic/explained_variance"]


def test_the_report_states_the_spec_hash_and_the_endpoint_table(runs, tmp_path):
    spec, runs_of = runs
    runs_dir = tmp_path / "campaign"
    for row_id, row_runs in runs_of.items():
        for run in row_runs:
            target = runs_dir / spec.name / row_id / run.directory.name
            target.parent.mkdir(parents=True, exist_ok=True)
            run.directory.rename(target)
    markdown, _ = write_report(spec.name, runs_dir, tmp_path / "reports", seeds=3)
    text = markdown.read_text()
    digest, _ = spec_file_state(spec.path)
    assert f"SHA-256 {digest}" in text and "## Endpoints declared in the spec" in text
    assert "## Diagnostics per row" in text and "**Warning:** + Clip-Higher, seed 1: dynamic sampling" in text
    assert "## Endpoints over training" in text


def test_an_edited_spec_is_flagged(tmp_path):
    import subprocess

    spec_file = tmp_path / "mine.yaml"
    spec_file.write_text("a: 1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "mine.yaml"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "spec"], cwd=tmp_path, check=True
    )
    assert spec_file_state(spec_file)[1] is None
    spec_file.write_text("a: 2\n")
    digest, warning = spec_file_state(spec_file)
    assert len(digest) == 16 and "mine.yaml has uncommitted changes" in warning


def test_declarations_changed_after_the_runs_are_named(tmp_path):
    spec_file = tmp_path / "mine.yaml"
    spec_file.write_text("design: {smallest_effect: 5 points, secondary: gated}\nrows: [{id: a, paper: 1}]\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "mine.yaml"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "spec"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    spec_file.write_text(spec_file.read_text() + "title: a new title changes no verdict\n")
    assert declaration_warnings(spec_file, [commit, "unknown"]) == []
    spec_file.write_text(spec_file.read_text().replace("5 points", "3 points"))
    (warning,) = declaration_warnings(spec_file, [commit])
    assert f"at the runs' commit {commit[:10]}" in warning and "made after the runs existed" in warning
    assert "could not read mine.yaml" in declaration_warnings(spec_file, ["0" * 40])[0]
