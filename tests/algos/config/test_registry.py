"""The component registries: lookups, facts, members' own parameters, and the config taking its choices from them."""

import inspect
from dataclasses import dataclass

import pytest
import torch
from pydantic import Field

from algos.config.presets import ConfigError, config_keys, load_config
from algos.config.registry import (
    ADVANTAGE_ESTIMATORS,
    FAMILIES,
    OBJECTIVES,
    STD_SCALINGS,
    ObjectiveFacts,
    Registry,
)
from algos.config.rules import group_estimators, per_sequence_estimators
from algos.config.schema import PolicyLossConfig, field_docs
from algos.core.loss import LossInputs, compose_loss, mini_batch_denominators


@pytest.fixture
def scratch_objective(monkeypatch):
    """Registers objectives for one test only."""
    monkeypatch.setattr(OBJECTIVES, "_members", dict(OBJECTIVES._members))
    return OBJECTIVES


def test_every_member_has_a_summary_and_one_signature():
    for family in FAMILIES:
        assert family.names(), family.family
        arities = {len(inspect.signature(member.function).parameters) for member in family}
        assert len(arities) == 1, f"{family.family}: members take {arities} arguments"
        for member in family:
            assert member.summary, f"{family.family} '{member.name}' has no docstring"


def test_every_registered_member_is_listed_in_the_description_of_its_key():
    for family in FAMILIES:
        shown = config_keys()[family.key]
        for member in family:
            assert f"{member.name}: {member.summary}" in shown, f"{family.key} does not describe '{member.name}'"


def test_a_new_member_is_described_with_its_key_where_descriptions_are_shown(scratch_objective):
    scratch_objective.register("half_clip")(_half)
    assert "half_clip: Half the clipped surrogate's loss" in field_docs(PolicyLossConfig, "policy_loss.")["objective"]


def test_a_failed_lookup_names_the_key_and_every_valid_choice():
    with pytest.raises(ValueError) as error:
        OBJECTIVES["ppo"]
    message = str(error.value)
    assert message.startswith("'policy_loss.objective' = 'ppo' is not a valid policy objective; valid choices: ")
    assert all(name in message for name in OBJECTIVES.names())


def test_a_name_is_registered_once():
    registry = Registry("thing", "section.thing", ObjectiveFacts)
    registry.register("a")(lambda x, cfg: x)
    with pytest.raises(ValueError, match="'a' is registered twice"):
        registry.register("a")(lambda x, cfg: x)


def test_the_families_facts_are_the_ones_the_papers_give():
    assert group_estimators() == ("group_mean", "rloo", "opo", "passk")
    assert set(per_sequence_estimators()) == {*group_estimators(), "remax"}
    assert OBJECTIVES.having(lambda facts: facts.one_pass) == ("clip_cov", "kl_cov")
    assert OBJECTIVES.having(lambda facts: facts.dual_clip) == ("clip", "clip_cov")
    assert set(OBJECTIVES.having(lambda facts: facts.token_ratio_only)) >= {"gmpo", "vespo"}
    assert ADVANTAGE_ESTIMATORS.having(lambda facts: facts.needs_critic) == ("gae",)
    assert STD_SCALINGS.having(lambda facts: facts.whiten) == ("batch_whiten", "group_batch_whiten")


def _half(x, cfg):
    """Half the clipped surrogate's loss (a member registered by a test)."""
    loss, stats = OBJECTIVES["clip"].function(x, cfg)
    return loss / 2, stats


def _batch() -> LossInputs:
    mask = torch.ones(2, 3)
    logprobs = torch.log(torch.full((2, 3), 0.5))
    return LossInputs(
        logprobs,
        logprobs - 0.1,
        torch.tensor([[1.0], [-1.0]]) * mask,
        mask,
        torch.zeros(2, dtype=torch.bool),
        torch.tensor([True, False]),
    )


def test_a_registered_member_is_a_config_choice_and_the_loss_uses_it(scratch_objective):
    scratch_objective.register("half_clip")(_half)
    cfg, base = load_config(overrides=["policy_loss.objective=half_clip"]), load_config()
    batch = _batch()
    half = compose_loss(cfg, batch, mini_batch_denominators(cfg, batch.mask, batch.truncated, batch.correct))
    full = compose_loss(base, batch, mini_batch_denominators(base, batch.mask, batch.truncated, batch.correct))
    torch.testing.assert_close(half.policy, full.policy / 2)


def test_the_config_invariants_read_a_new_members_facts(scratch_objective):
    scratch_objective.register("token_only", ObjectiveFacts(token_ratio_only=True))(_half)
    with pytest.raises(ConfigError, match="objective=token_only builds its sequence weight from token ratios"):
        load_config(overrides=["policy_loss.objective=token_only", "policy_loss.ratio_level=sequence"])


@dataclass
class _Strength:
    strength: float = Field(gt=0)


def test_a_members_own_parameters_are_checked_with_the_config(scratch_objective):
    scratch_objective.register("scaled", params=_Strength)(_half)
    assert load_config(overrides=["policy_loss.objective=scaled", "policy_loss.objective_params={strength: 2.0}"])
    with pytest.raises(ConfigError, match="policy_loss.objective_params for 'scaled': strength: Field required"):
        load_config(overrides=["policy_loss.objective=scaled"])
    with pytest.raises(ConfigError, match="strength: Input should be greater than 0"):
        load_config(overrides=["policy_loss.objective=scaled", "policy_loss.objective_params={strength: -1}"])
    with pytest.raises(ConfigError, match="'clip' takes no parameters, got strength"):
        load_config(overrides=["policy_loss.objective_params={strength: 2.0}"])
