"""The critic's phases before RL computed once for every run that would compute the same ones.

Rows of an ablation table that change only the policy's side (its clipping, aggregation or LM loss, the policy's
λ) fit the same reward model and pretrain the same value model for a seed: the phases learn from rollouts of the
initial policy with a critic-only update. A store keeps, per key, the critic and its optimizer as the phases left
them and the metrics they logged; a run whose key is there loads them instead of computing them again, and logs
the same metrics, so its files and every later number are bit for bit those of a run that computed them.

The key is the seed, the start model's files (not their folder's name) and every config key except
:data:`PHASE_FREE_KEYS`: keys the phases read only to compute what their critic-only update discards (the policy's
loss and advantages) or never read, each shown not to change the phases' result or metrics in
``tests/algos/trainer/test_critic_store.py``. (λ_critic is not one: the phases log the critic's explained variance
against the rollout's λ_critic returns.) A lock per key lets runs in parallel processes wait for the one computing
it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from filelock import FileLock

from algos.config.presets import flatten, hashed_config
from algos.config.schema import RLConfig

PHASE_FREE_KEYS = (
    "advantage.lambda_policy",
    "advantage.adaptive_lambda_alpha",
    "advantage.adaptive_lambda_min",
    "advantage.adaptive_lambda_max",
    "policy_loss.clip_eps_low",
    "policy_loss.clip_eps_high",
    "policy_loss.aggregation",
    "policy_loss.pos_lm_coef",
    "optim.lr",
    "optim.lr_warmup_steps",
    "run.steps",
    "run.eval_every",
    "run.eval_steps",
    "run.eval_problems",
    "run.final_eval_problems",
    "run.eval_splits",
    "run.eval_modes",
    "run.checkpoint_every",
    "run.max_nonfinite_frac",
)
"""Config keys that do not reach the critic's phases, and the ``tracking.`` keys (:func:`phase_key`)."""
STATE_FILE = "phases.pt"
RECORD_FILE = "phases.json"

LogPhase = Callable[[int, dict[str, float]], None]


def phase_key(cfg: RLConfig) -> str:
    """The store's key for ``cfg``'s critic phases: a digest of every input that can change them."""
    inputs = {
        key: value
        for key, value in flatten(hashed_config(cfg)).items()
        if key not in PHASE_FREE_KEYS and key != "model.name_or_path"
    }
    payload = json.dumps({"config": inputs, "model": model_digest(cfg.model.name_or_path)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def model_digest(name_or_path: str) -> str:
    """SHA-256 of a local model folder's files (names and bytes); a hub model's name as it is."""
    folder = Path(name_or_path)
    if not folder.is_dir():
        return name_or_path
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class CriticStore:
    """The critic's phases per :func:`phase_key`, in ``root``/<key>/ (a state file and a record of the metrics)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare(
        self,
        cfg: RLConfig,
        *,
        compute: Callable[[LogPhase], None],
        critic: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        policy: torch.nn.Module,
        log_phase: LogPhase,
    ) -> bool:
        """Leave ``critic`` and ``optimizer`` as the phases do and log their metrics through ``log_phase``: loaded from
        the store where the key is there, else ``compute(log_phase)`` run and stored. Returns whether it was loaded.

        ``policy`` and ``critic`` end in the training mode the phases leave them in either way.
        """
        folder = self.root / phase_key(cfg)
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder) + ".lock"):
            if (folder / RECORD_FILE).is_file():
                state = torch.load(folder / STATE_FILE, weights_only=True)
                critic.load_state_dict(state["critic"])
                optimizer.load_state_dict(state["optimizer"])
                policy.train(state["policy_training"])
                critic.train(state["critic_training"])
                for step, metrics in json.loads((folder / RECORD_FILE).read_text())["phases"]:
                    log_phase(step, metrics)
                return True
            logged: list[tuple[int, dict[str, float]]] = []

            def log_and_keep(step: int, metrics: dict[str, float]) -> None:
                logged.append((step, metrics))
                log_phase(step, metrics)

            compute(log_and_keep)
            state = {
                "critic": critic.state_dict(),
                "optimizer": optimizer.state_dict(),
                "policy_training": policy.training,
                "critic_training": critic.training,
            }
            self._write(folder, state, {"seed": cfg.seed, "model": cfg.model.name_or_path, "phases": logged})
            return False

    def _write(self, folder: Path, state: dict, record: dict) -> None:
        """Both files into a fresh folder renamed into place: a reader sees the whole entry or none."""
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=self.root))
        torch.save(state, staging / STATE_FILE)
        (staging / RECORD_FILE).write_text(json.dumps(record))
        os.replace(staging, folder)
