import json

import optuna
import pytest
import yaml

from algos.campaign.sweeps import available_sweeps, read_sweep, run_slot
from algos.config.presets import ConfigError, load_config
from algos.trainer import run_files
from algos.trainer.train import StopTraining, train
from reports.sweep import write_sweep_report

TINY_BUDGET = [
    "task.min_steps=1",
    "task.max_steps=3",
    "rollout.prompts_per_step=4",
    "rollout.max_new_tokens=20",
    "optim.mini_batches=2",
    "run.steps=2",
    "run.eval_every=1",
    "run.eval_problems=8",
    "run.checkpoint_every=1",
    "run.eval_splits=[validation]",
    "tracking.backend=none",
]


CONFIRMATION = {"top": 2, "seeds": 4, "first_seed": 10, "margin": "2.5 points", "budget": ["run.eval_splits=[test]"]}


def write_sweep(directory, **fields):
    body = {
        "title": "t",
        "preset": "dapo",
        "space": {
            "optim.lr": {"distribution": "log_uniform", "low": 1e-5, "high": 1e-3},
            "rollout.group_size": {"distribution": "categorical", "choices": [2, 4]},
        },
        "trials": 3,
        "seeds": 2,
        "pruner": {"name": "none"},
        "budget": TINY_BUDGET,
    }
    body.update(fields)
    (directory / "tiny.yaml").write_text(yaml.safe_dump(body))
    return directory


def test_the_default_sweep_reads_with_its_space_and_a_held_out_objective():
    assert "dapo_default" in available_sweeps()
    spec = read_sweep("dapo_default")
    assert [d.key for d in spec.space] == ["optim.lr", "policy_loss.clip_eps_high", "rollout.group_size"]
    assert spec.trials >= 12 and spec.metric == "eval/validation/accuracy_t1" and spec.direction == "maximize"
    config = spec.config({"optim.lr": 1e-4, "rollout.group_size": 16}, seed=1)
    assert config.optim.lr == 1e-4 and config.rollout.group_size == 16 and config.seed == 1
    assert config.policy_loss.clip_eps_high == 0.28 and config.run.steps == 20  # the preset, then the budget
    confirmation = spec.confirmation
    assert confirmation.metric == "eval/test/accuracy_t1" and confirmation.seed_numbers[0] >= spec.seeds
    fresh = spec.confirmation_config({"optim.lr": 1e-4}, seed=confirmation.first_seed)
    assert fresh.run.final_eval_problems == 1024 and "test" in fresh.run.eval_splits and fresh.optim.lr == 1e-4


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({"optim.lrr": {"distribution": "uniform", "low": 0, "high": 1}}, "did you mean 'optim.lr'"),
        ({"optim.lr": {"distribution": "uniform", "low": 0.1, "high": 0.01}}, r"low \(0.1\) is greater than high"),
        ({"rollout.group_size": {"distribution": "categorical", "choices": []}}, "non-empty list of 'choices'"),
        ({"optim.lr": {"distribution": "normal", "low": 0, "high": 1}}, "must be one of: log_uniform"),
        ({"optim.lr": {"distribution": "log_uniform", "low": 0, "high": 1}}, "needs low > 0"),
        (
            {"policy_loss.clip_eps_low": {"distribution": "uniform", "low": -1, "high": 0.2}},
            "allows -1, which is invalid",
        ),
        ({}, "'space' must map config keys"),
    ],
)
def test_an_invalid_search_space_fails_naming_the_file_and_key(tmp_path, space, message):
    with pytest.raises(ConfigError, match=message) as error:
        read_sweep("tiny", write_sweep(tmp_path, space=space))
    assert "tiny.yaml" in str(error.value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"objective": {"metric": "eval/test/accuracy_t1"}},
            "not eval/<split>/accuracy_<mode> of an evaluated split",
        ),
        (
            {"budget": [*TINY_BUDGET, "run.eval_modes=[greedy]"]},
            r"and mode \(greedy\)",
        ),
        ({"objective": {"direction": "up"}}, "direction 'up' is not one of"),
        ({"sampler": {"name": "grid"}}, "sampler 'grid' is not one of: tpe, random"),
        ({"trials": 0}, "'trials' must be a positive integer"),
        ({"budget": [*TINY_BUDGET, "run.eval_every=0"]}, "needs run.eval_every > 0"),
        ({"colour": 1}, "unknown key .colour."),
        ({"pruner": {"name": "wilcoxon", "p_treshold": 0.1}}, "unknown key 'p_treshold' \\(did you mean 'p_threshold'"),
        ({"pruner": {"name": "median", "startup_seeds": 2}}, "pruner median: unknown key 'startup_seeds'"),
        ({"pruner": {"name": "wilcoxon"}, "seeds": 1}, "wilcoxon pruner compares seeds"),
        ({"pruner": {"name": "asha"}}, "pruner 'asha' is not one of: median, wilcoxon, successive_halving, hyperband"),
        ({"pruner": {"name": "hyperband", "min_resourse": 2}}, "did you mean 'min_resource'"),
        ({"confirmation": {**CONFIRMATION, "seed": 3}}, "confirmation: unknown key 'seed' \\(did you mean 'seeds'"),
        ({"confirmation": {"top": 2, "seeds": 4}}, "confirmation: missing first_seed, margin"),
        ({"confirmation": {**CONFIRMATION, "first_seed": 1}}, "first_seed must be an integer of at least 2 \\(after"),
        ({"confirmation": {**CONFIRMATION, "seeds": 1}}, "seeds must be an integer of at least 2"),
        ({"confirmation": {**CONFIRMATION, "margin": 3}}, "margin: eval/test/accuracy_t1 is a share"),
        ({"confirmation": {**CONFIRMATION, "level": 5}}, "level must be a number between 0 and 1"),
        ({"confirmation": {**CONFIRMATION, "budget": []}}, "metric 'eval/test/accuracy_t1' is not .* the confirmation"),
    ],
)
def test_bad_sweep_settings_fail_before_any_trial(tmp_path, fields, message):
    with pytest.raises(ConfigError, match=message):
        read_sweep("tiny", write_sweep(tmp_path, **fields))


@pytest.mark.slow
def test_stop_training_from_the_evaluation_callback_ends_the_run(tiny_base, tmp_path):
    cfg = load_config("grpo", overrides=[*TINY_BUDGET, f"model.name_or_path={tiny_base}", "run.steps=3"])
    seen = []

    def stop_at_two(step, metrics):
        seen.append((step, metrics["eval/validation/accuracy_t1"]))
        if step == 2:
            raise StopTraining("pruned")

    with pytest.raises(StopTraining):
        train(cfg, tmp_path / "run", on_evaluation=stop_at_two)
    assert [step for step, _ in seen] == [1, 2]
    assert [row["step"] for row in run_files.read_metrics(tmp_path / "run")] == [0, 1, 2]


@pytest.mark.slow
def test_trials_report_their_objective_and_a_resumed_study_continues(tiny_base, tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path))
    out, extra = tmp_path / "study", (f"model.name_or_path={tiny_base}",)
    first = run_slot(spec, 0, out, extra=extra)
    assert first["trial"] == 0 and first["state"] == "COMPLETE" and len(first["runs"]) == 2
    finals = [json.loads((tmp_path / run / run_files.FINAL_FILE).read_text()) for run in first["runs"]]
    assert first["seed_values"] == [final["eval/validation/accuracy_t1"] for final in finals]
    assert first["value"] == pytest.approx(sum(first["seed_values"]) / 2)
    study = spec.study(None, out)
    assert study.trials[0].value == pytest.approx(first["value"]) and study.trials[0].params == first["params"]
    assert sorted(study.trials[0].intermediate_values) == [1, 2]  # the first seed's evaluations

    interrupted = study.ask()  # slot 1 asked for a trial and was killed before telling the study
    (out / "slots" / "asked1.json").write_text(json.dumps({"trial": interrupted.number}))
    resumed = run_slot(spec, 1, out, extra=extra)
    states = {t.number: t.state for t in spec.study(None, out).trials}
    assert states == {
        0: optuna.trial.TrialState.COMPLETE,
        1: optuna.trial.TrialState.FAIL,
        2: optuna.trial.TrialState.COMPLETE,
    }
    assert resumed["trial"] == 2


@pytest.mark.slow
def test_a_trial_below_the_median_is_pruned(tiny_base, tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, pruner={"name": "median", "startup_trials": 2}, seeds=1))
    out = tmp_path / "study"
    study = spec.study(None, out)
    for lr in (1e-4, 2e-4):
        study.add_trial(
            optuna.trial.create_trial(
                params={"optim.lr": lr, "rollout.group_size": 2},
                distributions={d.key: _distribution(d) for d in spec.space},
                value=1.0,
                intermediate_values={1: 1.0, 2: 1.0},
            )
        )
    record = run_slot(spec, 0, out, extra=(f"model.name_or_path={tiny_base}",))
    assert record["state"] == "PRUNED" and record["value"] is None and record["trial"] == 2
    assert [row["step"] for row in run_files.read_metrics(tmp_path / record["runs"][0])] == [0, 1]


@pytest.mark.slow
def test_a_trial_whose_seeds_fall_behind_the_best_trials_is_pruned_by_the_wilcoxon_test(tiny_base, tmp_path):
    pruner = {"name": "wilcoxon", "p_threshold": 0.5, "startup_seeds": 1}
    spec = read_sweep("tiny", write_sweep(tmp_path, pruner=pruner, seeds=4))
    assert isinstance(spec.make_pruner(), optuna.pruners.WilcoxonPruner)
    out = tmp_path / "study"
    spec.study(None, out).add_trial(
        optuna.trial.create_trial(
            params={"optim.lr": 1e-4, "rollout.group_size": 2},
            distributions={d.key: _distribution(d) for d in spec.space},
            value=1.0,
            intermediate_values={seed: 1.0 for seed in range(4)},  # every seed right on every problem
        )
    )
    record = run_slot(spec, 0, out, extra=(f"model.name_or_path={tiny_base}",))
    assert record["state"] == "PRUNED" and record["value"] is None and 1 <= len(record["runs"]) < 4
    trial = spec.study(None, out).trials[-1]
    assert sorted(trial.intermediate_values) == list(range(len(record["runs"])))  # one value a seed, by seed


def _distribution(dimension):
    if dimension.distribution == "categorical":
        return optuna.distributions.CategoricalDistribution(list(dimension.choices))
    return optuna.distributions.FloatDistribution(dimension.low, dimension.high, log=True)


@pytest.mark.slow
def test_the_search_report_shows_the_best_trials_and_tunes_nothing(tiny_base, tmp_path):
    spec = read_sweep("tiny", write_sweep(tmp_path, trials=2, seeds=1))
    out = tmp_path / "study"
    records = [run_slot(spec, slot, out, extra=(f"model.name_or_path={tiny_base}",)) for slot in range(2)]
    paths = write_sweep_report(spec, out)
    best = max(records, key=lambda record: record["value"])
    report = (out / "report.md").read_text()
    assert "2 complete, 0 pruned" in report and f"| {best['trial']} |" in report and "Optimisation history" in report
    assert {path.name for path in paths} == {"report.md", "report.html"}  # tuned values come from a confirmation


@pytest.mark.slow
def test_a_database_study_and_mlflow_runs_nested_under_the_study(tiny_base, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from algos.trainer.tracking import PARENT_TAG

    monkeypatch.chdir(tmp_path)  # artifacts of a sqlite store land in ./mlruns
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    budget = [*TINY_BUDGET[:-1], "tracking.backend=mlflow", f"tracking.uri={uri}"]
    spec = read_sweep("tiny", write_sweep(tmp_path, budget=budget, seeds=1))
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    record = run_slot(spec, 0, tmp_path / "study", storage, extra=(f"model.name_or_path={tiny_base}",))
    assert optuna.load_study(study_name="tiny", storage=storage).trials[0].value == pytest.approx(record["value"])
    client = MlflowClient(tracking_uri=uri)
    runs = {
        run.info.run_name: run
        for run in client.search_runs([client.get_experiment_by_name("sweep-tiny").experiment_id])
    }
    assert set(runs) == {"tiny", "trial0"}
    trial = runs["trial0"]
    assert trial.data.tags[PARENT_TAG] == runs["tiny"].info.run_id
    assert trial.data.tags["optuna.state"] == "COMPLETE" and trial.data.tags["optuna.trial"] == "0"
    assert float(trial.data.params["optim.lr"]) == pytest.approx(record["params"]["optim.lr"])
