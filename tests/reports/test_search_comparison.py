"""The comparison of searches from studies with known numbers: each study's cost from its runs' recorded seconds,
its winner's confirmed Δ against the preset, and per search the means the default is chosen by."""

import json

import pytest

from algos.campaign.sweep_confirmation import run_directory
from algos.campaign.sweeps import read_sweep
from algos.config.presets import ConfigError
from algos.trainer import run_files
from reports.search_comparison import comparison_record, favoured_search, run_seconds, write_comparison
from tests.algos.campaign.test_sweeps import write_sweep
from tests.reports.test_sweep_confirmation import CONFIRMATION


def write_run(run, rows, final=None):
    run.mkdir(parents=True)
    (run / run_files.METRICS_FILE).write_text("".join(json.dumps(row) + "\n" for row in rows))
    if final is not None:
        (run / run_files.FINAL_FILE).write_text(json.dumps(final))


def write_study(study, seconds, winner_gain):
    """A finished study of two trials (trial 1 pruned after 360 s), its plan naming trial 0, and trial 0's fresh runs:
    the preset's accuracies plus ``winner_gain``. ``seconds``: trial 0's recorded training seconds (its evaluations
    add 90)."""
    for trial, state in ((0, "COMPLETE"), (1, "PRUNED")):
        record = {"trial": trial, "state": state, "params": {"optim.lr": 1e-4}, "seed_values": [0.8], "value": 0.8}
        (study / "slots").mkdir(parents=True, exist_ok=True)
        (study / "slots" / f"slot{trial}.json").write_text(json.dumps(record))
    write_run(study / "trials" / "trial0" / "seed0", [{"step": 5, "perf/train_seconds_total": seconds - 100,
        "perf/eval_seconds": 40}, {"step": 20, "perf/train_seconds_total": seconds, "perf/eval_seconds": 50}])  # fmt: skip
    write_run(study / "trials" / "trial1" / "seed0", [{"step": 5, "perf/train_seconds_total": 360.0}])
    plan = {"seeds": [10, 11], "metric": "eval/test/accuracy_t1", "objective": "eval/validation/accuracy_t1"}
    plan["configurations"] = [{"name": "trial0", "params": {"optim.lr": 1e-4}, "tuning_mean": 0.8}]
    (study / "confirmation").mkdir(parents=True)
    (study / "confirmation" / "plan.json").write_text(json.dumps(plan))
    for seed, accuracy in zip((10, 11), (0.70, 0.74), strict=True):
        final = {"eval/test/accuracy_t1": accuracy + winner_gain, "eval/validation/accuracy_t1": 0.75}
        write_run(run_directory(study, "trial0", seed), [], final)


def test_each_search_is_its_winners_confirmed_gain_against_its_cost(tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, trials=2, confirmation=CONFIRMATION))
    results = tmp_path / "results"
    for seed, accuracy in zip((10, 11), (0.70, 0.74), strict=True):
        preset = results / "sweeps" / "tiny" / "confirmation" / "preset" / f"seed{seed}"
        write_run(preset, [], {"eval/test/accuracy_t1": accuracy})
    costs = {
        "tpe-median": (3510.0, 6750.0),
        "random-none": (1710.0, 1710.0),
    }  # with trial 1's 360 s and 90 s of evaluations
    for search, (first, second) in costs.items():
        write_study(results / "search" / "tiny" / search / "seed1", first, 0.02)
        write_study(results / "search" / "tiny" / search / "seed2", second, 0.04)
    assert run_seconds(results / "search" / "tiny" / "tpe-median" / "seed1" / "trials" / "trial0" / "seed0") == 3600.0
    record = comparison_record(spec, ["tpe/median", "random/none"], [1, 2], results)
    tpe, random = record["searches"]["tpe/median"], record["searches"]["random/none"]
    assert tpe["core_hours"] == pytest.approx([(3600 + 360) / 3600, (6840 + 360) / 3600])
    assert tpe["confirmed_delta"] == pytest.approx([0.02, 0.04]) and tpe["pruned"] == [1, 1]
    assert random["delta_per_core_hour"] == pytest.approx([0.02 / 0.6, 0.04 / 0.6])
    assert tpe["curse"] == pytest.approx([0.05, 0.05]) and record["favoured"] == "random/none"
    empty = results / "search" / "tiny" / "tpe-median" / "seed2" / "confirmation" / "plan.json"
    plan = json.loads(empty.read_text())  # as if the study had completed no trial: its winner is the preset
    empty.write_text(json.dumps({**plan, "configurations": [{"name": "preset", "params": {}, "tuning_mean": None}]}))
    found_nothing = comparison_record(spec, ["tpe/median"], [2], results)["searches"]["tpe/median"]
    assert found_nothing["confirmed_delta"] == [0.0] and found_nothing["curse"] == []
    empty.write_text(json.dumps(plan))
    written = write_comparison(spec, ["tpe/median", "random/none"], [1, 2], results)
    assert {path.name for path in written} == {"comparison.md", "comparison.html", "comparison.json"}
    text = (results / "search" / "tiny" / "comparison.md").read_text()
    assert "The measure favours random/none" in text and "| random/none | 0.60 [0.60, 0.60] (n=2) | 1.0 |" in text


def test_where_no_search_beats_the_preset_the_cheapest_is_favoured():
    summary = {
        "tpe/median": {"confirmed_delta": [-0.01, 0.004], "delta_per_core_hour": [-0.005, 0.002], "core_hours": [2, 2]},
        "random/none": {"confirmed_delta": [-0.02, 0.0], "delta_per_core_hour": [-0.02, 0.0], "core_hours": [1, 1]},
    }
    assert favoured_search(summary) == "random/none"  # both below the preset on average: the cheaper
    summary["tpe/median"]["confirmed_delta"] = [0.01, 0.004]
    assert favoured_search(summary) == "tpe/median"  # the only one that gains


def test_a_search_is_a_sampler_a_pruner_and_a_seed(tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, confirmation=CONFIRMATION))
    searched = spec.searched_by("random", "hyperband", 3)
    assert searched.sampler == {"name": "random", "seed": 3000} and searched.pruner == {"name": "hyperband"}
    studies = [spec, *(spec.searched_by("random", "median", seed) for seed in (1, 2, 3))]
    seeds = [{study.sampler.get("seed", 0) + slot for slot in range(spec.trials)} for study in studies]
    assert all(not mine & theirs for i, mine in enumerate(seeds) for theirs in seeds[i + 1 :])  # no seed shared
    assert searched.make_pruner().__class__.__name__ == "HyperbandPruner" and searched.confirmation == spec.confirmation
    with pytest.raises(ConfigError, match="a search is a sampler .* and a pruner .*; got grid/median"):
        spec.searched_by("grid", "median", 1)
