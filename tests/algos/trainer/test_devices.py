"""Choices a run makes for its device: the update's forward-pass layout, deterministic kernels, the autocast mode
read from YAML, and the refusals under FSDP."""

import os
import types

import pytest
import torch

import algos.trainer.train as train_module
from algos.config.presets import ConfigError, load_config
from algos.trainer.update import _chunks_logprobs, _shares_prompts


def accelerator(device: str, fsdp2: bool = False):
    return types.SimpleNamespace(device=torch.device(device), is_fsdp2=fsdp2, num_processes=1)


@pytest.mark.parametrize(
    ("settings", "device", "shared"),
    [
        ([], "cpu", True),
        ([], "cuda", False),
        (["optim.update_pass=shared_prompts"], "cuda", True),
        (["optim.update_pass=joined_rows"], "cpu", False),
        (["model.gradient_checkpointing=true"], "cpu", False),
        (["optim.token_logprobs=chunked"], "cpu", False),
    ],
)
def test_the_update_encodes_each_prompt_once_on_the_cpu_unless_told(settings, device, shared):
    assert _shares_prompts(load_config("grpo", overrides=settings), accelerator(device)) is shared
    assert not _shares_prompts(load_config("grpo", overrides=settings), accelerator(device, fsdp2=True))


def test_a_shared_prompt_pass_is_refused_where_it_cannot_run():
    with pytest.raises(ConfigError, match="optim.update_pass=shared_prompts continues rows from a cache"):
        load_config("grpo", overrides=["optim.update_pass=shared_prompts", "model.gradient_checkpointing=true"])


def test_chunked_logprobs_are_refused_with_a_shared_prompt_pass():
    with pytest.raises(ConfigError, match="optim.token_logprobs=chunked runs the output layer over the joined rows"):
        load_config("grpo", overrides=["optim.update_pass=shared_prompts", "optim.token_logprobs=chunked"])


@pytest.mark.parametrize(
    ("settings", "device", "processes", "chunked"),
    [
        ([], "cpu", 1, False),
        ([], "cuda", 1, False),
        (["optim.token_logprobs=whole_logits"], "cuda", 1, False),
        (["optim.token_logprobs=chunked"], "cpu", 1, True),
        (["optim.token_logprobs=chunked"], "cuda", 1, True),
    ],
)
def test_the_update_chunks_its_logprobs_only_when_told(tiny_base, settings, device, processes, chunked):
    from algos.config.schema import ModelConfig
    from algos.engine.models import load_policy

    policy = load_policy(ModelConfig(name_or_path=str(tiny_base)))
    cfg = load_config("grpo", overrides=settings)
    place = types.SimpleNamespace(device=torch.device(device), is_fsdp2=False, num_processes=processes)
    assert _chunks_logprobs(cfg, place, policy) is chunked
    assert not (chunked and _shares_prompts(cfg, place))  # chunks take the joined rows


def test_chunked_logprobs_name_why_they_cannot_run(tiny_base):
    from algos.config.schema import ModelConfig
    from algos.engine.models import load_policy

    policy = load_policy(ModelConfig(name_or_path=str(tiny_base)))
    cfg = load_config("grpo", overrides=["optim.token_logprobs=chunked"])
    place = types.SimpleNamespace(device=torch.device("cuda"), is_fsdp2=True, num_processes=1)
    with pytest.raises(ValueError, match="optim.token_logprobs=chunked cannot run: the run is sharded"):
        _chunks_logprobs(cfg, place, policy)


def test_fsdp_refuses_a_shared_prompt_pass_before_any_model_loads(monkeypatch):
    monkeypatch.setattr(train_module, "Accelerator", lambda **_: accelerator("cuda", fsdp2=True))
    cfg = load_config("grpo", overrides=["optim.update_pass=shared_prompts"])
    with pytest.raises(ValueError, match="FSDP needs every process in every call"):
        train_module._accelerator(cfg)
    train_module._accelerator(load_config("grpo"))  # auto: joined rows under FSDP


def test_a_bare_no_in_yaml_is_the_autocast_mode_no():
    assert load_config("grpo", overrides=["run.mixed_precision=no"]).run.mixed_precision == "no"
    with pytest.raises(ConfigError, match="valid choices: 'no', 'bf16' or 'fp16'"):
        load_config("grpo", overrides=["run.mixed_precision=yes"])


def test_deterministic_runs_switch_to_deterministic_kernels_and_cublas_workspace(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert not torch.are_deterministic_algorithms_enabled()
    try:
        train_module._accelerator(load_config("grpo", overrides=["run.deterministic=true", "run.device=cpu"]))
        assert torch.are_deterministic_algorithms_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    finally:
        torch.use_deterministic_algorithms(False)
