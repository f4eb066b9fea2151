"""Benchmark scores as :mod:`eval.run.evaluate` leaves them, each beside the protocol it was scored under.

A scored model's directory ``<eval>/<model>/<benchmark>/`` holds ``metrics.json`` and ``protocol.json``;
the benchmark report lists them, and an ablation report gives each benchmark a column over the rows'
scored seeds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.benchmarks.suites import BOXED_TEMPLATE, headline_metric
from eval.run.score_files import METRICS_FILE, PROTOCOL_FILE

TEMPLATE_NAMES = {BOXED_TEMPLATE: "boxed", "{problem}": "raw"}


@dataclass(frozen=True)
class Score:
    """One model's scores on one benchmark and the protocol record written beside them."""

    metrics: dict[str, float]
    protocol: dict[str, Any]

    @property
    def headline(self) -> tuple[str, float]:
        """(metric name, value) the benchmark is quoted by."""
        name = headline_metric(self.metrics)
        return name, self.metrics[name]

    @property
    def unanswered(self) -> float | None:
        """The share of the headline's responses that state no answer (wrong, and counted apart), where recorded."""
        return self.metrics.get("samples_unanswered" if self.headline[0].startswith("avg@") else "greedy_unanswered")


def read_score(directory: Path) -> Score:
    """The scores and protocol in ``directory``; a missing file is named in the error."""
    files = [directory / METRICS_FILE, directory / PROTOCOL_FILE]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"no benchmark scores: missing {', '.join(missing)} (run the evaluate rule)")
    return Score(*(json.loads(path.read_text()) for path in files))


def protocol_summary(protocol: Mapping[str, Any]) -> str:
    """One line of how a score was produced, e.g. ``k=32 at T=1.0, top-p 0.7; 4096 new tokens; boxed; hf 4.57``."""
    decoding = protocol["protocol"]
    template = TEMPLATE_NAMES.get(decoding["prompt_template"], "custom template")
    sampled = (
        f"greedy + k={decoding['samples']} at T={decoding['temperature']:g}, top-p {decoding['top_p']:g}"
        if decoding["samples"]
        else "greedy"
    )
    engine = protocol.get("engine", {})
    return (
        f"{sampled}; {decoding['max_new_tokens']} new tokens; {template} prompt"
        f"{', chat template' if protocol.get('chat_template_applied') else ''}; {protocol['problems']} problems; "
        f"{engine.get('name', 'hf')} {engine.get('version', '')}".rstrip()
    )
