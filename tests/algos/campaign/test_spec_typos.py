"""Every key of every shipped ablation spec, sweep spec and the workflow config, misspelt once, fails when the file is
read, with one message naming the file, the misspelt key and the name it was meant to be."""

import copy
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from algos.campaign.ablations import ABLATIONS_DIR, available_specs, main, read_spec
from algos.campaign.sweeps import SWEEPS_DIR, available_sweeps, read_sweep
from algos.campaign.workflow_config import check_workflow_config
from algos.config.presets import PROJECT_ROOT, ConfigError, load_config

WORKFLOW_CONFIG = PROJECT_ROOT / "experiments" / "config.yaml"
WORKFLOW_SCHEMA = PROJECT_ROOT / "experiments" / "config.schema.yaml"


def misspelt(key: Any) -> str:
    """``key`` with its middle character dropped."""
    text = str(key)
    middle = max(1, len(text) // 2)
    return text[:middle] + text[middle + 1 :]


def key_paths(node: Any, path: tuple = ()) -> Iterator[tuple]:
    """The path of every mapping key in ``node``, once per place in the file's shape (list positions collapsed)."""
    seen = set()

    def walk(value: Any, at: tuple) -> Iterator[tuple]:
        if isinstance(value, dict):
            for key, item in value.items():
                shape = tuple("*" if isinstance(part, int) else part for part in (*at, key))
                if shape not in seen:
                    seen.add(shape)
                    yield (*at, key)
                yield from walk(item, (*at, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from walk(item, (*at, index))

    yield from walk(node, path)


def with_key_misspelt(body: Any, path: tuple) -> Any:
    body = copy.deepcopy(body)
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    items = list(parent.items())
    parent.clear()
    parent.update((misspelt(key) if key == path[-1] else key, value) for key, value in items)
    return body


def assert_names_the_typo(error: ConfigError, key: Any, where: str) -> None:
    message = str(error)
    assert f"'{misspelt(key)}'" in message and f"did you mean '{key}'" in message, message
    assert where in message and "\n" not in message, message


def cases(directory: Path, names: list[str]) -> list[tuple[str, tuple]]:
    return [
        (name, path) for name in names for path in key_paths(yaml.safe_load((directory / f"{name}.yaml").read_text()))
    ]


@pytest.mark.parametrize(("name", "path"), cases(ABLATIONS_DIR, available_specs()))
def test_each_key_of_each_ablation_spec_misspelt(name, path, tmp_path):
    shutil.copytree(ABLATIONS_DIR, tmp_path, dirs_exist_ok=True)
    body = yaml.safe_load((ABLATIONS_DIR / f"{name}.yaml").read_text())
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(with_key_misspelt(body, path), sort_keys=False))
    with pytest.raises(ConfigError) as error:
        read_spec(name, tmp_path)
    assert_names_the_typo(error.value, path[-1], f"{name}.yaml")


@pytest.mark.parametrize(("name", "path"), cases(SWEEPS_DIR, available_sweeps()))
def test_each_key_of_each_sweep_spec_misspelt(name, path, tmp_path):
    body = yaml.safe_load((SWEEPS_DIR / f"{name}.yaml").read_text())
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(with_key_misspelt(body, path), sort_keys=False))
    with pytest.raises(ConfigError) as error:
        read_sweep(name, tmp_path)
    assert_names_the_typo(error.value, path[-1], f"{name}.yaml")


def named_by_the_schema(path: tuple) -> bool:
    """Whether the key at ``path`` is one the schema lists (not a name the user chooses, a packaged model's say)."""
    schema = yaml.safe_load(WORKFLOW_SCHEMA.read_text())
    for part in path[:-1]:
        schema = schema["properties"][part]
    return "properties" in schema


@pytest.mark.parametrize(
    "path", [path for path in key_paths(yaml.safe_load(WORKFLOW_CONFIG.read_text())) if named_by_the_schema(path)]
)
def test_each_key_of_the_workflow_config_misspelt(path):
    body = yaml.safe_load(WORKFLOW_CONFIG.read_text())
    with pytest.raises(ConfigError) as error:
        check_workflow_config(with_key_misspelt(body, path), WORKFLOW_SCHEMA)
    assert_names_the_typo(error.value, path[-1], "workflow config")


def test_the_shipped_workflow_config_passes_and_a_wrong_value_names_its_key():
    body = yaml.safe_load(WORKFLOW_CONFIG.read_text())
    check_workflow_config(body, WORKFLOW_SCHEMA)
    body["ablations"]["step_scale"] = "a third"
    with pytest.raises(ConfigError, match=r"ablations\.step_scale: 'a third' is not of type 'number'"):
        check_workflow_config(body, WORKFLOW_SCHEMA)


def test_a_misspelt_settings_section_fails_the_command_with_one_line(tmp_path, capsys):
    shutil.copytree(ABLATIONS_DIR, tmp_path, dirs_exist_ok=True)
    text = (ABLATIONS_DIR / "dapo_table1.yaml").read_text()
    (tmp_path / "dapo_table1.yaml").write_text(text.replace("\nsettings:", "\nsetings:", 1))
    assert main(["--spec", "dapo_table1", "--ablations-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "dapo_table1.yaml: unknown key 'setings' (did you mean 'settings'?)" in err


def test_an_unknown_parameter_of_an_objective_is_named():
    with pytest.raises(ConfigError, match=r"unknown parameter 'bta' of 'dro' \(did you mean 'beta'\?\)"):
        load_config(
            "grpo",
            overrides=[
                "policy_loss.objective=dro",
                "policy_loss.ratio_level=token",
                "policy_loss.objective_params={beta: 0.1, bta: 1}",
            ],
        )
