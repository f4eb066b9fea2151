"""Sampling from a stale policy: the policy as it was k optimizer updates ago (GEPO's heterogeneous setting)."""

from __future__ import annotations

import copy
from collections import deque

import torch
from transformers import PreTrainedModel


class StalePolicy:
    """Serves the policy as it was ``staleness`` = k optimizer updates ago.

    Keeps the last k + 1 weight snapshots of ``policy``; the oldest is loaded into a copy of it, which
    samples. With k = 0 the current policy samples and nothing is copied. ``snapshots``: those of a
    checkpoint, to resume from.
    """

    def __init__(self, policy: PreTrainedModel, staleness: int, snapshots: list | None = None):
        self.policy, self.staleness = policy, staleness
        self.lagged = copy.deepcopy(policy) if staleness else policy
        self.snapshots: deque = deque(snapshots or [self._snapshot()], maxlen=staleness + 1) if staleness else deque()

    def _snapshot(self) -> dict[str, torch.Tensor]:
        return {name: tensor.detach().clone() for name, tensor in self.policy.state_dict().items()}

    def record_update(self) -> None:
        """Note that ``policy`` has just taken an optimizer step."""
        if self.staleness:
            self.snapshots.append(self._snapshot())

    def sampling_policy(self) -> PreTrainedModel:
        """The policy k updates ago (fewer in the first k steps): the one that samples this step."""
        if self.staleness:
            self.lagged.load_state_dict(self.snapshots[0])
        return self.lagged
