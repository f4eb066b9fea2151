"""The benchmark command: equal-work bookkeeping by hand, and one real (tiny) run beside TRL."""

import argparse
import json

import pytest

from algos.campaign.bench import (
    SideResult,
    Workload,
    compare,
    harness_overrides,
    main,
    parse_trl_option,
    training_problems,
    trl_settings,
)
from tests.peers import import_peer


def side(name, steps, generation, length):
    return SideResult(name, steps, generation, [length] * len(steps), completions=4)


def test_the_comparison_reports_the_median_ratios_the_decode_speedup_and_voids_unequal_work():
    eager = side("harness_eager", [0.5, 0.7, 0.6], [0.4, 0.4, 0.4], 10.0)
    static = side("harness_static", [0.2, 0.4, 0.3], [0.1, 0.1, 0.1], 10.0)
    trl = side("trl", [0.9, 0.6, 0.8], [0.3, 0.3, 0.3], 10.5)
    report = compare({"harness_eager": eager, "harness_static": static, "trl": trl}, length_tolerance=0.1)
    assert report["step_ratio_over_trl"] == {"harness_eager": 0.75, "harness_static": pytest.approx(0.375, abs=1e-3)}
    assert report["decode_speedup_over_eager"] == {"harness_static": 4.0}
    assert report["comparable"] and report["completion_length_gap"] == pytest.approx(0.05, abs=1e-3)
    assert report["sides"]["harness_static"]["generation_tokens_per_s"] == pytest.approx(120 / 0.3, abs=0.1)
    assert report["sides"]["harness_static"]["training_tokens_per_s"] == pytest.approx(120 / 0.6, abs=0.1)
    assert not compare({"harness_eager": eager, "trl": side("trl", [0.8], [0.3], 13.0)}, 0.1)["comparable"]
    alone = compare({"harness_auto": static}, 0.1)
    assert set(alone) == {"sides", "completion_length_gap", "comparable"} and alone["comparable"]


def test_a_micro_batch_gives_trl_one_generation_and_one_optimiser_step_per_batch():
    settings = trl_settings(Workload("model", prompts=8, group=4, micro_batch=8))
    assert settings["per_device_train_batch_size"] == 8 and settings["gradient_accumulation_steps"] == 4
    assert settings["steps_per_generation"] == 4  # 4 passes of 8 = the 32 completions generated at once
    assert trl_settings(Workload("model", prompts=8, group=4))["gradient_accumulation_steps"] == 1
    assert "optim.micro_batch_size=8" in harness_overrides(Workload("model", micro_batch=8))
    assert "rollout.engine=static" in harness_overrides(Workload("model", engine="static"))


def test_a_micro_batch_that_splits_a_group_is_refused(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--model", "missing-model", "--prompts", "4", "--group", "4", "--micro-batch", "6"])
    assert stopped.value.code == 2 and "--micro-batch 6 must divide" in capsys.readouterr().err


def test_trl_runs_the_harness_precision_unless_an_option_says_otherwise():
    import_peer("trl")
    work = Workload("model", prompts=3, group=2, max_new_tokens=7, temperature=0.5)
    settings = trl_settings(work)
    assert settings["bf16"] is False and settings["gradient_checkpointing"] is False
    assert settings["per_device_train_batch_size"] == 6 and settings["num_generations"] == 2
    assert settings["max_completion_length"] == 7 and settings["temperature"] == 0.5
    assert settings["learning_rate"] == work.learning_rate == 1e-9
    options = (parse_trl_option("bf16=true"), parse_trl_option("max_grad_norm=0.5"), parse_trl_option("optim=sgd"))
    assert options == (("bf16", True), ("max_grad_norm", 0.5), ("optim", "sgd"))
    changed = trl_settings(Workload("model", trl_options=options))
    assert changed["bf16"] is True and changed["max_grad_norm"] == 0.5 and changed["optim"] == "sgd"


def test_an_option_trl_does_not_have_is_refused_before_anything_runs(capsys):
    import_peer("trl")
    with pytest.raises(argparse.ArgumentTypeError, match="no field 'bf17' .*bf16"):
        parse_trl_option("bf17=true")
    with pytest.raises(argparse.ArgumentTypeError, match="not KEY=VALUE"):
        parse_trl_option("bf16")
    with pytest.raises(SystemExit) as stopped:
        main(["--model", "missing-model", "--trl-option", "gradient_checkpoint=true"])
    assert stopped.value.code == 2 and "no field 'gradient_checkpoint'" in capsys.readouterr().err


def test_both_sides_train_on_the_same_prompts_every_step():
    work = Workload("model", prompts=5, task="word_problems", warmup=2, repeats=3)
    problems = training_problems(work)
    assert len(problems) == 5 == len({p.prompt for p in problems})
    assert [p.prompt for p in problems] == [p.prompt for p in training_problems(work)]


@pytest.mark.slow
def test_a_tiny_run_times_every_side_on_the_same_workload(tiny_base, tmp_path):
    import_peer("trl")
    out = tmp_path / "report.json"
    args = ["--model", str(tiny_base), "--prompts", "2", "--group", "2", "--max-new-tokens", "8", "--repeats", "2"]
    engines = ["--engines", "eager", "static", "--micro-batch", "2"]
    code = main([*args, *engines, "--threads", "1", "--length-tolerance", "10", "--json", str(out)])
    report = json.loads(out.read_text())
    assert code == 0 and report["comparable"]
    sides = report["sides"]
    assert list(sides) == ["trl", "harness_eager", "harness_static"]  # TRL first: every ratio needs it
    for name, row in sides.items():
        assert 0 < row["min_step_s"] <= row["median_step_s"] <= row["max_step_s"], name
        assert 0 < row["mean_completion_length"] <= 8 and row["first_step_s"] > 0, name
    assert sides["harness_eager"]["mean_completion_length"] == sides["harness_static"]["mean_completion_length"]
    # The step times are printed to 4 decimals and the ratio (of the unrounded times) to 3.
    harness_step, trl_step, half_unit = sides["harness_static"]["median_step_s"], sides["trl"]["median_step_s"], 5e-5
    lowest, highest = (
        (harness_step - half_unit) / (trl_step + half_unit),
        (harness_step + half_unit) / (trl_step - half_unit),
    )
    assert lowest - 5e-4 <= report["step_ratio_over_trl"]["harness_static"] <= highest + 5e-4
    assert set(report["decode_speedup_over_eager"]) == {"harness_static"}
    assert set(report["throughput"]["update_tflops"]) == set(sides)
    assert report["workload"]["repeats"] == 2 and report["peak_rss_mb"] > 0
    settings = report["trl_settings"]
    assert settings["bf16"] is False and settings["max_completion_length"] == 8
    assert settings["gradient_accumulation_steps"] == 2 == settings["steps_per_generation"]


def test_scaling_times_every_group_size_and_budget_and_draws_them(monkeypatch, tmp_path):
    from algos.campaign import bench

    def fake_harness(work):
        seconds = 0.01 * work.group + 0.001 * work.max_new_tokens
        return side("harness", [seconds] * 3, [seconds / 2] * 3, min(work.max_new_tokens, 30) / 2)

    monkeypatch.setattr(bench, "run_harness", fake_harness)
    curves = bench.scaling(bench.Workload("model"), tmp_path)
    assert [p["group"] for p in curves["group"]] == list(bench.GROUP_SIZES)
    assert [p["max_new_tokens"] for p in curves["budget"]] == list(bench.BUDGETS)
    assert curves["group"][1]["median_step_s"] == pytest.approx(0.01 * 8 + 0.001 * 96)
    assert json.loads((tmp_path / "scaling.json").read_text()) == curves
    assert (tmp_path / "scaling.png").read_bytes().startswith(b"\x89PNG")


def test_the_update_rate_counts_six_flops_per_parameter_and_token_over_the_time_less_sampling():
    harness = SideResult("harness_eager", [3.0, 5.0], [2.0, 4.0], [10.0, 30.0], completions=4)
    # tokens: (10 x 4 + 20) + (30 x 4 + 20) = 200 over (3 - 2) + (5 - 4) = 2 s, at 6 x 1e9 FLOPs a token
    assert harness.update_tflops(6e9, prompt_tokens=20) == pytest.approx(6e9 * 200 / 2 / 1e12)


def test_a_random_qwen2_counts_its_tied_embedding_once(tmp_path):
    from transformers import AutoModelForCausalLM

    from algos.campaign.bench import build_random_qwen2, matmul_parameters

    model = build_random_qwen2(tmp_path, "tiny-qwen2")
    loaded = AutoModelForCausalLM.from_pretrained(model)
    assert loaded.config.tie_word_embeddings
    assert matmul_parameters(str(model)) == sum(p.numel() for p in loaded.parameters())


def test_the_matmul_rate_is_measured_in_the_precision_asked():
    from algos.campaign.bench import measured_matmul_tflops

    assert measured_matmul_tflops("cpu", "fp32", size=128, repeats=3) > 0
    assert measured_matmul_tflops("cpu", "bf16", size=64, repeats=3) > 0


def test_cuda_without_a_device_is_refused_before_anything_runs(capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        main(["--model", "missing-model", "--device", "cuda"])
    assert stopped.value.code == 2 and "no CUDA device is visible" in capsys.readouterr().err
