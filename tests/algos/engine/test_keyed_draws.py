"""Keyed draws: the sampler's distribution unchanged, and a row's tokens a function of its key alone, whatever batch
it is sampled in, however that batch is decoded."""

import dataclasses

import pytest
import torch
from scipy import stats

from algos.config.presets import config_hash, load_config
from algos.engine.generation import sample_tokens
from algos.engine.keyed_draws import DrawKey, KeyedDraws, draw_source, mix32, row_keys
from algos.engine.models import load_policy, load_tokenizer
from algos.engine.sampling import sample
from eval.tasks.checked_chain import CheckedChainTask
from tests.algos.trainer.test_train import tiny_overrides


def _fmix32(x: int) -> int:
    """MurmurHash3's finaliser on Python's unbounded integers, the reference for the tensor version."""
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


@pytest.fixture(autouse=True)
def float32():
    torch.set_default_dtype(torch.float32)


@pytest.fixture(scope="module")
def tiny(tiny_base):
    cfg = load_config("grpo", overrides=tiny_overrides(tiny_base))
    return load_policy(cfg.model), load_tokenizer(cfg.model)


def test_the_mixer_is_murmurs_finaliser_without_overflow():
    values = [0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 123456789]
    assert mix32(torch.tensor(values)).tolist() == [_fmix32(v) for v in values]
    assert _fmix32(1) == 0x514E28B7  # the published value
    every_16_bits = torch.arange(1 << 16, dtype=torch.int64) << 16
    assert mix32(every_16_bits).unique().numel() == 1 << 16  # a bijection: no two inputs share an output


def test_a_draw_depends_on_its_row_key_position_and_token_only():
    keys = row_keys(DrawKey(5), ["a", "b", "c"], 2)
    assert len(set(keys)) == 6 and keys == row_keys(DrawKey(5), ["a", "b", "c"], 2)
    assert keys[2:4] == row_keys(DrawKey(5), ["b"], 2) and keys[:2] != row_keys(DrawKey(6), ["a"], 2)
    probs = torch.full((6, 50), 1 / 50)
    whole = KeyedDraws(keys)
    first, second = whole.exponentials(probs), whole.exponentials(probs)
    alone = KeyedDraws(keys[3:4])
    assert torch.equal(alone.exponentials(probs[:1]), first[3:4]) and torch.equal(
        alone.exponentials(probs[:1]), second[3:4]
    )
    whole.set_state(0)
    assert torch.equal(whole.exponentials(probs), first) and whole.get_state() == 1
    assert not torch.equal(first, second) and first.unique().numel() == first.numel()


def test_the_draws_are_standard_exponentials_independent_across_positions_and_tokens():
    draws = KeyedDraws(row_keys(DrawKey(11), [str(i) for i in range(200)], 1))
    probs = torch.ones(200, 500)
    first, second = draws.exponentials(probs).flatten().double(), draws.exponentials(probs).flatten().double()
    assert stats.kstest(first.numpy(), "expon").pvalue > 1e-3 and stats.kstest(second.numpy(), "expon").pvalue > 1e-3
    assert abs(torch.corrcoef(torch.stack([first, second]))[0, 1]) < 0.01  # 100,000 pairs: SE 0.003
    neighbours = first.reshape(200, 500)
    assert abs(torch.corrcoef(torch.stack([neighbours[:, :-1].flatten(), neighbours[:, 1:].flatten()]))[0, 1]) < 0.01


@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 1.0), (1.0, 0.8)])
def test_token_frequencies_match_the_samplers_probabilities(temperature, top_p):
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]])
    probs = torch.softmax(logits / temperature, dim=-1)[0]
    if top_p < 1.0:  # the nucleus: the smallest prefix reaching top_p, renormalised
        ordered = probs.sort(descending=True)
        kept = ordered.values.cumsum(0) - ordered.values < top_p
        probs = torch.zeros_like(probs).scatter(0, ordered.indices[kept], ordered.values[kept])
        probs = probs / probs.sum()
    rows = 40_000
    draws = KeyedDraws(row_keys(DrawKey(3), [str(i) for i in range(rows)], 1))
    tokens = sample_tokens(logits.expand(rows, -1), temperature, top_p, draws)
    counts = torch.bincount(tokens, minlength=6).double()
    assert (counts[probs == 0] == 0).all()
    inside = probs > 0
    expected = probs[inside].double() / probs[inside].double().sum() * rows
    assert stats.chisquare(counts[inside].numpy(), expected.numpy()).pvalue > 1e-3


@pytest.mark.parametrize("engine", ["eager", "static"])
def test_a_problems_tokens_are_the_same_alone_and_in_batches_of_any_size(tiny, engine):
    policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 7)
    key = DrawKey(29)
    options = {"group_size": 3, "generator": key, "temperature": 1.0, "engine": engine}
    alone = sample(policy, tokenizer, problems[2:3], 24, **options).texts
    for batch in (problems[:3], problems[2:], [problems[5], problems[2], problems[0]], problems):
        texts = sample(policy, tokenizer, batch, 24, **options).texts
        where = [p.id for p in batch].index(problems[2].id)
        assert texts[where * 3 : where * 3 + 3] == alone
    assert sample(policy, tokenizer, problems[2:3], 24, **{**options, "generator": DrawKey(30)}).texts != alone


def test_greedy_decoding_draws_nothing(tiny):
    policy, tokenizer = tiny
    problems = CheckedChainTask(1, 3).problems("validation", 4)
    keyed = sample(policy, tokenizer, problems, 24, greedy=True, generator=DrawKey(1)).texts
    assert keyed == sample(policy, tokenizer, problems, 24, greedy=True, generator=torch.Generator()).texts


def test_the_stream_default_keeps_the_hashes_recorded_before_the_key_existed():
    assert draw_source("stream", 4).initial_seed() == 4 and draw_source("keyed", 4) == DrawKey(4)
    dapo, vapo = load_config("dapo"), load_config("vapo")
    assert (config_hash(dapo), config_hash(vapo)) == ("c20921cc4a3b", "9b0b189574c8")  # as recorded without the key
    keyed = dataclasses.replace(dapo, rollout=dataclasses.replace(dapo.rollout, draws="keyed"))
    assert config_hash(keyed) != config_hash(dapo)
