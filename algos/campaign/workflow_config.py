"""The workflow's config checked against its schema before any job starts: the first fault as one line naming the
key, with the nearest valid name for a misspelt one (jsonschema's own report prints the whole schema)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from algos.config.presets import ConfigError, unknown_key_error

ORIGIN = "workflow config (experiments/config.yaml, --configfile, --config)"


def check_workflow_config(config: Mapping[str, Any], schema_path: Path, origin: str = ORIGIN) -> None:
    """Raise ConfigError naming ``origin`` and the key at the first unknown key (at any depth where the schema lists
    the keys), else at the first value the schema refuses."""
    schema = yaml.safe_load(schema_path.read_text())
    _check_keys(config, schema, origin, ())
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(config)))
    if error is not None:
        where = ".".join(map(str, error.absolute_path)) or "the top level"
        raise ConfigError(f"{origin}: {where}: {error.message}")


def _check_keys(value: Any, schema: Mapping[str, Any], origin: str, path: tuple[str, ...]) -> None:
    if not isinstance(value, Mapping) or "properties" not in schema:
        return
    known = tuple(schema["properties"])
    for key, item in value.items():
        if key in schema["properties"]:
            _check_keys(item, schema["properties"][key], origin, (*path, str(key)))
        elif schema.get("additionalProperties") is False:
            raise unknown_key_error(f"{origin}: {'.'.join(path) or 'top level'}", key, known)


def check_or_exit(config: Mapping[str, Any], schema_path: Path) -> None:
    """:func:`check_workflow_config`, a fault printed as one line on stderr and exit status 2."""
    try:
        check_workflow_config(config, schema_path)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
