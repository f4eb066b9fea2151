"""One run over several processes (``accelerate launch``), equal to one process's run on the same global batch.

Who does what:
  * sampling: each round's prompts are split into contiguous shares of whole groups, one per
    process; the graded responses are gathered, so every process then holds the same global batch;
  * scoring: the global batch's groups are split the same way for the π_old, π_ref and value
    passes, whose outputs are gathered; rewards, advantages (group and batch statistics), dynamic
    sampling's choices and GEPO's group expectation are then computed over the global batch,
    identically on every process;
  * the update: each mini-batch's rows are split evenly; its loss denominators are those of the
    whole mini-batch, and each process's loss is multiplied by the process count, because DDP and
    FSDP average gradients over processes (so the averaged gradient is the sum of the shares);
  * evaluation: each generation batch's problems are split and the responses gathered.
Sampling equals one process's because every process draws the random numbers of the whole batch and
keeps those of its own rows (:class:`algos.engine.generation.BatchShard`), and every process runs the
generation loop until all processes' rows have ended, so the streams advance alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import gather_object, send_to_device
from transformers import PreTrainedModel

from algos.engine.generation import BatchShard, Generation, generate
from algos.engine.sequences import SequenceBatch


class Processes:
    """The processes of one run and the few collectives the run needs; with one process every call is local."""

    def __init__(self, accelerator: Accelerator | None = None):
        self.accelerator = accelerator
        self.count = accelerator.num_processes if accelerator is not None else 1
        self.index = accelerator.process_index if accelerator is not None else 0

    @property
    def is_main(self) -> bool:
        """Whether this process writes the run's files, tracking and checkpoints."""
        return self.index == 0

    def share(self, items: int) -> slice:
        """This process's contiguous share of ``items`` (the first ``items % count`` processes get one more)."""
        base, extra = divmod(items, self.count)
        start = self.index * base + min(self.index, extra)
        return slice(start, start + base + (self.index < extra))

    def gather(self, values: list[Any]) -> list[Any]:
        """Every process's ``values`` concatenated in process order; tensors in them (and objects with a
        ``to(device)``) travel on the CPU and arrive on this process's device."""
        if self.count == 1:
            return list(values)
        return send_to_device(gather_object(send_to_device(values, "cpu")), self.accelerator.device)

    def gather_rows(self, local: torch.Tensor) -> torch.Tensor:
        """Concatenate every process's (N_p, ...) tensor along rows, in process order."""
        if self.count == 1:
            return local
        return torch.cat(self.gather([local]))

    def all_true(self, flag: bool) -> bool:
        """Whether ``flag`` holds on every process."""
        return self.maximum(0.0 if flag else 1.0) == 0.0

    def maximum(self, value: float) -> float:
        """The largest ``value`` over processes."""
        if self.count == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.float64, device=self.accelerator.device)
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
        return float(tensor.item())

    def batch_shard(self, rows: slice, total: int) -> BatchShard | None:
        """How this process's ``rows`` of a ``total``-row generation batch sit in it (None with one process)."""
        if self.count == 1:
            return None
        return BatchShard(rows.start, total, self.all_true)


def full_optimizer_state(accelerator: Accelerator, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """The optimizer's whole state for a checkpoint (every process calls it; FSDP gathers the shards, after
    :func:`reshard`)."""
    if not accelerator.is_fsdp2:
        return optimizer.state_dict()  # DDP: every process holds the same whole state
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

    reshard(model)
    # torch fills an empty state (no update yet: the step-0 checkpoint) with a step of zero gradients at rate 0, which
    # leaves Adam's step counts at 1 and so shifts its bias correction in every later update: it is saved empty and
    # the live optimizer left as it was.
    fresh = not optimizer.state
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    state = get_optimizer_state_dict(model, optimizer, options=options)
    if fresh:
        optimizer.state.clear()
        state["state"] = {}
    return state


def reshard(model: torch.nn.Module) -> None:
    """Put the sharded parameters, the ones the optimizer holds, back on every FSDP2 module of ``model``.

    FSDP2 does not reshard its root module after a forward pass (backward would gather it again at
    once), so after a pass without backward (evaluation, sampling) the root holds gathered copies,
    and its parameters are not the optimizer's until the next backward pass.
    """
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.reshard()


def load_full_optimizer_state(
    accelerator: Accelerator, model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict
) -> None:
    """Load a state written by :func:`full_optimizer_state` (under FSDP, each process keeps its shard of it)."""
    if not accelerator.is_fsdp2:
        optimizer.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

    set_optimizer_state_dict(model, optimizer, state, options=StateDictOptions(full_state_dict=True))
    if not state["state"]:  # saved before the first update: drop the zero-gradient step torch filled it with
        optimizer.state.clear()


def generate_share(
    processes: Processes,
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    rows: slice,
    **options: Any,
) -> Generation:
    """Generate this process's ``rows`` of the global prompts (N, T_prompt), as one process would for all N.

    A process with no rows runs one placeholder row and returns none, since every process must take
    part in every generation step (FSDP gathers the weights at each forward pass).
    """
    shard = processes.batch_shard(rows, prompt_ids.shape[0])
    empty = rows.start == rows.stop
    mine = slice(0, 1) if empty else rows
    result = generate(model, prompt_ids[mine], prompt_mask[mine], shard=shard, **options)
    if not empty:
        return result
    logprobs = result.logprobs[:0] if result.logprobs is not None else None
    return Generation(result.response_ids[:0], result.response_mask[:0], result.truncated[:0], logprobs)


def score_share(
    processes: Processes,
    score: Callable[[SequenceBatch], torch.Tensor],
    sequences: SequenceBatch,
    group_size: int,
) -> torch.Tensor:
    """``score`` (a per-row pass, (N, ...) out) of the whole batch, each process running its share of whole groups."""
    if processes.count == 1:
        return score(sequences)
    groups = processes.share(sequences.response_ids.shape[0] // group_size)
    device = sequences.response_ids.device
    rows = torch.arange(groups.start * group_size, groups.stop * group_size, device=device)
    placeholder = rows.numel() == 0  # still runs a pass: FSDP needs every process in every forward pass
    local = score(sequences.rows(torch.zeros(1, dtype=torch.long, device=device) if placeholder else rows))
    return processes.gather_rows(local[: rows.numel()])
