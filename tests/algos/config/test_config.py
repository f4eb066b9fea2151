import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from algos.config.presets import (
    ConfigError,
    available_presets,
    config_keys,
    diff_from_base,
    load_config,
    main,
    read_preset,
)
from algos.config.schema import RLConfig

REQUIRED = {"ppo", "grpo", "dr_grpo", "dapo", "vapo", "gspo", "gepo", "rloo", "reinforce_pp"}
ROOT = Path(__file__).resolve().parents[3]


def test_every_required_preset_exists():
    assert REQUIRED <= set(available_presets())


@pytest.mark.parametrize("name", available_presets())
def test_preset_differs_from_base_only_in_its_documented_keys(name):
    preset = read_preset(name)
    cfg = load_config(name)
    assert set(diff_from_base(cfg)) == set(preset.changes), "a listed key equals the base, or an unlisted key changed"
    assert all(source.strip() for source in preset.sources.values())
    assert preset.paper


def test_every_field_is_documented():
    assert all(doc.strip() for doc in config_keys().values())


def test_paper_settings_of_the_presets():
    dapo = load_config("dapo")
    assert (dapo.policy_loss.clip_eps_low, dapo.policy_loss.clip_eps_high) == (0.2, 0.28)
    assert dapo.policy_loss.aggregation == "token_mean" and dapo.dynamic_sampling.enabled and dapo.kl.coef == 0
    gspo = load_config("gspo")
    assert (gspo.policy_loss.clip_eps_low, gspo.policy_loss.clip_eps_high) == (3e-4, 4e-4)
    grpo = load_config("grpo")
    assert (grpo.kl.coef, grpo.kl.estimator, grpo.kl.placement) == (0.04, "k3", "loss")
    vapo = load_config("vapo")
    assert vapo.advantage.lambda_critic == 1.0 and vapo.advantage.adaptive_lambda_alpha == 0.05
    assert vapo.critic.pretrain_steps == 50 and vapo.policy_loss.pos_lm_coef == 0.1
    assert load_config("dr_grpo").advantage.std_scaling == "none"


def test_merge_order_base_preset_file_override(tmp_path):
    file = tmp_path / "mine.yaml"
    file.write_text(yaml.safe_dump({"policy_loss": {"clip_eps_high": 0.3, "clip_eps_low": 0.1}}))
    cfg = load_config("dapo", files=[file], overrides=["policy_loss.clip_eps_high=0.35"])
    assert (cfg.policy_loss.clip_eps_low, cfg.policy_loss.clip_eps_high) == (0.1, 0.35)
    assert cfg.dynamic_sampling.enabled


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RLConfig().seed = 3


BAD_INPUTS = [
    (["--preset", "dappo"], "unknown preset 'dappo'; valid presets: cispo, dapo"),
    (["policy_loss.clip_eps_hi=0.3"], "did you mean 'policy_loss.clip_eps_high'"),
    (["policy_loss.ratio_level=tok"], "valid choices: 'token', 'sequence'"),
    (["policy_loss.aggregation=mean"], "'policy_loss.aggregation' = 'mean' is not a valid loss aggregation"),
    (["kl.estimator=k4"], "'kl.estimator' = 'k4' is not a valid KL estimator; valid choices: k1, k1+, k2, k3, k3+, abs"),
    (["kl.coef=-1"], "'kl.coef' = -1: Input should be greater than or equal to 0"),
    (["kl.coef=abc"], "'kl.coef' = 'abc'"),
    (["kl=3"], "'kl' in override 'kl=3' is a section"),
    (["nonsense"], "not of the form key=value"),
    (["advantage.estimator=gae"], "needs a value model: set critic.enabled=true"),
    (["--preset", "grpo", "rollout.group_size=1"], "set rollout.group_size >= 2"),
    (["--preset", "gepo", "advantage.std_scaling=none", "rollout.group_size=1"], "ratio_level=group_expectation"),
    (["critic.enabled=true"], "critic.enabled=true is only used by advantage.estimator gae"),
    (["optim.mini_batches=3"], "must divide the rollout batch"),
    (["reward.correct=0", "reward.incorrect=0"], "reward.correct must be greater"),
    (["reward.soft_overlong_buffer=96"], "must be smaller than L_max=96"),
    (["policy_loss.dual_clip_c=0.5"], "greater than 1"),
    (["policy_loss.clip_eps_low=1.5"], "'policy_loss.clip_eps_low' = 1.5: Input should be less than or equal to 1"),
    (["advantage.adaptive_lambda_alpha=0.05"], "GAE options"),
    (["--preset", "dapo", "dynamic_sampling.filter_on=reward"], "must not filter on a shaped reward"),
    (["--config", "missing.yaml"], "config file not found: missing.yaml"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_fails_with_a_clear_message(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1, "one message on one line"


def test_command_line_exit_codes():
    good = subprocess.run(
        [sys.executable, "-m", "algos.config.presets", "--preset", "dapo"], cwd=ROOT, capture_output=True, text=True
    )
    assert good.returncode == 0 and yaml.safe_load(good.stdout)["policy_loss"]["clip_eps_high"] == 0.28
    bad = subprocess.run(
        [sys.executable, "-m", "algos.config.presets", "kl.estimator=k4"], cwd=ROOT, capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stdout == "" and "valid choices" in bad.stderr


def test_malformed_preset_file_is_named(tmp_path):
    (tmp_path / "broken.yaml").write_text("paper: x\nchanges:\n  kl.coef: 0.1\n")
    with pytest.raises(ConfigError, match="broken.yaml: change 'kl.coef' must be"):
        read_preset("broken", tmp_path)
    (tmp_path / "typo.yaml").write_text("paper: x\nchanges:\n  kl.cof: {value: 0.1, source: s}\n")
    with pytest.raises(ConfigError, match="typo.yaml; .*did you mean 'kl.coef'"):
        read_preset("typo", tmp_path)
