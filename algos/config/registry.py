"""One registry per component family: the choices a config key accepts, each with its function and its facts.

The config declares the families here and checks its keys against them; the modules of
:mod:`algos.core` register the members, each with the decorator at its function. ``algos.core``
imports every module in it, and a registry imports ``algos.core`` the first time its members are
asked for, so a new member is one new module: the config accepts its name, and the code that composes
the loss, the advantages or the reward finds it, with nothing else edited. (Not before: ``algos.core``
imports torch, which commands that only list or explain need not wait for.) What the rest of the code must know about a member (it
reads token ratios, it needs baselines, it is exact) is a fact declared with it, never a test of its
name.

Every member of a family has one signature: it takes its family's input bundle (defined beside the
family's composer in ``algos.core``) and the config section of its key, and returns what the family
returns. A member with parameters of its own declares them as a dataclass; they are set under the
family's ``params`` key (e.g. ``policy_loss.objective_params``) and checked when the config is built.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter, ValidationError

Facts = TypeVar("Facts")


@dataclass(frozen=True)
class Member(Generic[Facts]):
    """A registered choice: its name, function, facts, own parameters (a dataclass, or None) and one-line summary."""

    name: str
    function: Callable[..., Any]
    facts: Facts
    params: type | None
    summary: str

    def parameters(self, values: Mapping[str, Any], key: str) -> Any:
        """``values`` checked against the member's parameter dataclass, defaults filled in; ``key`` names them in errors."""
        if self.params is None:
            if values:
                raise ValueError(f"{key}: '{self.name}' takes no parameters, got {', '.join(values)}")
            return None
        known = [field.name for field in dataclasses.fields(self.params)]
        for name in values:
            if name not in known:
                close = difflib.get_close_matches(str(name), known, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise ValueError(f"{key}: unknown parameter '{name}' of '{self.name}'{hint}; valid: {', '.join(known)}")
        try:
            return _adapter(self.params).validate_python(dict(values))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '-'}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{key} for '{self.name}': {problems}") from None


@functools.cache
def _adapter(params: type) -> TypeAdapter:
    """One validator per parameter dataclass: building one is costly, and an objective reads its parameters every pass."""
    return TypeAdapter(params)


@dataclass
class Registry(Generic[Facts]):
    """The members of one family, by name. ``family`` and ``key`` (the config key) name it in errors;
    ``default_facts`` builds the facts of a member that declares none."""

    family: str
    key: str
    default_facts: Callable[[], Facts]
    _members: dict[str, Member[Facts]] = field(default_factory=dict)

    def register(
        self, name: str, facts: Facts | None = None, params: type | None = None, summary: str | None = None
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: add the function under ``name``; a second member of the same name is an error.

        ``summary`` (default: the docstring's first line) is the line its key's description and ``--components``
        show: what it computes, and its paper. Give it where members share a function or the line would be too long.
        """

        def add(function: Callable[..., Any]) -> Callable[..., Any]:
            if name in self._members:
                raise ValueError(f"{self.family} '{name}' is registered twice ({self.key})")
            line = summary or (function.__doc__ or "").strip().split("\n")[0]
            self._members[name] = Member(name, function, facts or self.default_facts(), params, line)
            return function

        return add

    def __getitem__(self, name: str) -> Member[Facts]:
        try:
            return self._registered()[name]
        except KeyError:
            raise ValueError(
                f"'{self.key}' = {name!r} is not a valid {self.family}; valid choices: {', '.join(self.names())}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._registered()

    def __iter__(self) -> Iterator[Member[Facts]]:
        return iter(self._registered().values())

    def names(self) -> tuple[str, ...]:
        """Every member's name, in registration order."""
        return tuple(self._registered())

    def _registered(self) -> dict[str, Member[Facts]]:
        """The members, once :mod:`algos.core` (whose modules register them) is imported."""
        importlib.import_module("algos.core")
        return self._members

    def having(self, fact: Callable[[Facts], bool]) -> tuple[str, ...]:
        """Names of the members whose facts satisfy ``fact``."""
        return tuple(member.name for member in self if fact(member.facts))

    def check(self, name: str) -> str:
        """``name`` if it is a member (a validator for the config key), else the error naming the valid choices."""
        self[name]
        return name

    def choices(self) -> str:
        """Every member and its summary, ``"name: summary"`` in registration order: the choices its key's description
        lists."""
        return " ".join(f"{member.name}: {member.summary}" for member in self)


@dataclass(frozen=True)
class ObjectiveFacts:
    """What the loss composer and the config's invariants need to know about a policy objective.

    token_ratio_only: builds its own sequence weight from token ratios, so ``ratio_level`` must be token.
    one_pass: picks tokens by a statistic of the whole mini-batch's log-probabilities, so the
      mini-batch is one forward pass in one process.
    dual_clip: has a clipped surrogate that ``dual_clip_c`` bounds.
    folds_correction: takes the rollout-correction weights itself (token by token) instead of as a
      loss multiplier.
    """

    token_ratio_only: bool = False
    one_pass: bool = False
    dual_clip: bool = False
    folds_correction: bool = False


@dataclass(frozen=True)
class EstimatorFacts:
    """What advantage composition and the config's invariants need to know about an advantage estimator.

    kind: "group" compares the responses of one prompt (per-sequence, needs G >= 2); "outcome" gives
      each response one scalar from its outcome reward; "token" estimates per token.
    needs_baselines: takes each row's baseline reward (ReMax's greedy response), sampled by the rollout.
    needs_critic: takes the critic's values.
    """

    kind: str = "outcome"
    needs_baselines: bool = False
    needs_critic: bool = False

    @property
    def per_sequence(self) -> bool:
        """One advantage per response, broadcast over its tokens (group and outcome estimators)."""
        return self.kind in ("group", "outcome")


@dataclass(frozen=True)
class ScalingFacts:
    """Where a std scaling applies: ``needs`` "group" (a group estimator's statistics), "per_sequence"
    (an estimator with one advantage per response) or None (any); ``whiten``: whitens the per-token
    advantages over the batch after the per-sequence step."""

    needs: str | None = None
    whiten: bool = False


@dataclass(frozen=True)
class KlFacts:
    """exact: the KL over the whole vocabulary, from the update's logits (so in the loss only, and measured
    with k3 where a sampled value is needed). straight_through: its value with k2's gradient."""

    exact: bool = False
    straight_through: bool = False


@dataclass(frozen=True)
class NoFacts:
    """A family whose members need no facts."""


OBJECTIVES: Registry[ObjectiveFacts] = Registry("policy objective", "policy_loss.objective", ObjectiveFacts)
ADVANTAGE_ESTIMATORS: Registry[EstimatorFacts] = Registry("advantage estimator", "advantage.estimator", EstimatorFacts)
STD_SCALINGS: Registry[ScalingFacts] = Registry("std scaling", "advantage.std_scaling", ScalingFacts)
KL_ESTIMATORS: Registry[KlFacts] = Registry("KL estimator", "kl.estimator", KlFacts)
AGGREGATIONS: Registry[NoFacts] = Registry("loss aggregation", "policy_loss.aggregation", NoFacts)
REWARD_FUNCTIONS: Registry[NoFacts] = Registry("reward function", "reward.functions", NoFacts)

FAMILIES: tuple[Registry, ...] = (
    OBJECTIVES,
    ADVANTAGE_ESTIMATORS,
    STD_SCALINGS,
    KL_ESTIMATORS,
    AGGREGATIONS,
    REWARD_FUNCTIONS,
)


def family_of(key: str) -> Registry | None:
    """The family whose members the dotted config ``key`` names, or None for any other key."""
    return next((family for family in FAMILIES if family.key == key), None)
