"""End to end on a tiny budget: base model -> every row x seed of one spec -> its report; then reruns."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("snakemake") is None, reason="needs the 'workflow' extra")

TINY = {
    "base_model": {"args": "--worked-steps 20 --mixed-steps 5 --hidden-size 32 --layers 2"},
    "ablations": {
        "specs": ["dr_grpo_bias"],
        "seeds": 2,
        "overrides": [
            "run.steps=2",
            "run.eval_every=0",
            "run.eval_problems=16",
            "rollout.prompts_per_step=4",
            "rollout.group_size=4",
            "tracking.backend=none",
        ],
    },
}


def snakemake(workdir, *args):
    command = ["snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir), "-c2", "-j2", *args, "--configfile"]
    command += [str(workdir / "tiny.yaml"), "--", "ablations"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment, check=False)


@pytest.mark.slow
def test_ablations_pipeline_end_to_end_then_reruns_only_what_is_missing(tmp_path):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    first = snakemake(tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    report = (tmp_path / "results" / "reports" / "dr_grpo_bias.md").read_text()
    assert "| Dr. GRPO | — |" in report and "(n=2)" in report and "## Provenance" in report
    assert (tmp_path / "results" / "reports" / "dr_grpo_bias.html").is_file()

    again = snakemake(tmp_path, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    shutil.rmtree(tmp_path / "results" / "runs" / "dr_grpo_bias" / "grpo" / "seed1")
    plan = snakemake(tmp_path, "-n")
    assert "Training dr_grpo_bias / grpo / seed 1" in plan.stdout
    assert plan.stdout.count("Training ") == 1 and "Reporting dr_grpo_bias" in plan.stdout
