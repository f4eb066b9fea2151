"""Random draws keyed by their place instead of by a stream's position (common random numbers).

A stream generator gives the k-th number it is asked for: once two policies' batches end at different steps,
every later draw of the stream is shifted between them and they sample unrelated tokens from nearly equal
distributions. Keyed draws make each exponential of the sampler's race (argmax p / E, the draw
``torch.multinomial`` makes) a function of (seed, row key, position, vocabulary entry) alone, where the
seed names the run, step, round and purpose and the row key the problem and the sample of its group. Two
policies that differ a little then draw the same token wherever their distributions agree enough, whatever
their batches hold, how long their other responses are, or how the batch is split over processes.

The function is a keyed hash (MurmurHash3's 32-bit finaliser, applied in a chain), computed in int64 tensor
arithmetic that never overflows (each multiplier taken as its signed 32-bit twin), so it gives the same numbers on the CPU and on CUDA: a 32-bit uniform
u = (h + 1/2) / 2^32 and E = -log u, finer than the 24 bits of a float32 exponential.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from algos.engine.seeding import derive_seed

_MASK = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # spreads consecutive positions and vocabulary entries before they are mixed


@dataclass(frozen=True)
class DrawKey:
    """Keyed draws for a generation batch: ``seed`` names the run, step, round and purpose (a
    :func:`~algos.engine.seeding.derive_seed` value); the batch's rows add the problem and the sample."""

    seed: int


def draw_source(draws: str, seed: int, device: torch.device | str | None = None) -> torch.Generator | DrawKey:
    """What a batch's sampler draws from under ``rollout.draws``: a stream generator seeded with ``seed``
    (``stream``), or the :class:`DrawKey` of ``seed`` (``keyed``)."""
    if draws == "keyed":
        return DrawKey(seed)
    return torch.Generator(device or "cpu").manual_seed(seed)


def row_keys(key: DrawKey, problem_ids: Sequence[str], group_size: int) -> list[int]:
    """The 63-bit key of each row of a batch of ``problem_ids`` sampled ``group_size`` times, group by group
    (row i·G + j is sample j of problem i)."""
    return [derive_seed(key.seed, problem_id, sample) for problem_id in problem_ids for sample in range(group_size)]


def _signed(constant: int) -> int:
    """The integer in (-2^31, 2^31) congruent to a 32-bit ``constant`` mod 2^32: times a value in [0, 2^32) it stays
    inside int64, and the product's low 32 bits are the constant's."""
    return constant - (1 << 32) if constant >= 1 << 31 else constant


_FIRST, _SECOND = _signed(0x85EBCA6B), _signed(0xC2B2AE35)


def mix32(x: torch.Tensor | int) -> torch.Tensor | int:
    """MurmurHash3's finaliser on 32-bit values (an int64 tensor, or one Python integer), a bijection of [0, 2^32)
    that avalanches every bit."""
    x = x ^ (x >> 16)
    x = x * _FIRST & _MASK
    x = x ^ (x >> 13)
    x = x * _SECOND & _MASK
    return x ^ (x >> 16)


class KeyedDraws:
    """The exponential draws of a batch's rows, one position after another, each a function of its place.

    keys: (N,) the rows' 63-bit keys (:func:`row_keys`). Each call of :meth:`exponentials` draws the next
    position; :meth:`get_state` and :meth:`set_state` read and put back the position, as a generator's state.
    """

    def __init__(self, keys: Sequence[int], device: torch.device | str | None = None):
        keys = torch.tensor(list(keys), dtype=torch.int64, device=device)  # (N,)
        self._rows = mix32(mix32(keys & _MASK) ^ mix32((keys >> 32) & _MASK))  # (N,) a 32-bit value a row
        self._entries: torch.Tensor | None = None  # (V,) each vocabulary entry's 32-bit value, made at the first draw
        self.position = 0

    def get_state(self) -> int:
        return self.position

    def set_state(self, position: int) -> None:
        self.position = position

    def exponentials(self, probs: torch.Tensor) -> torch.Tensor:
        """Standard exponential draws shaped like ``probs`` (N, V), in its dtype, for the current position; then the
        next position. Entry (n, v) depends only on row n's key, the position and v."""
        rows, vocabulary = probs.shape
        if rows != len(self._rows):
            raise ValueError(f"keyed draws for {len(self._rows)} rows were asked for {rows}")
        if self._entries is None or len(self._entries) != vocabulary or self._entries.device != probs.device:
            self._rows = self._rows.to(probs.device)
            self._entries = mix32(torch.arange(vocabulary, device=probs.device) * _GOLDEN & _MASK)
        place = mix32(self._rows ^ mix32(self.position * _GOLDEN & _MASK))  # (N,)
        hashed = mix32(place.unsqueeze(-1) ^ self._entries)  # (N, V), distinct across v within a row and position
        self.position += 1
        # -log u for u = (h + 1/2) / 2^32
        return (_LOG_2_TO_32 - torch.log(hashed.to(torch.float64) + 0.5)).to(probs.dtype)


_LOG_2_TO_32 = 32 * math.log(2)
