"""LoRA adapters: fresh ones leave the base unchanged, only they train and are checkpointed, the KL reference is the
base with them off, a resumed run replays the uninterrupted one, merging folds them in, bad targets are named."""

import json

import pytest
import torch
from safetensors.torch import load_file
from torch.testing import assert_close

from algos.config.presets import load_config
from algos.engine.adapters import ADAPTER_CONFIG, AdaptersOff, linear_layer_names
from algos.engine.adapters import main as adapters_main
from algos.engine.models import load_policy
from algos.trainer import run_files
from algos.trainer.train import StopTraining, train
from algos.trainer.train import main as train_main

pytestmark = pytest.mark.xdist_group("lora_run")  # in the whole suite, one worker trains the module's runs


def lora_overrides(base, **extra) -> list[str]:
    settings = {
        "model.name_or_path": str(base),
        "model.lora.enabled": True,
        "model.lora.rank": 4,
        "task.min_steps": 1,
        "task.max_steps": 3,
        "rollout.prompts_per_step": 4,
        "rollout.group_size": 4,
        "rollout.max_new_tokens": 20,
        "optim.lr": 0.01,
        "kl.coef": 0.05,
        "run.steps": 3,
        "run.eval_every": 1,
        "run.eval_problems": 8,
        "run.checkpoint_every": 1,
        "tracking.backend": "none",
        **extra,
    }
    return [f"{key}={value}" for key, value in settings.items()]


def logits(model, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


IDS = torch.tensor([[3, 7, 5, 9, 4, 6]])


@pytest.fixture(scope="module")
def lora_run(tiny_base, tmp_path_factory):
    """A LoRA run of three steps, and the same run stopped after its second evaluation and resumed."""
    cfg = load_config("grpo", overrides=lora_overrides(tiny_base))
    straight, resumed = tmp_path_factory.mktemp("straight"), tmp_path_factory.mktemp("resumed")

    def stop_at_two(step, metrics):
        if step == 2:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(cfg, resumed, on_evaluation=stop_at_two)
    train(cfg, resumed)
    return cfg, train(cfg, straight), resumed


def test_fresh_adapters_start_equal_to_the_base_and_train_alone(tiny_base):
    cfg = load_config("grpo", overrides=lora_overrides(tiny_base))
    base, policy = (
        load_policy(load_config("grpo", overrides=[f"model.name_or_path={tiny_base}"]).model),
        load_policy(cfg.model),
    )
    assert_close(logits(policy, IDS), logits(base, IDS), rtol=0, atol=0)  # B starts at zero
    trainable = {name for name, parameter in policy.named_parameters() if parameter.requires_grad}
    assert trainable and all(".lora_A." in name or ".lora_B." in name for name in trainable)
    assert {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in trainable} == set(cfg.model.lora.target_modules)


def test_the_reference_is_the_base_with_the_adapters_off_and_no_copy(tiny_base):
    cfg = load_config("grpo", overrides=lora_overrides(tiny_base, **{"model.lora.dropout": 0.5}))
    base = load_policy(load_config("grpo", overrides=[f"model.name_or_path={tiny_base}"]).model).eval()
    policy = load_policy(cfg.model).train()
    with torch.no_grad():
        for name, parameter in policy.named_parameters():
            if ".lora_B." in name:
                parameter.normal_()
    reference = AdaptersOff(policy)
    assert_close(logits(reference, IDS), logits(base, IDS), rtol=0, atol=0)
    assert not torch.equal(logits(policy.eval(), IDS), logits(base, IDS))
    policy.train()
    reference(input_ids=IDS)
    assert policy.training  # its mode is restored
    assert reference(input_ids=IDS).logits.grad_fn is None
    assert sum(p.numel() for p in reference.parameters()) == sum(p.numel() for p in policy.parameters())


@pytest.mark.slow
def test_only_the_adapters_change_and_are_checkpointed(lora_run, tiny_base):
    cfg, result, _ = lora_run
    saved = result.checkpoint
    assert sorted(
        path.name for path in saved.iterdir() if not path.name.startswith(("tokenizer", "special", "chat"))
    ) == [
        "README.md",
        ADAPTER_CONFIG,
        "adapter_model.safetensors",
    ]
    adapters = load_file(saved / "adapter_model.safetensors")
    assert adapters and all(".lora_A." in key or ".lora_B." in key for key in adapters)
    assert any(tensor.abs().sum() > 0 for key, tensor in adapters.items() if ".lora_B." in key)  # they trained
    assert json.loads((saved / ADAPTER_CONFIG).read_text())["base_model_name_or_path"] == str(tiny_base)
    base = load_policy(load_config("grpo", overrides=[f"model.name_or_path={tiny_base}"]).model)
    resumed = load_policy(cfg.model, saved)
    with resumed.disable_adapter():
        assert_close(logits(resumed, IDS), logits(base, IDS), rtol=0, atol=0)  # the base never moved
    assert not torch.equal(logits(resumed, IDS), logits(base, IDS))


def test_a_resumed_lora_run_replays_the_uninterrupted_one(lora_run):
    _, result, resumed = lora_run
    strip = lambda rows: [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in rows]
    assert strip(run_files.read_metrics(resumed)) == strip(run_files.read_metrics(result.out))


def test_merging_folds_the_adapters_into_a_plain_model(lora_run, tmp_path, capsys):
    cfg, result, _ = lora_run
    out = tmp_path / "merged"
    assert adapters_main(["merge", "--adapters", str(result.checkpoint), "--out", str(out)]) == 0
    assert (
        not (out / ADAPTER_CONFIG).exists() and (out / "config.json").is_file() and (out / "tokenizer.json").is_file()
    )
    merged = load_policy(load_config("grpo", overrides=[f"model.name_or_path={out}"]).model)
    adapted = load_policy(cfg.model, result.checkpoint)
    assert_close(logits(merged, IDS), logits(adapted, IDS), rtol=1e-5, atol=1e-5)
    evaluated = load_policy(load_config("grpo", overrides=[f"model.name_or_path={result.checkpoint}"]).model)
    assert_close(logits(evaluated, IDS), logits(adapted, IDS), rtol=1e-5, atol=1e-5)  # a run's policy scores merged

    capsys.readouterr()
    assert adapters_main(["merge", "--adapters", str(result.checkpoint), "--out", str(out)]) == 2
    assert adapters_main(["merge", "--adapters", str(out), "--out", str(tmp_path / "again")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and "exists" in errors[0] and ADAPTER_CONFIG in errors[1]
    assert not (tmp_path / "again").exists() and [p.name for p in tmp_path.iterdir()] == ["merged"]


def test_a_target_that_names_no_layer_is_one_message_naming_the_valid_ones(tiny_base, tmp_path, capsys):
    out = tmp_path / "run"
    overrides = lora_overrides(tiny_base, **{"model.lora.target_modules": "[q_proj,attn_proj]"})
    assert train_main(["--preset", "grpo", "--out", str(out), *overrides]) == 2
    error = capsys.readouterr().err.split("error: ", 1)[1]  # after the weights' loading bar
    valid = ", ".join(linear_layer_names(load_policy(load_config(overrides=[f"model.name_or_path={tiny_base}"]).model)))
    assert error.count("\n") == 1 and error.startswith("model.lora.target_modules names 'attn_proj'") and valid in error
    assert not out.exists()
