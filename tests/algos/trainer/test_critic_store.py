"""The critic's phases computed once for every run that shares them: the same files and numbers as computing them."""

import dataclasses
import json
import shutil

import pytest
import torch

from algos.config.presets import load_config
from algos.trainer import run_files
from algos.trainer import train as train_module
from algos.trainer.critic_store import PHASE_FREE_KEYS, RECORD_FILE, STATE_FILE, CriticStore, phase_key
from algos.trainer.train import train
from tests.algos.trainer.test_train import comparable, tiny_overrides

PHASES = {"critic.init": "reward_model", "critic.reward_model_steps": 2, "critic.pretrain_steps": 2, "run.steps": 2}
POLICY_SIDE = {
    "advantage.lambda_policy": 0.9,
    "advantage.adaptive_lambda_alpha": "null",
    "advantage.adaptive_lambda_min": 0.1,
    "advantage.adaptive_lambda_max": 0.9,
    "policy_loss.clip_eps_low": 0.1,
    "policy_loss.clip_eps_high": 0.2,
    "policy_loss.aggregation": "seq_mean_token_mean",
    "policy_loss.pos_lm_coef": 0.0,
    "optim.lr": 1e-5,
    "optim.lr_warmup_steps": 0,
}
"""A changed value of every key in PHASE_FREE_KEYS that the phases can read (the others are run-length keys)."""


@pytest.fixture(autouse=True)
def float32():
    torch.set_default_dtype(torch.float32)


def vapo(tiny_base, **changes):
    return load_config("vapo", overrides=tiny_overrides(tiny_base, **{**PHASES, **changes}))


def stored(store):
    """The one entry of a store: its state (critic, optimizer, training modes) and its record of the metrics."""
    (entry,) = [path for path in store.iterdir() if path.is_dir()]
    return torch.load(entry / STATE_FILE, weights_only=True), json.loads((entry / RECORD_FILE).read_text())


@pytest.mark.slow
def test_a_run_that_loads_its_critic_phases_trains_as_one_that_computed_them(tiny_base, tmp_path):
    store = tmp_path / "store"
    train(vapo(tiny_base), tmp_path / "computed")
    train(vapo(tiny_base, **{"policy_loss.clip_eps_high": 0.2}), tmp_path / "other_row", critic_store=store)
    train(vapo(tiny_base), tmp_path / "loaded", critic_store=store)
    for name in (run_files.METRICS_FILE, run_files.CRITIC_METRICS_FILE):
        computed = run_files.read_metrics(tmp_path / "computed", name)
        assert comparable(run_files.read_metrics(tmp_path / "loaded", name)) == comparable(computed)
    assert len([path for path in store.iterdir() if path.is_dir()]) == 1  # the other row computed it, this one loaded


@pytest.mark.slow
def test_keys_declared_free_of_the_phases_leave_their_result_as_it_was(tiny_base, tmp_path):
    """Every key changed at once, in one run: a key that reached the phases would show in their result."""
    train(vapo(tiny_base, **{"run.steps": 1}), tmp_path / "run", critic_store=tmp_path / "store")
    state, record = stored(tmp_path / "store")
    changed = vapo(tiny_base, **{"run.steps": 1, **POLICY_SIDE})
    train(changed, tmp_path / "changed" / "run", critic_store=tmp_path / "changed" / "store")
    other_state, other_record = stored(tmp_path / "changed" / "store")
    assert other_record["phases"] == record["phases"]
    for name, tensor in state["critic"].items():
        assert torch.equal(other_state["critic"][name], tensor), name
    assert repr(other_state["optimizer"]) == repr(state["optimizer"])


@pytest.mark.slow
def test_the_phases_read_no_key_declared_free_of_them_but_those_shown_free(tiny_base, tmp_path, monkeypatch):
    cfg = vapo(tiny_base, **{"run.steps": 1})
    reads, recording = set(), []

    def watch(section, prefix):
        names = {field.name for field in dataclasses.fields(section)}
        original = type(section).__getattribute__

        def read(self, name):
            if recording and name in names:
                reads.add(prefix + name)
            return original(self, name)

        monkeypatch.setattr(type(section), "__getattribute__", read)
        for field in dataclasses.fields(section):
            value = original(section, field.name)
            if dataclasses.is_dataclass(value):
                watch(value, f"{prefix}{field.name}.")

    phases = train_module.prepare_critic

    def recorded_phases(*args, **kwargs):
        recording.append(True)
        try:
            return phases(*args, **kwargs)
        finally:
            recording.clear()

    watch(cfg, "")
    monkeypatch.setattr(train_module, "prepare_critic", recorded_phases)
    train(cfg, tmp_path / "run")
    assert {"critic.pretrain_steps", "rollout.group_size", "seed"} <= reads  # the recorder sees the phases' reads
    assert reads & set(PHASE_FREE_KEYS) <= set(POLICY_SIDE)


def test_every_input_of_the_phases_is_in_the_key(tiny_base, tmp_path):
    cfg = vapo(tiny_base)
    key = phase_key(cfg)
    assert (
        phase_key(vapo(tiny_base, **{"run.steps": 5, "tracking.experiment": "x", "policy_loss.pos_lm_coef": 0})) == key
    )
    for change in ({"critic.pretrain_steps": 3}, {"seed": 1}, {"rollout.group_size": 2}, {"critic.lr": 1e-4}):
        assert phase_key(vapo(tiny_base, **change)) != key, change
    copy = tmp_path / "base"
    shutil.copytree(tiny_base, copy)
    assert phase_key(vapo(copy)) == key  # the model's files, not where they lie
    (copy / "config.json").write_text((copy / "config.json").read_text() + " ")
    assert phase_key(vapo(copy)) != key


def test_a_store_computes_a_key_once_then_loads_it(tiny_base, tmp_path):
    store = CriticStore(tmp_path)
    critic, policy = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(critic.parameters())
    logged, computed = [], []

    def compute(log):
        computed.append(True)
        critic.weight.data.fill_(3.0)
        critic.eval()
        log(0, {"reward_model/loss": 0.5})

    arguments = {"critic": critic, "optimizer": optimizer, "policy": policy, "log_phase": lambda *a: logged.append(a)}
    assert not store.prepare(vapo(tiny_base), compute=compute, **arguments)
    critic.weight.data.fill_(0.0)
    critic.train()
    assert store.prepare(vapo(tiny_base), compute=compute, **arguments)
    assert computed == [True] and logged == [(0, {"reward_model/loss": 0.5})] * 2
    assert torch.all(critic.weight == 3.0) and not critic.training
