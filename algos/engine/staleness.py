"""Sampling from a stale policy: the policy as it was k optimizer updates ago."""

from __future__ import annotations

import copy
from collections import deque

import torch
from transformers import PreTrainedModel


class StalePolicy:
    """Serves the policy as it was ``k`` optimizer updates ago (GEPO's heterogeneous setting).

    Keeps the last k + 1 weight snapshots; the oldest is the sampling policy. With k = 0 the
    current policy samples and nothing is copied.
    """

    def __init__(self, policy: PreTrainedModel, staleness: int, snapshots: list | None = None):
        self.policy, self.staleness = policy, staleness
        self.sampler = copy.deepcopy(policy) if staleness else policy
        self.snapshots: deque = deque(snapshots or [self._snapshot()], maxlen=staleness + 1) if staleness else deque()

    def _snapshot(self) -> dict[str, torch.Tensor]:
        return {name: tensor.detach().clone() for name, tensor in self.policy.state_dict().items()}

    def record_update(self) -> None:
        if self.staleness:
            self.snapshots.append(self._snapshot())

    def current_sampler(self) -> PreTrainedModel:
        if self.staleness:
            self.sampler.load_state_dict(self.snapshots[0])
        return self.sampler
