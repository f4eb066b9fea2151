"""Load a config: base (the dataclass defaults) -> preset -> YAML files -> ``key=value`` overrides.

A preset file in ``experiments/presets/`` lists only its differences from the base, each with the
paper section that justifies it::

    paper: DAPO (Yu et al. 2025, arXiv 2503.14476)
    changes:
      policy_loss.clip_eps_high: {value: 0.28, source: "§3.1 Clip-Higher"}

Every key is checked against the config tree before anything is built, so a typo fails with one
message naming the key, where it came from and the valid choices.

Command line: ``python -m algos.config.presets --preset dapo policy_loss.clip_eps_high=0.3`` prints the
resolved config; ``--list`` lists presets; ``--explain`` documents every key.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import hashlib
import json
import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from algos.config.registry import FAMILIES
from algos.config.rules import warn_about
from algos.config.schema import RLConfig, field_docs

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PRESETS_DIR = PROJECT_ROOT / "experiments" / "presets"


class ConfigError(ValueError):
    """A config the harness refuses, with a message that names the key and how to fix it."""


@dataclasses.dataclass(frozen=True)
class Preset:
    """One preset file: its citation and its documented changes to the base."""

    name: str
    paper: str
    changes: dict[str, Any]
    sources: dict[str, str]


@functools.cache
def _sections(cls: type = RLConfig, prefix: str = "") -> dict[str, type]:
    """Dotted key of every nested config dataclass (the root is ``""``) -> its class."""
    found = {prefix: cls}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(f.default_factory):
            found.update(_sections(f.default_factory, f"{prefix}{f.name}."))
    return found


@functools.cache
def _leaf_keys() -> frozenset[str]:
    """Every settable dotted key. Checking keys needs no descriptions: these read the registries' members, and
    so import the RL math and torch with it, which a workflow that only plans and reads files never needs."""
    sections = _sections()
    return frozenset(
        f"{prefix}{name}"
        for prefix, cls in sections.items()
        for name in cls.__pydantic_fields__
        if f"{prefix}{name}." not in sections
    )


@functools.cache
def config_keys() -> dict[str, str]:
    """Every settable dotted key -> its description (cached; do not mutate)."""
    sections = _sections()
    return {
        f"{prefix}{name}": doc
        for prefix, cls in sections.items()
        for name, doc in field_docs(cls, prefix).items()
        if f"{prefix}{name}" in _leaf_keys()
    }


def _unknown_key_message(key: str, origin: str) -> str:
    valid = _leaf_keys()
    if f"{key}." in _sections():
        children = sorted(k for k in valid if k.startswith(f"{key}."))
        return f"'{key}' in {origin} is a section, not a value; set one of: {', '.join(children)}"
    section = key.rpartition(".")[0]
    siblings = sorted(k for k in valid if k.rpartition(".")[0] == section)
    if siblings:
        message = f"unknown config key '{key}' in {origin}; valid keys here: {', '.join(siblings)}"
    else:
        tops = sorted({k.split(".")[0] for k in valid})
        message = f"unknown config key '{key}' in {origin}; valid top-level keys: {', '.join(tops)}"
    close = difflib.get_close_matches(key, list(valid), n=1)
    return message + (f" (did you mean '{close[0]}'?)" if close else "")


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``; a mapping under a known leaf key stays a value."""
    flat: dict[str, Any] = {}
    leaves = _leaf_keys()
    for key, value in nested.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted not in leaves:
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def _checked(flat: Mapping[str, Any], origin: str) -> dict[str, Any]:
    valid = _leaf_keys()
    for key in flat:
        if key not in valid:
            raise ConfigError(_unknown_key_message(key, origin))
    return dict(flat)


def read_yaml(path: Path) -> Any:
    try:
        with path.open(encoding="utf-8") as handle:
            return yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None


def yaml_names(directory: Path) -> list[str]:
    """Names (file stems) of the YAML files in ``directory``."""
    return sorted(path.stem for path in directory.glob("*.yaml"))


def named_yaml(directory: Path, name: str, what: str) -> Path:
    """The file ``{name}.yaml`` in ``directory``; an unknown name fails listing the valid ones."""
    path = directory / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"unknown {what} '{name}'; valid {what}s: {', '.join(yaml_names(directory))}")
    return path


def unknown_key_error(where: str, key: Any, valid: Sequence[str]) -> ConfigError:
    """One message naming ``where``, the unknown key, the nearest valid name (if any) and every valid name."""
    close = difflib.get_close_matches(str(key), list(valid), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return ConfigError(f"{where}: unknown key '{key}'{hint}; valid: {', '.join(valid)}")


def read_spec_file(
    directory: Path, name: str, what: str, required: Sequence[str], allowed: Sequence[str]
) -> tuple[Path, dict[str, Any]]:
    """The YAML file ``name`` in ``directory`` (a ``what``: spec, sweep) as a mapping of ``allowed`` fields with every
    ``required`` one; an unknown field is named first (a misspelt required one is both)."""
    path = named_yaml(directory, name, what)
    body = read_yaml(path)
    for key in body if isinstance(body, dict) else ():
        if key not in allowed:
            raise unknown_key_error(str(path), key, allowed)
    missing = [key for key in required if key not in body] if isinstance(body, dict) else list(required)
    if missing:
        raise ConfigError(f"{path}: a {what} needs {', '.join(required)}; missing: {', '.join(missing)}")
    return path, body


def available_presets(presets_dir: Path = PRESETS_DIR) -> list[str]:
    """Names of the preset files in ``presets_dir``."""
    return yaml_names(presets_dir)


def read_preset(name: str, presets_dir: Path = PRESETS_DIR) -> Preset:
    """Parse and check one preset file: every change has a known key, a value and a source."""
    path = named_yaml(presets_dir, name, "preset")
    body = read_yaml(path)
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("paper"), str)
        or not isinstance(body.get("changes"), dict)
    ):
        raise ConfigError(f"{path}: a preset needs 'paper' (text) and 'changes' (a mapping of dotted keys)")
    changes, sources = {}, {}
    for key, entry in body["changes"].items():
        if not isinstance(entry, dict) or set(entry) != {"value", "source"} or not str(entry["source"]).strip():
            raise ConfigError(f"{path}: change '{key}' must be {{value: ..., source: <paper section>}}")
        changes[key], sources[key] = entry["value"], str(entry["source"])
    return Preset(name, body["paper"], _checked(changes, str(path)), sources)


def parse_override(text: str) -> tuple[str, Any]:
    """``"policy_loss.clip_eps_high=0.28"`` -> ``("policy_loss.clip_eps_high", 0.28)`` (value read as YAML)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override '{text}' is not of the form key=value")
    try:
        return key.strip(), yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"override '{text}': value is not valid YAML ({exc})") from None


def _describe(error: dict[str, Any]) -> str:
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    if error["type"] == "unexpected_keyword_argument":
        return _unknown_key_message(key, "the config")
    if error["type"] == "literal_error":
        return f"'{key}' = {error['input']!r} is not a valid choice; valid choices: {error['ctx']['expected']}"
    return f"'{key}' = {error['input']!r}: {error['msg']}"


def build_config(flat: Mapping[str, Any]) -> RLConfig:
    """Validate dotted ``key -> value`` pairs into an :class:`RLConfig` (missing keys keep the base)."""
    try:
        return TypeAdapter(RLConfig).validate_python(_unflatten(_checked(flat, "the config")))
    except ValidationError as exc:
        raise ConfigError("invalid config: " + "; ".join(_describe(e) for e in exc.errors())) from None


def checked_settings(settings: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """``settings`` (nested or dotted keys) as dotted keys, every key checked; errors name ``origin``."""
    return _checked(flatten(settings), origin)


def load_config(
    preset: str | None = None,
    files: Iterable[str | Path] = (),
    overrides: Iterable[str] = (),
    presets_dir: Path = PRESETS_DIR,
    settings: Mapping[str, Any] | None = None,
) -> RLConfig:
    """Merge base -> preset -> YAML files -> ``settings`` -> ``key=value`` overrides, validate, and build the config.

    settings: dotted keys already checked with :func:`checked_settings` (an ablation row's changes).
    """
    flat: dict[str, Any] = dict(read_preset(preset, presets_dir).changes) if preset else {}
    for file in files:
        body = read_yaml(Path(file)) or {}
        if not isinstance(body, dict):
            raise ConfigError(f"{file}: a config file must hold a mapping of keys")
        flat.update(checked_settings(body, str(file)))
    flat.update(settings or {})
    for text in overrides:
        key, value = parse_override(text)
        flat.update(_checked({key: value}, f"override '{text}'"))
    return build_config(flat)


def config_to_dict(cfg: RLConfig) -> dict[str, Any]:
    """Nested plain-Python form of a config (for YAML, MLflow params and hashing)."""
    return dataclasses.asdict(cfg)


HASH_NEUTRAL_DEFAULTS = {"rollout.draws": "stream"}
"""Keys added after runs were recorded, at the value that reproduces those runs: left out of a config's hash at that
value (:func:`hashed_config`), so a run recorded before the key existed keeps its hash and resumes."""


def hashed_config(cfg: RLConfig) -> dict[str, Any]:
    """The nested config a hash reads: every section but ``tracking``, without :data:`HASH_NEUTRAL_DEFAULTS` at
    their neutral value."""
    relevant = {key: value for key, value in config_to_dict(cfg).items() if key != "tracking"}
    for dotted, neutral in HASH_NEUTRAL_DEFAULTS.items():
        section, key = dotted.split(".")
        if relevant[section][key] == neutral:
            del relevant[section][key]
    return relevant


def config_hash(cfg: RLConfig) -> str:
    """Short hash of everything that can change a run's numbers (all sections but ``tracking``)."""
    return hashlib.sha256(json.dumps(hashed_config(cfg), sort_keys=True).encode()).hexdigest()[:12]


def diff_from_base(cfg: RLConfig) -> dict[str, Any]:
    """Dotted keys whose value differs from the base, with the new value."""
    base, mine = flatten(config_to_dict(RLConfig())), flatten(config_to_dict(cfg))
    return {key: value for key, value in mine.items() if base[key] != value}


def _explain() -> str:
    base = flatten(config_to_dict(RLConfig()))
    return "\n".join(f"{key} (default {base[key]!r}): {doc}" for key, doc in config_keys().items())


def _components() -> str:
    lines = []
    for family in FAMILIES:
        lines.append(f"{family.key} ({family.family}):")
        for member in family:
            facts = ", ".join(f"{name}={value}" for name, value in vars(member.facts).items() if value)
            params = f" [own parameters: {', '.join(member.params.__dataclass_fields__)}]" if member.params else ""
            lines.append(f"  {member.name}: {member.summary}{f' ({facts})' if facts else ''}{params}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.config.presets", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", help="preset name (see --list)")
    parser.add_argument("--config", action="append", default=[], help="YAML file of overrides (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the presets and their papers")
    parser.add_argument("--explain", action="store_true", help="document every config key")
    parser.add_argument(
        "--components", action="store_true", help="list every registered component by family, with its facts"
    )
    parser.add_argument("overrides", nargs="*", help="key=value overrides, e.g. policy_loss.clip_eps_high=0.28")
    args = parser.parse_args(argv)
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    try:
        if args.list:
            for name in available_presets():  # each as written: checking it would load the components
                print(f"{name}: {read_yaml(named_yaml(PRESETS_DIR, name, 'preset')).get('paper')}")
        elif args.explain:
            print(_explain())
        elif args.components:
            print(_components())
        else:
            cfg = load_config(args.preset, args.config, args.overrides)
            warn_about(cfg)
            print(yaml.safe_dump(config_to_dict(cfg), sort_keys=False), end="")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
