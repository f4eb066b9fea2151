"""A group-sequential campaign read from its runs: decisions look by look, the look file the workflow reads, and the
report that shows where each primary stopped."""

import json

import numpy as np
import pytest

from algos.campaign.ablations import read_spec
from reports.ablation import write_report
from reports.analysis.sequential import sequential_state
from reports.sequential_look import main as look_main
from reports.statistics.comparisons import Direction
from tests.reports.test_ablation import fake_run

FIRST = 15
CLEAR, LEVEL_OFF, NOISY = [0.10, 0.101, 0.099, 0.1], [0.001, -0.001, 0.0, 0.0005], [0.08, -0.07, 0.05, -0.04]
"""Per-seed differences of the first look: a clear rise, no change, and a spread too wide to call."""


def plan_record():
    """A plan over DAPO Table 1's first four rows: three primaries, each with looks at 4 and 8 seeds."""
    rows = ["naive_grpo", "overlong_filtering", "clip_higher", "soft_overlong_punishment"]
    comparisons = [
        {"row": mine, "compared_with": theirs, "quantity": "final", "expected": 1.0, "margin": 0.05, "looks": [4, 8]}
        for theirs, mine in zip(rows, rows[1:], strict=False)
    ]
    return {
        "spec": "dapo_table1",
        "design": "sequential",
        "spending": "pocock",
        "looks": [4, 8],
        "level": 0.01,
        "first_seed": FIRST,
        "comparisons": comparisons,
    }


def write_seeds(runs, seeds, differences):
    """Runs of the four rows at ``seeds``: each row its compared row plus that comparison's difference per seed."""
    spec = read_spec("dapo_table1")
    rows = [row.id for row in spec.rows[:4]]
    for position, seed in enumerate(seeds):
        value = 0.5 + 0.01 * position
        fake_run(runs / spec.name / rows[0] / f"seed{seed}", value)
        for row, steps in zip(rows[1:], differences, strict=True):
            value += steps[position]
            fake_run(runs / spec.name / row / f"seed{seed}", value)


@pytest.fixture
def first_look(tmp_path):
    runs = tmp_path / "runs"
    write_seeds(runs, range(FIRST, FIRST + 4), [CLEAR, LEVEL_OFF, NOISY])
    (tmp_path / "plan.json").write_text(json.dumps(plan_record()))
    return tmp_path


def test_each_primary_stops_at_the_first_look_that_decides_it(first_look):
    spec = read_spec("dapo_table1")
    state = sequential_state(spec, plan_record(), first_look / "runs")
    verdicts = [None if s.result is None else s.result.verdict for s in state.comparisons]
    assert verdicts == [Direction.AGREES, Direction.EQUIVALENT, None]
    assert state.looks_done == 1 and not state.finished
    assert state.next_seeds == {"soft_overlong_punishment": 8, "clip_higher": 8}  # only the open comparison's rows
    write_seeds(first_look / "runs", range(FIRST + 4, FIRST + 8), [CLEAR, LEVEL_OFF, [0.0, 0.01, -0.01, 0.0]])
    state = sequential_state(spec, plan_record(), first_look / "runs")
    last = state.comparisons[2].result
    assert state.finished and (last.verdict, last.seeds, last.look) == (Direction.INCONCLUSIVE, 8, 1)
    assert state.seeds_read() == {
        "naive_grpo": 4,
        "overlong_filtering": 4,
        "clip_higher": 8,
        "soft_overlong_punishment": 8,
    }


def test_the_look_file_names_the_next_seeds_and_is_the_same_when_judged_again(first_look, capsys):
    out = first_look / "look0.json"
    arguments = ["--spec", "dapo_table1", "--runs", str(first_look / "runs"), "--plan", str(first_look / "plan.json")]
    assert look_main([*arguments, "--look", "0", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["next_seeds"] == {"soft_overlong_punishment": list(range(15, 23)), "clip_higher": list(range(15, 23))}
    assert [c["verdict"] for c in record["comparisons"]] == ["agrees", "equivalent", None]
    first = out.read_bytes()
    assert look_main([*arguments, "--look", "0", "--out", str(out)]) == 0 and out.read_bytes() == first  # a rerun
    assert look_main([*arguments, "--look", "1", "--out", str(first_look / "look1.json")]) == 2
    assert "look 1 of dapo_table1 needs runs not finished" in capsys.readouterr().err


def test_the_report_shows_where_each_primary_stopped_and_what_would_decide_the_rest(first_look):
    write_seeds(first_look / "runs", range(FIRST + 4, FIRST + 8), [CLEAR, LEVEL_OFF, [0.0, 0.01, -0.01, 0.0]])
    markdown, _ = write_report(
        "dapo_table1", first_look / "runs", first_look / "reports", 3, plan=first_look / "plan.json"
    )
    text = markdown.read_text()
    assert "agrees (look 1 of 2, n = 4)" in text
    assert "equivalent within ±5 points (look 1 of 2, n = 4)" in text
    assert "undecided at its last look (look 2 of 2, n = 8)" in text and "seeds per row |" in text
    assert "A group-sequential design (pocock spending" in text and "3 of 3 primaries stopped" in text


GREY = [0.025 + 0.02 * (1 if seed % 2 == 0 else -1) for seed in range(12)]
"""Per-seed differences halfway to the margin at an sd of 0.021: too close to both 0 and ±5 points for any look of a
design spent to 16 seeds, and at 12 seeds as many as that spread asks for."""


def resized_plan():
    """plan_record's three primaries under maxima re-sized from their spread: looks to a cap of 16, maxima from 8."""
    record = plan_record()
    for comparison in record["comparisons"]:
        comparison.update(looks=[4, 8, 12, 16], maximum=8)
    return {**record, "looks": [4, 8, 12, 16], "maxima": "variance", "power": 0.95, "assurance": 0.8}


def test_a_resized_maximum_stops_a_primary_undecided_once_its_spread_has_its_seeds(tmp_path, capsys):
    runs, plan = tmp_path / "runs", tmp_path / "plan.json"
    write_seeds(runs, range(FIRST, FIRST + 12), [CLEAR * 3, LEVEL_OFF * 3, GREY])
    plan.write_text(json.dumps(resized_plan()))
    state = sequential_state(read_spec("dapo_table1"), resized_plan(), runs)
    grey = state.comparisons[2]
    assert [s.result.verdict for s in state.comparisons] == [
        Direction.AGREES,
        Direction.EQUIVALENT,
        Direction.INCONCLUSIVE,
    ]
    assert (grey.result.seeds, grey.result.look, grey.maximum) == (12, 2, 12) and state.finished
    assert [r["maximum_after"] for r in grey.resizings] == [16, 12, 12]  # the cap, then what the spread asks
    assert [r["maximum_before"] for r in grey.resizings] == [8, 16, 12] and "stops undecided" in grey.resizings[-1][
        "why"
    ]
    assert grey.resizings[-1]["sd_bound"] > grey.resizings[-1]["sd"] == pytest.approx(np.std(GREY, ddof=1))
    out = tmp_path / "look2.json"
    arguments = ["--spec", "dapo_table1", "--runs", str(runs), "--plan", str(plan)]
    assert look_main([*arguments, "--look", "2", "--out", str(out)]) == 0
    recorded = json.loads(out.read_text())["comparisons"][2]
    assert recorded["verdict"] == "inconclusive" and recorded["maximum"] == 12 and len(recorded["resizings"]) == 3
    markdown, _ = write_report("dapo_table1", runs, tmp_path / "reports", 3, plan=plan)
    text = markdown.read_text()
    assert "undecided at its last look (look 3 of 3, n = 12)" in text and "agrees (look 1 of 2, n = 4)" in text
    assert "each primary's maximum re-sized at every look from the spread of its seeds" in text
