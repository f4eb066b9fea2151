"""The converted SmolLM2-135M-Instruct through the whole path on CPU: benchmark scoring of two problems, then a
LoRA GRPO run on the word problems that checkpoints after its first step, stops, and resumes to its second."""

import json
from pathlib import Path

import pytest

from algos.config.presets import load_config
from algos.engine.adapters import ADAPTER_CONFIG
from algos.engine.checkpoint import latest_checkpoint
from algos.trainer import run_files
from algos.trainer.train import StopTraining, train
from eval.run.evaluate import METRICS_FILE, PROTOCOL_FILE
from eval.run.evaluate import main as evaluate_main

pytestmark = pytest.mark.xdist_group("smollm2")  # in the whole suite, one worker converts the model (minutes)

EXPERIMENTS = Path(__file__).parent.parent / "experiments" / "smollm2"


@pytest.mark.slow
def test_the_real_model_scores_two_benchmark_problems(smollm2, tmp_path, capsys):
    pytest.importorskip("math_verify")
    out = tmp_path / "gsm8k"
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        json.dumps({"id": "a", "prompt": "What is 2 + 3?", "answer": "5"})
        + "\n"
        + json.dumps({"id": "b", "prompt": "What is 4 times 6?", "answer": "24"})
        + "\n"
    )
    arguments = ["--model", str(smollm2), "--benchmark", "gsm8k", "--problems", str(problems), "--out", str(out)]
    assert evaluate_main([*arguments, "--max-new-tokens", "24", "--samples", "2"]) == 0
    metrics = json.loads((out / METRICS_FILE).read_text())
    protocol = json.loads((out / PROTOCOL_FILE).read_text())
    assert metrics["problems"] == 2 and 0 <= metrics["ci95_low/avg@2"] <= metrics["avg@2"] <= metrics["ci95_high/avg@2"]
    assert protocol["chat_template_applied"] and protocol["throughput"]["tokens_per_second"] > 0


@pytest.mark.slow
def test_a_lora_run_of_the_real_model_checkpoints_and_resumes(smollm2, tmp_path):
    cfg = load_config(
        "grpo",
        files=[EXPERIMENTS / "rl.yaml", EXPERIMENTS / "lora.yaml"],
        overrides=[
            f"model.name_or_path={smollm2}",
            "rollout.prompts_per_step=2",
            "rollout.group_size=2",
            "rollout.max_new_tokens=8",
            "optim.mini_batches=1",
            "run.steps=2",
            "run.eval_every=1",
            "run.eval_problems=2",
            "run.checkpoint_every=1",
        ],
    )

    def stop_after_the_first_step(step, metrics):
        if step == 1:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(cfg, tmp_path, on_evaluation=stop_after_the_first_step)
    assert latest_checkpoint(tmp_path).state()["step"] == 1  # saved before the evaluation that stopped the run
    result = train(cfg, tmp_path)
    assert [row["step"] for row in run_files.read_metrics(tmp_path)] == [0, 1, 2]
    assert latest_checkpoint(tmp_path).state()["step"] == 2
    assert (result.checkpoint / ADAPTER_CONFIG).is_file() and not (result.checkpoint / "model.safetensors").exists()
