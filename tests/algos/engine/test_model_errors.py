"""A model the harness cannot use is one message naming the key and what to do, exit 2, and nothing written: a
directory without a model, a model without a tokenizer, a chat template the tokenizer lacks, a system prompt
with no template to put it in."""

import shutil

import pytest

from algos.trainer.train import main as train_main
from eval.run.evaluate import main as evaluate_main


def error_line(captured: str) -> str:
    """The one error line (loading bars may come before it)."""
    lines = [line for line in captured.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and captured.endswith(lines[0] + "\n")
    return lines[0]


@pytest.fixture()
def without_tokenizer(tiny_base, tmp_path):
    directory = tmp_path / "model"
    directory.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(tiny_base / name, directory / name)
    return directory


@pytest.mark.parametrize(
    ("model", "extra", "message"),
    [
        ("empty", [], "has no model (no config.json there)"),
        ("without_tokenizer", [], "has a model but no tokenizer (none of tokenizer.json"),
        ("tiny", ["model.chat_template=always"], "model.chat_template=always but the tokenizer of"),
        ("tiny", ["model.system_prompt=Be brief."], "model.system_prompt is set but prompts to"),
    ],
)
def test_training_stops_with_one_message_and_writes_nothing(
    model, extra, message, tiny_base, without_tokenizer, tmp_path, capsys
):
    source = {"empty": tmp_path / "empty", "without_tokenizer": without_tokenizer, "tiny": tiny_base}[model]
    source.mkdir(exist_ok=True)
    out = tmp_path / "run"
    overrides = [f"model.name_or_path={source}", "tracking.backend=none", *extra]
    assert train_main(["--preset", "grpo", "--out", str(out), *overrides]) == 2
    assert message in error_line(capsys.readouterr().err)
    assert not out.exists()


def test_evaluation_names_the_missing_tokenizer_and_writes_nothing(without_tokenizer, tmp_path, capsys):
    out = tmp_path / "scores"
    assert evaluate_main(["--model", str(without_tokenizer), "--benchmark", "chain", "--out", str(out)]) == 2
    assert "has a model but no tokenizer" in error_line(capsys.readouterr().err)
    assert not out.exists()
