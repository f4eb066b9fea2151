"""A run over several processes equals one process's run on the same global batch."""

import json
import os
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from algos.campaign.launch import launch_arguments
from algos.config.presets import load_config
from algos.engine.checkpoint import latest_checkpoint
from algos.engine.distributed import Processes, full_optimizer_state, load_full_optimizer_state
from algos.engine.generation import BatchShard, generate, sample_tokens
from algos.trainer import run_files
from algos.trainer.train import train
from algos.trainer.update import token_budget_passes
from tests.algos.trainer.test_train import await_checkpoint, tiny_overrides

PROJECT = Path(__file__).resolve().parents[3]
DDP_CONFIG = PROJECT / "experiments" / "accelerate" / "ddp.yaml"


def process(index: int, count: int) -> Processes:
    """The ``index``-th of ``count`` processes, for the bookkeeping that needs no collective."""
    return Processes(types.SimpleNamespace(num_processes=count, process_index=index))


@pytest.mark.parametrize(("items", "count"), [(8, 2), (7, 3), (2, 4), (0, 2), (5, 1)])
def test_shares_are_contiguous_balanced_and_cover_every_item_once(items, count):
    shares = [process(index, count).share(items) for index in range(count)]
    assert [i for share in shares for i in range(share.start, share.stop)] == list(range(items))
    sizes = [share.stop - share.start for share in shares]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("top_p", [1.0, 0.7])
def test_a_shard_draws_the_tokens_its_rows_get_in_the_whole_batch(top_p):
    logits = torch.randn(9, 13)
    whole = sample_tokens(logits, 1.0, top_p, torch.Generator().manual_seed(5))
    for rows in (slice(0, 4), slice(4, 9), slice(3, 4)):
        shard = BatchShard(rows.start, 9, lambda ended: ended)
        part = sample_tokens(logits[rows], 1.0, top_p, torch.Generator().manual_seed(5), shard)
        assert torch.equal(part, whole[rows])


def test_a_shard_generates_its_rows_of_the_whole_batch_while_other_rows_run_on(tiny_base):
    from algos.engine.models import encode_prompts, load_policy, load_tokenizer

    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base))
    policy, tokenizer = load_policy(cfg.model).eval(), load_tokenizer(cfg.model)
    prompt_ids, prompt_mask = encode_prompts(tokenizer, ["1 + 2 =", "3 * 4 + 1 =", "5 =", "7 + 7 * 2 ="], None)
    prompt_ids, prompt_mask = prompt_ids.repeat_interleave(3, 0), prompt_mask.repeat_interleave(3, 0)  # (12, T)
    options = {"max_new_tokens": 20, "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    whole = generate(policy, prompt_ids, prompt_mask, generator=torch.Generator().manual_seed(1), **options)
    for rows in (slice(0, 5), slice(5, 12)):
        # Another process's rows never end: this one keeps drawing until the budget, as in lock-step.
        shard = BatchShard(rows.start, 12, lambda ended: False)
        part = generate(
            policy,
            prompt_ids[rows],
            prompt_mask[rows],
            generator=torch.Generator().manual_seed(1),
            shard=shard,
            **options,
        )
        width = whole.response_ids.shape[1]
        assert torch.equal(part.response_ids[:, :width], whole.response_ids[rows])
        assert torch.equal(part.response_mask[:, :width], whole.response_mask[rows])
        assert not part.response_mask[:, width:].any()
        assert torch.equal(part.truncated, whole.truncated[rows])


def test_token_budget_passes_pack_sorted_rows_under_the_budget():
    lengths = torch.tensor([3, 9, 1, 4, 2, 30])
    ordered = torch.tensor([2, 4, 0, 3, 1, 5])  # ascending length
    # Prompt width 2, budget 12: [2, 4] costs 2 x 4 = 8 and adding row 0 would cost 3 x 5 = 15; [0, 3] costs
    # 2 x 6 = 12; row 1 (width 11) fits only alone; row 5 (width 32) exceeds the budget alone and still gets a pass.
    passes = token_budget_passes(ordered, lengths, prompt_width=2, budget=12)
    assert [p.tolist() for p in passes] == [[2, 4], [0, 3], [1], [5]]


def run_in_two_processes(preset: str, out: Path, overrides: list[str], **popen) -> subprocess.Popen:
    command = [
        *(sys.executable, "-m", "accelerate.commands.launch", *launch_arguments(DDP_CONFIG, 2)),  # as the workflow
        *("-m", "algos.trainer.train", "--preset", preset, "--out", str(out), *overrides),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)


def assert_same_run(one: Path, two: Path, processes: int = 2) -> None:
    """Per-step metrics (losses, gradient norms, rollout and evaluation) and final metrics agree to float tolerance."""
    first, second = run_files.read_metrics(one), run_files.read_metrics(two)
    assert [row["step"] for row in first] == [row["step"] for row in second]
    for mine, theirs in zip(first, second, strict=True):
        assert set(mine) == set(theirs)
        for key in mine:
            if not key.startswith("perf/"):
                assert theirs[key] == pytest.approx(mine[key], rel=1e-3, abs=1e-6), (mine["step"], key)
    final = [json.loads((run / run_files.FINAL_FILE).read_text()) for run in (one, two)]
    evaluations = {key: value for key, value in final[0].items() if "eval/" in key}
    assert evaluations and evaluations == {key: final[1][key] for key in evaluations}
    assert json.loads((two / run_files.RUN_FILE).read_text())["processes"] == str(processes)


@pytest.mark.slow
def test_grpo_in_two_processes_equals_one_process(tiny_base, tmp_path):
    """Every mini-batch one row (24 of them): the second process holds no row of any, and runs passes of no weight
    beside the first's (the even split of two processes is the DAPO run's below)."""
    overrides = tiny_overrides(tiny_base, **{"run.steps": 2, "rollout.prompts_per_step": 6, "optim.mini_batches": 24})
    train(load_config("grpo", overrides=overrides), tmp_path / "one")
    launched = run_in_two_processes("grpo", tmp_path / "two", overrides)
    output, _ = launched.communicate(timeout=300)
    assert launched.returncode == 0, output.decode()[-3000:]
    assert_same_run(tmp_path / "one", tmp_path / "two")


@pytest.mark.slow
def test_a_killed_two_process_dapo_run_resumes_to_the_one_process_run(tiny_base, tmp_path):
    """Dynamic sampling on (its rounds decided on gathered groups), killed after a checkpoint, then restarted."""
    overrides = tiny_overrides(tiny_base, **{"run.steps": 4, "rollout.prompts_per_step": 6})
    train(load_config("dapo", overrides=overrides), tmp_path / "one")
    two = tmp_path / "two"
    launched = run_in_two_processes("dapo", two, overrides, start_new_session=True)
    await_checkpoint(two, launched, seconds=300)
    os.killpg(launched.pid, signal.SIGKILL)  # the launcher and both workers
    launched.wait()
    assert 2 <= latest_checkpoint(two).state()["step"] < 4, "the run must be killed part-way"
    again = run_in_two_processes("dapo", two, overrides)
    output, _ = again.communicate(timeout=300)
    assert again.returncode == 0, output.decode()[-3000:]
    assert max(row.get("rollout/generation_rounds", 0) for row in run_files.read_metrics(two)) > 1
    assert_same_run(tmp_path / "one", two)


def test_an_fsdp2_optimizer_state_is_gathered_after_a_forward_pass_without_backward(tmp_path):
    """FSDP2 leaves its root's parameters gathered after a pass without backward (evaluation before a checkpoint),
    so they are not the optimizer's: the state is gathered after resharding them, and loads back."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        model = torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.Sequential(torch.nn.Linear(8, 8)))
        fully_shard(model[1], mesh=mesh)
        fully_shard(model, mesh=mesh)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
        model(torch.tensor([[1, 2]])).sum().backward()
        optimizer.step()
        with torch.no_grad():
            model(torch.tensor([[3, 4]]))
        assert not isinstance(model[0].weight, DTensor)  # the root's parameter is a gathered copy
        fsdp2 = types.SimpleNamespace(is_fsdp2=True)
        state = full_optimizer_state(fsdp2, model, optimizer)
        assert set(state["state"]) == {"0.weight", "1.0.weight", "1.0.bias"}
        assert all(isinstance(p, DTensor) for p in model.parameters())
        before = {name: values["exp_avg"].clone() for name, values in state["state"].items()}
        model.zero_grad(set_to_none=True)
        resumed = torch.optim.AdamW(model.parameters(), lr=0.1)  # as a resumed run builds it
        load_full_optimizer_state(fsdp2, model, resumed, state)
        again = full_optimizer_state(fsdp2, model, resumed)
        for name, values in again["state"].items():
            torch.testing.assert_close(values["exp_avg"], before[name])
    finally:
        torch.distributed.destroy_process_group()


def test_an_fsdp2_checkpoint_before_the_first_update_leaves_adam_where_a_plain_optimizer_is(tmp_path):
    """Gathering an empty FSDP2 optimizer state (the step-0 checkpoint) must not count a step: torch fills it with a
    zero-gradient step, whose step count would shift Adam's bias correction in every later update."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def sharded() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1))
        fully_shard(model, mesh=mesh)
        return model, torch.optim.AdamW(model.parameters(), lr=0.1)

    def train(model, optimizer, steps: range) -> list[torch.Tensor]:
        for step in steps:
            inputs = torch.randn(3, 4, generator=torch.Generator().manual_seed(100 + step))
            model(inputs).pow(2).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        return [parameter.full_tensor().clone() for parameter in model.parameters()]

    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        fsdp2 = types.SimpleNamespace(is_fsdp2=True)
        never_saved = train(*sharded(), range(3))
        model, optimizer = sharded()
        state = full_optimizer_state(fsdp2, model, optimizer)
        assert state["state"] == {} and not optimizer.state
        assert all(torch.equal(a, b) for a, b in zip(train(model, optimizer, range(3)), never_saved, strict=True))
        model, resumed = sharded()
        load_full_optimizer_state(fsdp2, model, resumed, state)  # resumed from the step-0 checkpoint
        assert not resumed.state
        assert all(torch.equal(a, b) for a, b in zip(train(model, resumed, range(3)), never_saved, strict=True))
    finally:
        torch.distributed.destroy_process_group()


def test_an_fsdp2_update_reads_its_gradient_norm_as_a_number(tmp_path):
    """Under FSDP2 the gradient norm is a distributed tensor; the optimizer step's metrics still read as numbers."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    from algos.config.presets import load_config
    from algos.engine.distributed import Processes
    from algos.trainer.update import Learner, _optimizer_step, _read

    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1))
        fully_shard(model, mesh=init_device_mesh("cpu", (1,)))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.ones(2, 4)).sum().backward()
        place = types.SimpleNamespace(clip_grad_norm_=torch.nn.utils.clip_grad_norm_)
        metrics = _optimizer_step(
            load_config("grpo"),
            Learner(model, optimizer),
            place,
            Processes(),
            finite_loss=torch.tensor(True),
            critic_only=False,
        )
        (read,) = _read([metrics])
        assert isinstance(read["actor/grad_norm"], float) and read["actor/grad_norm"] > 0
        assert read["actor/nonfinite_skipped"] == 0.0
    finally:
        torch.distributed.destroy_process_group()
