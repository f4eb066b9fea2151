"""A benchmark is declared once, in ``BENCHMARKS``: the suites and the workflow schema's lists follow it."""

from pathlib import Path

import yaml

from eval.benchmarks.loaders import BENCHMARKS
from eval.benchmarks.suites import SUITES

WORKFLOW_SCHEMA = Path(__file__).resolve().parents[3] / "experiments" / "config.schema.yaml"


def _schema_properties() -> dict:
    return yaml.safe_load(WORKFLOW_SCHEMA.read_text(encoding="utf-8"))["properties"]


def test_the_suites_are_the_built_in_task_and_every_declared_benchmark():
    assert list(SUITES) == ["chain", *BENCHMARKS]


def test_the_workflow_schema_accepts_exactly_the_declared_benchmarks():
    schema = _schema_properties()
    evaluation, ablations = schema["evaluation"]["properties"], schema["ablations"]["properties"]
    assert evaluation["benchmarks"]["items"]["enum"] == list(SUITES)
    assert ablations["benchmarks"]["items"]["enum"] == list(SUITES)
    assert set(evaluation["benchmarks"]["default"]) <= set(SUITES)
    with_hub = [name for name, spec in BENCHMARKS.items() if spec.hub is not None]
    assert evaluation["hub_ids"]["propertyNames"]["enum"] == with_hub
