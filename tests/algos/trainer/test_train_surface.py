"""The new mechanisms run end to end on the built-in task: their metrics are finite, logged and resumable."""

import math

import pytest

from algos.config.presets import load_config
from algos.engine.checkpoint import latest_checkpoint
from algos.trainer import run_files
from algos.trainer.train import StopTraining, train
from tests.algos.trainer.test_train import comparable, tiny_overrides

MECHANISMS = {
    "rollout-correction": ["rollout.policy_staleness=1", "rollout.correction=truncate", "rollout.correction_high=1.5"],
    "token-masks": [
        "policy_loss.top_entropy_quantile=0.5",
        "policy_loss.off_policy_mask_threshold=0.1",
        "optim.length_buckets=1",
    ],
    "clip-cov": ["policy_loss.objective=clip_cov", "policy_loss.cov_ratio=0.01", "optim.length_buckets=1"],
    "exact-kl": ["kl.coef=0.05", "kl.estimator=full", "kl.importance_weighted=false"],
    "two-rewards": ["reward.functions={correctness: 1.0, finished: 0.2}", "reward.combine=normalize_then_sum"],
}


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.slow
def test_mechanism_trains(name, tiny_base, tmp_path):
    cfg = load_config(overrides=tiny_overrides(tiny_base) + MECHANISMS[name] + ["run.steps=2"])
    train(cfg, tmp_path)
    rows = run_files.read_metrics(tmp_path)
    assert [row["step"] for row in rows] == [0, 1, 2]
    assert all(math.isfinite(v) for row in rows for v in row.values())
    if name in ("rollout-correction", "token-masks"):
        assert 0 < rows[2]["actor/loss_multiplier_mean"] <= 1.5


def test_adaptive_kl_controller_moves_beta_and_resumes_with_it(tiny_base, tmp_path):
    overrides = tiny_overrides(tiny_base) + [
        "kl.coef=0.05",
        "kl.controller=adaptive",
        "kl.target=0.001",
        "kl.horizon=20",
    ]
    cfg = load_config(overrides=overrides)
    train(cfg, tmp_path / "straight")
    rows = run_files.read_metrics(tmp_path / "straight")
    betas = [row["actor/kl_coef"] for row in rows[1:]]
    expected = 0.05
    for row, beta in zip(rows[1:], betas, strict=True):
        assert beta == pytest.approx(expected, rel=1e-9)
        expected *= 1 + max(min(row["rollout/kl_ref"] / 0.001 - 1, 0.2), -0.2) * 16 / 20
    assert betas[0] != betas[-1]

    def stop_at_step_two(step, metrics):
        if step == 2:
            raise StopTraining

    with pytest.raises(StopTraining):
        train(cfg, tmp_path / "resumed", on_evaluation=stop_at_step_two)
    assert latest_checkpoint(tmp_path / "resumed").state()["kl_coef"] == pytest.approx(betas[2])
    train(cfg, tmp_path / "resumed")
    assert comparable(run_files.read_metrics(tmp_path / "resumed")) == comparable(rows)
