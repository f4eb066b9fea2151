import logging

import pytest

from algos.config.presets import ConfigError, load_config
from algos.config.rules import warn_about


def fired(cfg, caplog, **kwargs):
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="algos.config.rules"):
        messages = warn_about(cfg, **kwargs)
    assert [r.getMessage() for r in caplog.records] == messages
    return " ".join(messages)


NEW_PRESETS = ("cispo", "sapo", "gmpo", "gpg", "remax", "opo", "lite_ppo")


def test_paper_presets_fire_nothing(caplog):
    for name in ("ppo", "grpo", "dr_grpo", "dapo", "vapo", "gspo", "gepo", "rloo", "reinforce_pp", *NEW_PRESETS):
        assert fired(load_config(name), caplog) == ""


def test_clip_higher_inert_with_one_update(caplog):
    assert "clip-higher is inert" in fired(load_config("dapo", overrides=["optim.mini_batches=1"]), caplog)
    stale = load_config("dapo", overrides=["optim.mini_batches=1", "rollout.policy_staleness=2"])
    assert "clip-higher" not in fired(stale, caplog)


def test_soft_punishment_budget_never_reached(caplog):
    cfg = load_config("dapo", overrides=["reward.soft_overlong_max_length=200", "reward.soft_overlong_buffer=40"])
    assert "soft overlong punishment never fires" in fired(cfg, caplog)
    assert "never fires" in fired(load_config("dapo"), caplog, longest_possible_response=20)


def test_overlong_filter_budget_never_reached(caplog):
    cfg = load_config("dapo", overrides=["reward.overlong_filter=true"])
    assert "overlong filtering never fires" in fired(cfg, caplog, longest_possible_response=20)
    assert "overlong filtering" not in fired(cfg, caplog)


def test_dynamic_sampling_on_reward(caplog):
    cfg = load_config("grpo", overrides=["dynamic_sampling.enabled=true", "dynamic_sampling.filter_on=reward"])
    assert "filters on the reward, not on correctness" in fired(cfg, caplog)


def test_sequence_ratio_with_token_sum(caplog):
    cfg = load_config("gspo", overrides=["policy_loss.aggregation=seq_mean_token_sum_norm"])
    assert "long responses weigh more" in fired(cfg, caplog)


def test_a_config_breaking_several_invariants_fails_with_each_message_in_the_order_of_the_checks():
    overrides = ["rollout.group_size=1", "kl.controller=adaptive", "reward.correct=0", "optim.mini_batches=3"]
    with pytest.raises(ConfigError) as error:
        load_config("dr_grpo", overrides=overrides)
    assert str(error.value) == (
        "invalid config: kl.controller=adaptive scales beta from kl.coef, which is 0: set kl.coef > 0 or "
        "kl.controller=fixed; advantage.estimator=group_mean compares responses within a group: set "
        "rollout.group_size >= 2; optim.mini_batches=3 must divide the rollout batch P*G=16; "
        "reward.correct must be greater than reward.incorrect"
    )
