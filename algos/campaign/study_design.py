"""A table's study design, declared in its spec before any run: each compared row's one primary comparison,
the smallest effect it is meant to detect, how its mechanism endpoints (the secondary comparisons) share
the family-wise level, and the margin of equivalence and non-inferiority claims.

A spec's ``design`` reads::

    design:
      smallest_effect: "5 points"   # on the table's metric: the effect each primary comparison is sized for
      secondary: gated              # gated: a row's endpoints are tested once its primary is decided
                                    #   (graphical procedure, reports.statistics.multiplicity); separate: their own family
      margin: "3 points"            # optional: the margin of rows that claim equivalence or non-inferiority
      basis: design_basis/dapo_table1.json   # optional: the per-seed results the seed counts are computed from
      sequential:                   # optional: a group-sequential design (needs the basis)
        looks: [4, 8, 12, 16, 24, 32]   # seed counts at which each comparison is judged, increasing
        max_seeds: 32               # optional: the most seeds a row runs (default: the last look)
        spending: obrien_fleming    # optional: how the level is spent over the looks, obrien_fleming (default) or pocock
        first_seed: 15              # the first tested seed, after every seed an earlier campaign reported
        maxima: variance            # optional: basis (default): each primary's maximum fixed from the basis;
                                    #   variance: re-sized at every look from its seeds' spread, up to max_seeds

A compared row's primary comparison is, by default, the table's metric at the last step against the row
it is compared with, in the direction of the paper's numbers. A row may instead flag one of its
endpoints ``primary: true`` (where the paper argues the mechanism rather than the score, or gives no
number), or claim ``equivalent`` (|Δ| < margin, two one-sided tests) or ``non_inferior`` (Δ > −margin)
on the table's metric. Every other endpoint of the row is secondary.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from algos.config.presets import ConfigError, unknown_key_error
from algos.trainer.metrics import metric_unit

SECONDARY_RULES = ("gated", "separate")
CLAIMS = ("equivalent", "non_inferior")
SPENDING_RULES = ("obrien_fleming", "pocock")
"""Lan–DeMets spending functions a sequential design may name (reports.statistics.sequential computes them)."""
MAXIMA_RULES = ("basis", "variance")
"""How a sequential design sets each primary's maximum (reports.planning.sequential_plan, reports.planning.resizing):
``basis`` once, from the design basis, the level spent over the looks up to it; ``variance`` at every look from the
spread its seeds show, up to the design's cap, the level spent over the looks up to the cap."""
DESIGN_FIELDS = ("smallest_effect", "secondary", "margin", "basis", "sequential")
SEQUENTIAL_FIELDS = ("looks", "max_seeds", "spending", "first_seed", "maxima")
REQUIRED_SEQUENTIAL_FIELDS = ("looks", "first_seed")
REQUIRED_DESIGN_FIELDS = ("smallest_effect", "secondary")
EFFECT_UNITS = {"share": {"points": 0.01, "%": 0.01}, "tokens": {"tokens": 1.0}, "value": {}}
"""Metric unit -> the units a smallest effect may be written in, and what one of them is in the metric's units."""
QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(\S+)\s*$")


@dataclass(frozen=True)
class Sequential:
    """A group-sequential design: each comparison judged at ``looks`` seeds (increasing, capped at the spec's
    max_seeds, the last the most a row runs), the level spent by ``spending`` (one of :data:`SPENDING_RULES`);
    tested seeds are numbered from ``first_seed``. Each primary is decided as agrees, disagrees or equivalent
    within ±margin (the design's margin, else the primary's smallest effect), or undecided after its last look.
    ``maxima``: one of :data:`MAXIMA_RULES`, how each primary's last look is chosen."""

    looks: tuple[int, ...]
    spending: str
    first_seed: int
    maxima: str = MAXIMA_RULES[0]


@dataclass(frozen=True)
class StudyDesign:
    """A spec's declared design. smallest_effect and margin: in the table metric's units (margin None: no
    claims). secondary: one of :data:`SECONDARY_RULES`. basis: the design basis file, None without one.
    sequential: the group-sequential design, None for a fixed number of seeds."""

    smallest_effect: float
    secondary: str
    margin: float | None = None
    basis: Path | None = None
    sequential: Sequential | None = None


@dataclass(frozen=True)
class Primary:
    """A row's primary comparison. endpoint: the index of the flagged endpoint in the row's endpoints, or
    None for the table's metric at the last step. claim: "equivalent" or "non_inferior" (None: a direction).
    direction: "up" or "down" for a directional primary. smallest_effect: in the compared quantity's units
    (a claim's: the margin)."""

    endpoint: int | None
    claim: str | None
    direction: str | None
    smallest_effect: float

    def describe(self, metric: str, endpoints: tuple[Any, ...]) -> str:
        """One phrase: what is compared and what is claimed of it (its size is the smallest effect's)."""
        if self.claim:
            word = "equivalence" if self.claim == "equivalent" else "non-inferiority"
            return f"{metric} at the last step, {word} within the margin"
        name = metric + " at the last step" if self.endpoint is None else endpoints[self.endpoint].describe()
        return f"{name}, {self.direction}"


def parse_effect(value: Any, metric: str, where: str) -> float:
    """A smallest effect of interest in ``metric``'s units: a positive number (a share's below 1), or a
    number with one of the units :data:`EFFECT_UNITS` allows for the metric (``"3 points"`` of a share)."""
    unit = metric_unit(metric)
    units = EFFECT_UNITS[unit]
    allowed = f"a positive number in the metric's units{'' if not units else ' or with a unit: ' + ', '.join(units)}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value <= 0 or not math.isfinite(value):
            raise ConfigError(f"{where} must be {allowed}; got {value!r}")
        if unit == "share" and value >= 1:
            raise ConfigError(
                f"{where}: {metric} is a share in [0, 1], so {value!r} cannot be an effect on it; write a fraction "
                f'({value / 100:g}) or "{value:g} points"'
            )
        return float(value)
    match = QUANTITY.match(value) if isinstance(value, str) else None
    if not match or match[2] not in units or float(match[1]) <= 0:
        raise ConfigError(f"{where} must be {allowed} ({metric} is measured as a {unit}); got {value!r}")
    return float(match[1]) * units[match[2]]


def parse_design(entry: Any, metric: str, where: str, specs_dir: Path) -> StudyDesign:
    """The spec's ``design`` mapping (see the module's docstring); any fault fails naming ``where`` and the key."""
    check_fields(
        entry, where, DESIGN_FIELDS, REQUIRED_DESIGN_FIELDS, " (a design declares every primary's smallest effect)"
    )
    if entry["secondary"] not in SECONDARY_RULES:
        raise ConfigError(f"{where}: secondary '{entry['secondary']}' is not one of: {', '.join(SECONDARY_RULES)}")
    sequential = parse_sequential(entry["sequential"], f"{where}: sequential") if "sequential" in entry else None
    basis = entry.get("basis")
    if basis is not None and (not isinstance(basis, str) or not (specs_dir / basis).is_file()):
        raise ConfigError(f"{where}: basis {basis!r} is not a file under {specs_dir}")
    if sequential is not None and basis is None:
        raise ConfigError(
            f"{where}: a sequential design sizes each comparison's looks from a design basis; add 'basis'"
        )
    if sequential is not None and entry["secondary"] != "separate":
        raise ConfigError(
            f"{where}: secondary '{entry['secondary']}' under a sequential design: a primary decided at a look passes no "
            "share of the level on, so the secondaries are their own family; set secondary: separate"
        )
    return StudyDesign(
        smallest_effect=parse_effect(entry["smallest_effect"], metric, f"{where}: smallest_effect"),
        secondary=entry["secondary"],
        margin=parse_effect(entry["margin"], metric, f"{where}: margin") if "margin" in entry else None,
        basis=None if basis is None else specs_dir / basis,
        sequential=sequential,
    )


def check_fields(entry: Any, where: str, fields: tuple[str, ...], required: tuple[str, ...], why: str = "") -> None:
    """A mapping of known ``fields`` holding every ``required`` one; else one error naming ``where`` and the key."""
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping with {', '.join(required)}; got {entry!r}")
    for key in entry:
        if key not in fields:
            raise unknown_key_error(where, key, fields)
    missing = [key for key in required if key not in entry]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}{why}")


def parse_sequential(entry: Any, where: str) -> Sequential:
    """The design's ``sequential`` mapping (see the module's docstring); any fault fails naming ``where`` and the key."""
    check_fields(entry, where, SEQUENTIAL_FIELDS, REQUIRED_SEQUENTIAL_FIELDS)
    looks = entry["looks"]
    if (
        not isinstance(looks, list)
        or not looks
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 2 for n in looks)
        or any(later <= earlier for earlier, later in zip(looks, looks[1:], strict=False))
    ):
        raise ConfigError(
            f"{where}: looks must be increasing seed counts, each at least 2 (e.g. [4, 8, 12]); got {looks!r}"
        )
    most = entry.get("max_seeds", looks[-1])
    if not isinstance(most, int) or isinstance(most, bool) or most < looks[0]:
        raise ConfigError(
            f"{where}: max_seeds {most!r} is below the first look ({looks[0]} seeds); raise it or drop it"
        )
    if most > looks[-1]:
        raise ConfigError(
            f"{where}: max_seeds {most} is above the last look ({looks[-1]} seeds), a look the looks do not declare; "
            "declare it among the looks or lower max_seeds"
        )
    spending = entry.get("spending", SPENDING_RULES[0])
    if spending not in SPENDING_RULES:
        raise ConfigError(f"{where}: spending '{spending}' is not one of: {', '.join(SPENDING_RULES)}")
    first = entry["first_seed"]
    if not isinstance(first, int) or isinstance(first, bool) or first < 0:
        raise ConfigError(f"{where}: first_seed must be a seed number (an integer >= 0); got {first!r}")
    maxima = entry.get("maxima", MAXIMA_RULES[0])
    if maxima not in MAXIMA_RULES:
        raise ConfigError(f"{where}: maxima '{maxima}' is not one of: {', '.join(MAXIMA_RULES)}")
    return Sequential(looks=capped_looks(looks, most), spending=spending, first_seed=first, maxima=maxima)


def capped_looks(looks: Sequence[int], cap: int | None) -> tuple[int, ...]:
    """The looks below ``cap``, then ``cap`` itself, the most seeds a row may run (None: the looks as they are)."""
    if cap is None:
        return tuple(looks)
    if cap < looks[0]:
        raise ValueError(f"a cap of {cap} seeds is below the first look ({looks[0]} seeds)")
    if cap > looks[-1]:
        raise ValueError(f"a cap of {cap} seeds is above the last look ({looks[-1]} seeds): a look never declared")
    return tuple(n for n in looks if n < cap) + (cap,)


def resolve_primary(
    where: str,
    design: StudyDesign,
    claim: Any,
    flagged: list[int],
    endpoints: tuple[Any, ...],
    paper_delta: float | None,
) -> Primary:
    """A compared row's one primary comparison (see the module's docstring); two, or none, fail naming ``where``.

    flagged: indices of the row's endpoints marked ``primary: true``. paper_delta: the paper's row minus
    its compared row (None without both numbers).
    """
    if claim is not None and claim not in CLAIMS:
        raise ConfigError(f"{where}: claim '{claim}' is not one of: {', '.join(CLAIMS)}")
    if len(flagged) + (claim is not None) > 1:
        named = [endpoints[i].metric for i in flagged] + ([f"claim {claim}"] if claim else [])
        raise ConfigError(f"{where} declares two primary comparisons ({', '.join(named)}); a row has one")
    if claim is not None:
        if design.margin is None:
            raise ConfigError(f"{where}: claim '{claim}' needs the design's 'margin' (e.g. margin: \"3 points\")")
        return Primary(None, claim, None, design.margin)
    if flagged:
        endpoint = endpoints[flagged[0]]
        if endpoint.smallest_effect is None:
            raise ConfigError(f"{where}: the primary endpoint {endpoint.metric} needs its 'smallest_effect'")
        return Primary(flagged[0], None, endpoint.direction, endpoint.smallest_effect)
    if paper_delta is None or paper_delta == 0:
        reason = (
            "the paper gives no number for it or its compared row"
            if paper_delta is None
            else "the paper shows no change"
        )
        raise ConfigError(
            f"{where} has no primary comparison: {reason}; flag one endpoint 'primary: true', or declare a "
            f"claim ({', '.join(CLAIMS)}) with the design's margin"
        )
    return Primary(None, None, "up" if paper_delta > 0 else "down", design.smallest_effect)


def check_basis_file(design: StudyDesign, spec: str, metric: str, rows: list[str], where: str) -> None:
    """Refuse a design basis written for another spec, metric or set of rows, naming the file and the mismatch."""
    if design.basis is None:
        return
    try:
        record = json.loads(design.basis.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where}: basis {design.basis} is not readable JSON ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get("values"), dict):
        raise ConfigError(f"{where}: basis {design.basis} is not a design basis (no per-row 'values')")
    if record.get("spec") != spec or record.get("metric") != metric:
        raise ConfigError(
            f"{where}: basis {design.basis.name} is of spec '{record.get('spec')}' on {record.get('metric')}, "
            f"not '{spec}' on {metric}"
        )
    if design.sequential is not None and design.sequential.first_seed <= max(record.get("seeds") or [-1]):
        raise ConfigError(
            f"{where}: sequential first_seed {design.sequential.first_seed} would test again a seed of the basis "
            f"{design.basis.name} (seeds {record.get('seeds')}); number the tested seeds after them"
        )
    if sorted(record["values"]) != sorted(rows):
        missing, extra = sorted(set(rows) - set(record["values"])), sorted(set(record["values"]) - set(rows))
        raise ConfigError(
            f"{where}: basis {design.basis.name} does not hold the spec's rows (missing: {', '.join(missing) or 'none'}; "
            f"not in the spec: {', '.join(extra) or 'none'}); rebuild it with python -m reports.design_basis"
        )
