"""LoRA adapters on the policy (peft): only the adapters train, the frozen base stays the KL reference.

With ``model.lora.enabled`` the policy is the base model with a low-rank update (alpha / r) B A on each
targeted linear layer; B starts at zero, so the adapted policy starts equal to the base. The
reference policy of the KL term is the same model with its adapters switched off
(:class:`AdaptersOff`), so no second copy of the weights is held. A checkpoint holds the adapters
alone (peft's ``adapter_config.json`` and ``adapter_model.safetensors``, which name the base);
:func:`load_merged` folds them into the base for export or evaluation.

Command line (export a checkpoint's adapters merged into their base, with the tokenizer)::

    python -m algos.engine.adapters merge --adapters runs/x/checkpoint/policy --out results/models/x-merged
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import peft
import torch
from transformers import AutoTokenizer, PreTrainedModel

from algos.config.schema import LoraConfig

ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_directory(path: str | Path) -> bool:
    """Whether ``path`` is a directory of adapters saved by peft (rather than a whole model)."""
    return (Path(path).expanduser() / ADAPTER_CONFIG).is_file()


def linear_layer_names(model: torch.nn.Module) -> list[str]:
    """The distinct last name parts of ``model``'s linear layers: what ``model.lora.target_modules`` may name."""
    return sorted(
        {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)}
    )


def with_adapters(model: PreTrainedModel, cfg: LoraConfig, saved: Path | None, seed: int) -> peft.PeftModel:
    """``model`` with trainable LoRA adapters: those saved in ``saved`` (a resumed run), else fresh ones drawn
    with the CPU generator seeded by ``seed`` (the global RNG state is restored afterwards)."""
    layers = linear_layer_names(model)
    unknown = [name for name in cfg.target_modules if name not in layers]
    if unknown:
        raise ValueError(
            f"model.lora.target_modules names {', '.join(map(repr, unknown))}, which no linear layer of "
            f"'{model.name_or_path}' is called; valid names: {', '.join(layers)}"
        )
    if saved is not None:
        return peft.PeftModel.from_pretrained(model, saved, is_trainable=True)
    settings = peft.LoraConfig(
        r=cfg.rank,
        lora_alpha=cfg.alpha,
        lora_dropout=cfg.dropout,
        target_modules=list(cfg.target_modules),
        task_type=peft.TaskType.CAUSAL_LM,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return peft.get_peft_model(model, settings)


class AdaptersOff(torch.nn.Module):
    """The base model under a policy's adapters, called like a model: the KL reference of a LoRA run.

    Every call runs the policy in eval mode with its adapters switched off and no gradient, then
    restores its mode, so it scores exactly as a frozen copy of the base would. Its own ``train``/``eval``
    leave the policy's mode alone.
    """

    def __init__(self, policy: peft.PeftModel):
        super().__init__()
        self.policy = policy

    @property
    def config(self):
        return self.policy.config

    def train(self, mode: bool = True) -> AdaptersOff:
        return self

    @torch.no_grad()
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        was_training = self.policy.training
        self.policy.eval()
        try:
            with self.policy.disable_adapter():
                return self.policy(*args, **kwargs)
        finally:
            self.policy.train(was_training)


def load_merged(adapters: Path, dtype: torch.dtype | str) -> PreTrainedModel:
    """The model of a directory of saved adapters: its base (named in the adapters' config) with the adapters'
    updates added into the weights, a plain model with no peft layers; ``dtype`` "auto" keeps the base's."""
    return peft.AutoPeftModelForCausalLM.from_pretrained(adapters, dtype=dtype).merge_and_unload()


def merge_directory(adapters: Path, out: Path) -> Path:
    """Write the model of ``adapters`` (a LoRA checkpoint's policy directory) merged into its base, with the
    tokenizer, to ``out``: staged beside it and moved in whole, so a failure leaves nothing there."""
    if not is_adapter_directory(adapters):
        raise FileNotFoundError(
            f"--adapters {adapters} holds no {ADAPTER_CONFIG}: name the policy directory of a LoRA run's checkpoint"
        )
    if out.exists():
        raise FileExistsError(f"--out {out} exists; name a new directory")
    model = load_merged(adapters, "auto")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        model.save_pretrained(staging)
        AutoTokenizer.from_pretrained(adapters).save_pretrained(staging)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m algos.engine.adapters", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="write a LoRA checkpoint's model merged into its base")
    merge.add_argument("--adapters", required=True, type=Path, help="a LoRA run's checkpoint/policy directory")
    merge.add_argument("--out", required=True, type=Path, help="new directory for the merged model")
    args = parser.parse_args(argv)
    try:
        print(merge_directory(args.adapters, args.out))
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
