import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from algos.config.presets import available_presets, load_config
from algos.engine.checkpoint import latest_checkpoint
from algos.trainer import run_files
from algos.trainer.metrics import METRICS
from algos.trainer.tracking import NullTracker
from algos.trainer.train import NonFiniteTrainingError, main, train
from eval.tasks.checked_chain import CheckedChainTask
from eval.tasks.records import Problem
from eval.tasks.tokenizer import build_tokenizer

PROJECT = Path(__file__).resolve().parents[3]

MONITORED = {
    "rollout/reward_mean",
    "rollout/reward_std",
    "rollout/accuracy",
    "rollout/response_length_mean",
    "rollout/response_length_max",
    "rollout/truncated_frac",
    "rollout/zero_variance_groups_filtered_frac",
    "rollout/generation_rounds",
    "actor/entropy",
    "actor/clip_frac_low",
    "actor/clip_frac_high",
    "actor/approx_kl_old",
    "actor/grad_norm",
    "actor/lr",
    "perf/gen_tokens_per_s",
    "perf/train_tokens_per_s",
    # the mechanism metrics the papers argue with
    "rollout/group_length_std",
    "rollout/repetition_frac",
    "rollout/all_correct_groups_frac",
    "rollout/all_wrong_groups_frac",
    "rollout/samples_generated_total",
    "rollout/short_batch",
    "actor/approx_kl_old_max",
    "actor/ratio_mean",
    "actor/ratio_max",
    "actor/ratio_var",
}
"""ALGORITHMS.md §4 and the mechanism metrics: what every run logs (KL to π_ref and critic metrics where those exist)."""


@pytest.fixture(autouse=True)
def float32():
    torch.set_default_dtype(torch.float32)


def tiny_overrides(base: Path, **extra) -> list[str]:
    settings = {
        "model.name_or_path": str(base),
        "task.min_steps": 1,
        "task.max_steps": 3,
        "rollout.prompts_per_step": 4,
        "rollout.group_size": 4,
        "rollout.max_new_tokens": 20,
        "optim.mini_batches": 2,
        "run.steps": 3,
        "run.eval_every": 2,
        "run.eval_problems": 8,
        "run.checkpoint_every": 1,
        "tracking.backend": "none",
        **extra,
    }
    return [f"{key}={value}" for key, value in settings.items()]


def comparable(rows):
    """Metrics that must replay exactly (timings and memory naturally differ)."""
    return [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in rows]


def await_checkpoint(out: Path, process, step: int = 2, seconds: float = 120) -> None:
    """Wait until ``out`` holds a checkpoint of ``step`` or later, ``process`` ends, or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        checkpoint = latest_checkpoint(out)
        if checkpoint is not None and checkpoint.state()["step"] >= step:
            return
        time.sleep(0.02)


@pytest.mark.parametrize("preset", [p for p in available_presets() if p != "reinforce_pp_baseline"])
@pytest.mark.slow
def test_every_preset_trains_and_logs_the_monitoring_metrics(preset, tiny_base, tmp_path):
    extra = {"rollout.prompts_per_step": 8} if preset == "ppo" else {}
    cfg = load_config(preset, overrides=tiny_overrides(tiny_base, **extra) + ["run.steps=2"])
    if cfg.critic.pretrain_steps:
        cfg = load_config(
            preset, overrides=tiny_overrides(tiny_base, **extra) + ["run.steps=2", "critic.pretrain_steps=2"]
        )
    result = train(cfg, tmp_path, preset=preset)
    rows = run_files.read_metrics(tmp_path)
    assert [row["step"] for row in rows] == [0, 1, 2]
    logged = set(rows[1]) | set(rows[2])
    expected = set(MONITORED)
    if cfg.rollout.group_size == 1:
        expected -= {"rollout/group_length_std", "rollout/all_correct_groups_frac", "rollout/all_wrong_groups_frac"}
    if cfg.kl.coef > 0:
        expected.add("actor/kl_ref")
    if cfg.critic.enabled:
        expected |= {"critic/value_loss", "critic/value_error", "critic/value_bias", "critic/grad_norm"}
        assert {"critic/value_error", "critic/value_bias"} <= set(rows[0])  # the critic RL starts from
    assert expected <= logged
    assert all(math.isfinite(v) for row in rows for v in row.values())
    assert {key for row in rows for key in row} - {"step"} <= set(METRICS)  # every key is documented
    assert {"eval/test/accuracy_greedy", "base/eval/test/accuracy_t1"} <= set(result.metrics)
    assert (result.checkpoint / "model.safetensors").is_file()


@pytest.mark.slow
def test_same_config_and_seed_give_identical_metrics(tiny_base, tmp_path):
    cfg = load_config("dapo", overrides=tiny_overrides(tiny_base))
    train(cfg, tmp_path / "a")
    train(cfg, tmp_path / "b")
    first, second = (comparable(run_files.read_metrics(tmp_path / name)) for name in "ab")
    assert first == second and len(first) == 4
    changed = load_config("dapo", overrides=tiny_overrides(tiny_base, seed=1))
    train(changed, tmp_path / "c")
    assert comparable(run_files.read_metrics(tmp_path / "c")) != first


def test_the_last_evaluation_scores_the_final_held_out_sets(tiny_base, tmp_path, monkeypatch):
    import algos.trainer.train as train_module

    scored = []

    def counting(policy, tokenizer, problems, *args, **kwargs):
        scored.append(len(problems))
        return accuracy(policy, tokenizer, problems, *args, **kwargs)

    accuracy = train_module.accuracy
    monkeypatch.setattr(train_module, "accuracy", counting)
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base, **{"run.final_eval_problems": 24}))
    train(cfg, tmp_path)
    assert scored == [8] * 8 + [24] * 4  # steps 0 and 2: two splits, greedy and T = 1; then step 3


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_final_metrics(tiny_base, tmp_path):
    # Both runs are commands, so both pin their kernels before torch loads (algos.kernels); this
    # process may have loaded torch first.
    overrides = tiny_overrides(tiny_base, **{"run.steps": 6})
    straight = [sys.executable, "-m", "algos.trainer.train", "--preset", "grpo", "--out", str(tmp_path / "straight")]
    assert subprocess.run([*straight, *overrides], cwd=PROJECT, capture_output=True).returncode == 0

    resumed = tmp_path / "resumed"
    command = [sys.executable, "-m", "algos.trainer.train", "--preset", "grpo", "--out", str(resumed), *overrides]
    process = subprocess.Popen(command, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    await_checkpoint(resumed, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = latest_checkpoint(resumed).state()["step"]
    assert 2 <= killed_at < 6, "the run must be killed part-way"

    assert subprocess.run(command, cwd=PROJECT, capture_output=True).returncode == 0
    straight = json.loads((tmp_path / "straight" / run_files.FINAL_FILE).read_text())
    again = json.loads((resumed / run_files.FINAL_FILE).read_text())
    drop = lambda d: {k: v for k, v in d.items() if not k.startswith("perf/") and k != "checkpoint"}  # noqa: E731
    assert drop(again) == drop(straight)
    assert comparable(run_files.read_metrics(resumed)) == comparable(run_files.read_metrics(tmp_path / "straight"))


def test_a_run_of_another_config_is_not_resumed_and_the_message_names_what_differs(tiny_base, tmp_path, capsys):
    grpo = tiny_overrides(tiny_base, **{"run.steps": 2})
    assert main(["--preset", "grpo", "--out", str(tmp_path), *grpo]) == 0
    before = {name: (tmp_path / name).read_bytes() for name in (run_files.METRICS_FILE, run_files.CONFIG_FILE)}
    capsys.readouterr()

    assert main(["--preset", "dapo", "--out", str(tmp_path), *grpo, "seed=7", "optim.lr=0.003"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds a run of a different config" in error
    assert "seed: 0 -> 7" in error and "optim.lr: 0.0001 -> 0.003" in error and "policy_loss.clip_eps_high" in error
    assert "--on-config-change restart" in error
    assert {name: (tmp_path / name).read_bytes() for name in before} == before  # nothing was touched

    # tracking is not part of what a run computes: a new run name still resumes the finished run
    assert main(["--preset", "grpo", "--out", str(tmp_path), *grpo, "tracking.run_name=renamed"]) == 0
    assert {name: (tmp_path / name).read_bytes() for name in before} == before


@pytest.mark.slow
def test_restart_on_config_change_trains_the_new_config_from_scratch(tiny_base, tmp_path):
    first = tiny_overrides(tiny_base, **{"run.steps": 2})
    changed = tiny_overrides(tiny_base, **{"run.steps": 2, "optim.lr": 0.003})
    train(load_config("grpo", overrides=changed), tmp_path / "straight")
    run = tmp_path / "row"
    train(load_config("grpo", overrides=first), run)
    (run / "row_config.yaml").write_text("kept: true\n")  # the workflow's input beside the run's files

    train(load_config("grpo", overrides=changed), run, on_config_change="restart")
    assert comparable(run_files.read_metrics(run)) == comparable(run_files.read_metrics(tmp_path / "straight"))
    assert load_config(files=[run / run_files.CONFIG_FILE]).optim.lr == 0.003
    assert (run / "row_config.yaml").read_text() == "kept: true\n"


def test_non_finite_loss_skips_the_update_and_keeps_weights_finite(tiny_base, tmp_path, monkeypatch):
    import algos.trainer.update as update_module

    real = update_module.compose_loss
    calls = {"n": 0}

    def poisoned(cfg, batch, denominators):
        output = real(cfg, batch, denominators)
        calls["n"] += 1
        if calls["n"] == 1:  # the first mini-batch of the run
            return type(output)(
                output.total * float("nan"), output.policy, output.value, output.metrics, output.token_values
            )
        return output

    monkeypatch.setattr(update_module, "compose_loss", poisoned)
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base, **{"run.steps": 1}))
    problems = [Problem(id=str(i), prompt=f"{i % 10} + 1 =", answer="") for i in range(20)]
    length_parity = lambda response, answer: len(response.split()) % 2 == 0  # noqa: E731  (gives every group variance)
    train(cfg, tmp_path, problems=problems, eval_problems={}, verifier=length_parity)
    step = run_files.read_metrics(tmp_path)[1]
    assert step["actor/nonfinite_skipped"] == 1.0
    weights = load_file(latest_checkpoint(tmp_path).policy / "model.safetensors")
    assert all(torch.isfinite(t).all() for t in weights.values())
    initial = load_file(tiny_base / "model.safetensors")
    assert any(not torch.equal(weights[k], initial[k]) for k in initial), "the second mini-batch still updates"


def test_a_step_whose_updates_are_all_skipped_ends_the_run_with_an_error(tiny_base, tmp_path, monkeypatch):
    import algos.trainer.update as update_module

    real = update_module.compose_loss

    def poisoned(cfg, batch, denominators):
        output = real(cfg, batch, denominators)
        return type(output)(
            output.total * float("nan"), output.policy, output.value, output.metrics, output.token_values
        )

    monkeypatch.setattr(update_module, "compose_loss", poisoned)
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base, **{"run.steps": 3}))
    problems = [Problem(id=str(i), prompt=f"{i % 10} + 1 =", answer="") for i in range(20)]
    length_parity = lambda response, answer: len(response.split()) % 2 == 0  # noqa: E731  (gives every group variance)
    with pytest.raises(NonFiniteTrainingError, match=r"step 1 skipped 2 of its updates \(100%\).*max_nonfinite_frac"):
        train(cfg, tmp_path, problems=problems, eval_problems={}, verifier=length_parity)
    assert run_files.read_metrics(tmp_path)[-1]["actor/nonfinite_skipped_frac"] == 1.0  # the failing step is logged
    assert not (tmp_path / run_files.FINAL_FILE).exists()


def test_user_problems_and_verifier(tiny_base, tmp_path):
    problems = [Problem(id=str(i), prompt=f"{i % 10} + 1 =", answer=str((i + 1) % 10)) for i in range(20)]
    calls = []

    def verifier(response: str, answer: str) -> bool:
        calls.append(answer)
        return response.strip().endswith(answer)

    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base, **{"run.steps": 1}))
    result = train(
        cfg, tmp_path, problems=problems, eval_problems={"mine": problems[:4]}, verifier=verifier, tracker=NullTracker()
    )
    assert "eval/mine/accuracy_greedy" in result.metrics
    assert len(calls) >= 16


def test_saved_base_loads_with_auto_classes_and_generates(tiny_base):
    model = AutoModelForCausalLM.from_pretrained(tiny_base)
    tokenizer = AutoTokenizer.from_pretrained(tiny_base)
    encoded = tokenizer(["1 + 2 =", "3 * 4 - 5 ="], return_tensors="pt", padding=True)
    output = model.generate(**encoded, max_new_tokens=8, do_sample=False, pad_token_id=tokenizer.pad_token_id)
    assert output.shape[0] == 2 and output.shape[1] > encoded["input_ids"].shape[1]
    built = build_tokenizer(CheckedChainTask(1, 3).vocabulary())
    for problem in CheckedChainTask(1, 3).problems("train", 20):
        text = f"{problem.prompt} {problem.solution}"
        assert tokenizer(text)["input_ids"] == built(text)["input_ids"]
        assert tokenizer.decode(tokenizer(text)["input_ids"], skip_special_tokens=True) == text
    record = json.loads((tiny_base / "base_model.json").read_text())
    assert 0.0 <= record["validation_accuracy_t1"] <= 1.0 and record["properties"]["group_size"] == 8


def test_mlflow_run_records_params_metrics_tags_and_artifacts(tiny_base, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    overrides = tiny_overrides(tiny_base, **{"run.steps": 1, "tracking.backend": "mlflow", "tracking.uri": uri})
    monkeypatch.chdir(tmp_path)  # artifacts of a sqlite store land in ./mlruns
    train(load_config("dapo", overrides=overrides), tmp_path / "run", preset="dapo")
    client = MlflowClient(tracking_uri=uri)
    run = client.search_runs([client.get_experiment_by_name("rl-harness").experiment_id])[0]
    assert run.data.params["policy_loss.clip_eps_high"] == "0.28"
    assert {"preset", "seed", "config_hash", "git_commit", "hardware", "version.torch"} <= set(run.data.tags)
    assert run.data.tags["preset"] == "dapo"
    assert "rollout/accuracy" in run.data.metrics and "eval/test/accuracy_greedy" in run.data.metrics
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "final_metrics.json", "metrics.jsonl"} <= artifacts


def test_command_line_errors_name_the_problem(tmp_path, capsys):
    assert main(["--preset", "nope", "--out", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err
    run = tmp_path / "run"
    assert main(["--out", str(run), f"model.name_or_path={tmp_path / 'missing'}"]) == 2
    assert "python -m algos.trainer.sft" in capsys.readouterr().err
    assert not run.exists(), "a run that cannot start leaves no directory behind"
    (tmp_path / "a_file").write_text("")
    assert main(["--out", str(tmp_path / "a_file"), "run.steps=1"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "a_file is a file" in error


def _open_run(uri: str, name: str, parent: str | None = None) -> None:
    from algos.config.schema import TrackingConfig
    from algos.trainer.tracking import MLflowTracker

    tracking = TrackingConfig(uri=uri, experiment="campaign", parent_run=parent)
    MLflowTracker(tracking, run_name=name, tags={"seed": name[-1], "preset": "grpo"}).finish("FINISHED")


@pytest.mark.slow
def test_parallel_runs_nest_under_one_parent_per_row(tmp_path):
    import multiprocessing

    from mlflow.tracking import MlflowClient

    from algos.trainer.tracking import GROUP_TAG, PARENT_TAG

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    context = multiprocessing.get_context("spawn")
    jobs = [(uri, f"seed{seed}", row) for row in ("clip_higher", "naive_grpo") for seed in range(3)]
    workers = [context.Process(target=_open_run, args=job) for job in jobs]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0] * len(jobs)
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("campaign").experiment_id])
    parents = {run.info.run_name: run for run in runs if GROUP_TAG in run.data.tags}
    assert sorted(parents) == ["clip_higher", "naive_grpo"]
    assert all(run.info.status == "FINISHED" and "seed" not in run.data.tags for run in parents.values())
    for row, parent in parents.items():
        children = [run for run in runs if run.data.tags.get(PARENT_TAG) == parent.info.run_id]
        assert sorted(run.info.run_name for run in children) == ["seed0", "seed1", "seed2"], row
        assert parent.data.tags["preset"] == "grpo"


@pytest.mark.slow
def test_parallel_runs_opening_a_new_store_all_get_their_run(tmp_path):
    import multiprocessing

    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_open_run, args=(uri, f"run{i}")) for i in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("campaign").experiment_id])
    assert sorted(run.info.run_name for run in runs) == ["run0", "run1", "run2", "run3"]


def test_a_fresh_critic_head_depends_on_its_seed_only(tiny_base):
    from algos.config.schema import ModelConfig
    from algos.engine.models import load_critic

    source = ModelConfig(name_or_path=str(tiny_base))
    heads = []
    for global_seed, head_seed in ((1, 7), (2, 7), (1, 8)):
        torch.manual_seed(global_seed)
        expected_next = torch.rand(1, generator=torch.Generator().manual_seed(global_seed))
        heads.append(load_critic(source, head_seed).score.weight.detach().clone())
        assert torch.equal(torch.rand(1), expected_next)  # the global stream is left as it was
    assert torch.equal(heads[0], heads[1]) and not torch.equal(heads[0], heads[2])


def test_reward_model_critic_is_fitted_then_pretrained_and_measured_before_rl(tiny_base, tmp_path):
    extra = {"critic.init": "reward_model", "critic.reward_model_steps": 3, "critic.pretrain_steps": 2}
    cfg = load_config("vapo", overrides=tiny_overrides(tiny_base, **extra, **{"run.steps": 1}))
    train(cfg, tmp_path)
    phases = run_files.read_metrics(tmp_path, run_files.CRITIC_METRICS_FILE)
    assert [(row["step"], "reward_model/loss" in row) for row in phases] == [
        (0, True),
        (1, True),
        (2, True),
        (0, False),
        (1, False),
    ]
    assert {"value_pretraining/value_loss", "value_pretraining/value_error"} <= set(phases[-1])
    assert {key for row in phases for key in row} - {"step"} <= set(METRICS)
    assert all(math.isfinite(v) for row in phases for v in row.values())
    first = run_files.read_metrics(tmp_path)[0]
    assert first["step"] == 0 and first["critic/value_error"] > 0


def test_the_actor_learning_rate_warms_up_over_rollout_steps(tiny_base, tmp_path):
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base, **{"optim.lr_warmup_steps": 2, "optim.lr": 1e-3}))
    train(cfg, tmp_path)
    rates = [row["actor/lr"] for row in run_files.read_metrics(tmp_path) if "actor/lr" in row]
    assert rates == pytest.approx([5e-4, 1e-3, 1e-3])
