"""Named, independent seeds derived from a run's seed, so any step can be replayed on its own.

Every random draw of a step (which problems, which samples, which mini-batch order) uses a
generator seeded from (run seed, step, purpose). A resumed run therefore draws exactly what the
uninterrupted run drew, without saving or restoring global RNG state.
"""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed that is a deterministic function of ``parts`` (e.g. ``(seed, "rollout", step)``)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1
