"""Plain data round-trips exactly, and nothing else crosses: neither subclasses nor malformed trees."""

import json
import math
import time

import pytest

from eval.sandbox.plain_data import HEADER, MAX_DEPTH, NotPlainData, decode, encode, frame

VALUES = [
    None,
    True,
    False,
    0,
    -(10**40),
    1.5,
    -0.0,
    float("inf"),
    3 + 4j,
    "",
    "héllo\n",
    "\ud800",
    b"\x00\xff",
    [1, [2, [3]]],
    (1, "a", (2.5,)),
    (),
    {"a": [1, 2], 3: (4,), (5, 6): None},
    {1, "x", (2, 3)},
    frozenset({1, 2}),
    [True, 1, 1.0],
]


# ids by position and type: a set's repr follows string hashing, which differs between processes (pytest-xdist's workers)
@pytest.mark.parametrize("value", VALUES, ids=[f"{i}-{type(value).__name__}" for i, value in enumerate(VALUES)])
def test_values_round_trip_with_their_exact_types(value):
    tree = json.loads(json.dumps(encode(value)))
    back = decode(tree)
    assert back == value and type(back) is type(value)
    assert repr(back) == repr(value)  # True stays True, 1 stays 1, tuples stay tuples


def test_nan_round_trips():
    assert math.isnan(decode(encode(float("nan"))))


def test_a_list_and_a_tuple_stay_different():
    assert decode(encode([1, 2])) != (1, 2)
    assert decode(encode({"k": (1,)})) == {"k": (1,)}


class Anything:
    def __eq__(self, other):
        return True


class Yes(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class Text(str):
    pass


class Items(list):
    pass


@pytest.mark.parametrize(
    "value",
    [Anything(), Yes(1), Text("a"), Items(), [1, Anything()], {"k": Yes(2)}, {Yes(3): 1}, len, iter([1]), object],
    ids=["always-equal", "int-subclass", "str-subclass", "list-subclass", "nested", "dict-value", "dict-key",
         "function", "iterator", "class"],
)  # fmt: skip
def test_anything_but_exact_builtins_is_refused(value):
    with pytest.raises(NotPlainData, match="not plain data"):
        encode(value)


def test_self_containing_and_too_deep_values_are_refused():
    loop = []
    loop.append(loop)
    with pytest.raises(NotPlainData, match="nested deeper"):
        encode(loop)
    deep = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(NotPlainData, match="nested deeper"):
        encode(deep)


@pytest.mark.parametrize(
    "tree",
    [
        ["b", 1],
        ["i", 5],
        ["i", "five"],
        ["f", 1.5],
        ["s", 3],
        ["y", "zz"],
        ["l", "abc"],
        ["e", [["l", []]]],
        ["d", [[["l", []], ["n", None]]]],
        ["d", [["i", "1"]]],
        ["q", None],
        "plain string",
        ["n", None, "extra"],
        {"value": True},
    ],
)
def test_malformed_trees_are_refused(tree):
    with pytest.raises(NotPlainData):
        decode(tree)


def test_frame_is_length_prefixed_json():
    data = frame({"value": encode([1])})
    (size,) = HEADER.unpack(data[: HEADER.size])
    assert size == len(data) - HEADER.size
    assert decode(json.loads(data[HEADER.size :])["value"]) == [1]


@pytest.mark.parametrize("tag", ["e", "d"])
def test_members_with_colliding_hashes_are_refused_quickly(tag):
    """k * (2**61 - 1) all hash alike: a set of 60 000 of them would take the grader minutes to build."""
    keys = [["i", str(k * (2**61 - 1))] for k in range(60_000)]
    tree = ["e", keys] if tag == "e" else ["d", [[key, ["n", None]] for key in keys]]
    start = time.monotonic()
    with pytest.raises(NotPlainData, match="share one hash"):
        decode(tree)
    assert time.monotonic() - start < 2.0
    assert decode(encode({-1, -2})) == {-1, -2}  # hash(-1) == hash(-2): a chance collision is fine
