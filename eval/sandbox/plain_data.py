"""Values as plain data: the only form in which a result leaves a code sandbox.

``encode`` accepts exactly the built-in types None, bool, int, float, complex, str, bytes, list,
tuple, dict, set and frozenset, nested, and nothing derived from them: ``type(value) is int``, not
``isinstance``. An object that merely claims to equal everything, or an ``int`` subclass with its
own ``__eq__``, cannot cross. ``decode`` rebuilds genuine built-in values from the tree and
refuses anything malformed, so whatever the sandboxed program sends, the grader compares real
values with the built-in ``==``.

The tree is JSON: ``[tag, payload]`` with tags ``n`` None, ``b`` bool, ``i`` int (decimal text),
``f`` float (``repr``, so nan and inf survive), ``c`` complex ([real, imag] as ``f`` payloads),
``s`` str, ``y`` bytes (hex), ``l`` list, ``t`` tuple, ``e`` set, ``z`` frozenset (lists of
trees) and ``d`` dict (a list of [key tree, value tree] pairs, in order).

Standard library only: inside the sandbox it is imported as a script's neighbour (``import plain_data``).
"""

from __future__ import annotations

import collections
import json
import struct
from typing import Any

MAX_DEPTH = 64
"""Deepest nesting either side accepts; a self-containing list is refused rather than recursed into."""
MAX_NODES = 1_000_000
"""Most values one tree may hold."""
MAX_SHARED_HASH = 16
"""Most set members or dict keys ``decode`` accepts with one hash value."""

HEADER = struct.Struct(">I")
"""A message on a sandbox's pipes: its length as 4 big-endian bytes, then that much UTF-8 JSON."""

_SEQUENCES: dict[type, str] = {list: "l", tuple: "t", set: "e", frozenset: "z"}
_BUILDERS: dict[str, type] = {tag: kind for kind, tag in _SEQUENCES.items()}


class NotPlainData(ValueError):
    """A value, or a tree, outside the plain-data types."""


def frame(message: dict[str, Any]) -> bytes:
    """``message`` (JSON-serialisable) as one length-prefixed frame."""
    body = json.dumps(message).encode()
    return HEADER.pack(len(body)) + body


def encode(value: Any) -> list[Any]:
    """The tree of ``value``; raises NotPlainData for any other type, deeper nesting or more nodes."""
    budget = [MAX_NODES]
    return _encode(value, 0, budget)


def _encode(value: Any, depth: int, budget: list[int]) -> list[Any]:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlainData(f"more than {MAX_NODES} values")
    kind = type(value)
    if value is None:
        return ["n", None]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", str(value)]  # ValueError past Python's digit limit: refused like any other
    if kind is float:
        return ["f", repr(value)]
    if kind is complex:
        return ["c", [repr(value.real), repr(value.imag)]]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if kind in _SEQUENCES:
        return [_SEQUENCES[kind], [_encode(item, depth + 1, budget) for item in value]]
    if kind is dict:
        return ["d", [[_encode(k, depth + 1, budget), _encode(v, depth + 1, budget)] for k, v in value.items()]]
    raise NotPlainData(f"a value of type {kind.__name__!r} is not plain data")


def decode(tree: Any) -> Any:
    """The value ``tree`` stands for; raises NotPlainData for a tree ``encode`` cannot have made."""
    try:
        return _decode(tree, 0)
    except NotPlainData:
        raise
    except (TypeError, ValueError, RecursionError) as error:  # unhashable keys, bad numbers, ...
        raise NotPlainData(f"malformed plain data: {type(error).__name__}: {error}") from None


def _refuse_colliding_hashes(keys: list[Any]) -> None:
    """Refuse set members or dict keys of which many share one hash.

    Integer hashes are predictable (``k * (2**61 - 1)`` all hash alike), and building a set of n
    colliding members takes n² comparisons: minutes for one reply, in the grader, past any deadline.
    A set or dict that ``encode`` made has distinct members, which collide only by chance.
    """
    counts = collections.Counter(hash(key) for key in keys)
    if counts and max(counts.values()) > MAX_SHARED_HASH:
        raise NotPlainData(f"more than {MAX_SHARED_HASH} set members or dict keys share one hash")


def _decode(tree: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlainData(f"nested deeper than {MAX_DEPTH}")
    if type(tree) is not list or len(tree) != 2 or type(tree[0]) is not str:
        raise NotPlainData(f"not a [tag, payload] pair: {str(tree)[:80]}")
    tag, payload = tree
    if tag == "n" and payload is None:
        return None
    if tag == "b" and type(payload) is bool:
        return payload
    if tag == "i" and type(payload) is str:
        return int(payload)
    if tag == "f" and type(payload) is str:
        return float(payload)
    if tag == "c" and type(payload) is list and len(payload) == 2 and all(type(part) is str for part in payload):
        return complex(float(payload[0]), float(payload[1]))
    if tag == "s" and type(payload) is str:
        return payload
    if tag == "y" and type(payload) is str:
        return bytes.fromhex(payload)
    if tag in _BUILDERS and type(payload) is list:
        items = [_decode(item, depth + 1) for item in payload]
        if tag in ("e", "z"):
            _refuse_colliding_hashes(items)
        return _BUILDERS[tag](items)
    if tag == "d" and type(payload) is list:
        pairs = []
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlainData("a dict entry is not a [key, value] pair")
            pairs.append((_decode(pair[0], depth + 1), _decode(pair[1], depth + 1)))
        _refuse_colliding_hashes([key for key, _ in pairs])
        return dict(pairs)
    raise NotPlainData(f"unknown tag or payload: {str(tree)[:80]}")
