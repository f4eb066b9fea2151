"""The static-cache decoder draws the eager sampler's tokens from the same random state, on the CPU (without graphs)."""

import warnings

import pytest
import torch

from algos.config.schema import ModelConfig
from algos.engine import static_decoding
from algos.engine.generation import generate
from algos.engine.models import encode_prompts, load_policy, load_tokenizer
from algos.engine.sampling import sample
from algos.engine.static_decoding import decoder_for, generate_static, resolve_engine
from eval.tasks.config import TaskConfig
from eval.tasks.sources import make_task


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def policy(request, tiny_base):
    """The tiny base with each of transformers' attention implementations of its prompts' pass, and its tokenizer."""
    cfg = ModelConfig(name_or_path=str(tiny_base))
    model = load_policy(cfg).eval()
    model.config._attn_implementation = request.param
    return model, load_tokenizer(cfg)


def prompts(tokenizer, rows: int, seed: int = 0):
    """``rows`` left-padded prompts of different lengths, (rows, T_prompt) ids and mask."""
    problems = make_task(TaskConfig(min_steps=1, max_steps=4)).problems("test", rows, seed=seed)
    return encode_prompts(tokenizer, [problem.prompt for problem in problems], chat=None)


def both_ways(model, ids, mask, end_ids, pad_id, *, end_check_every=16, seed=5, **options):
    """The eager and the static Generation from generators seeded alike, and the generators afterwards."""
    eager_draws, static_draws = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    eager = generate(model, ids, mask, eos_token_id=end_ids, pad_token_id=pad_id, generator=eager_draws, **options)
    static = generate_static(
        model,
        ids,
        mask,
        eos_token_id=end_ids,
        pad_token_id=pad_id,
        generator=static_draws,
        end_check_every=end_check_every,
        **options,
    )
    return eager, static, eager_draws, static_draws


def assert_same(eager, static):
    assert torch.equal(eager.response_ids, static.response_ids)
    assert torch.equal(eager.response_mask, static.response_mask)
    assert torch.equal(eager.truncated, static.truncated)


@pytest.mark.parametrize("rows", [1, 5, 12])
@pytest.mark.parametrize(("greedy", "temperature", "top_p"), [(True, 1.0, 1.0), (False, 1.0, 1.0), (False, 0.7, 0.9)])
@pytest.mark.slow
def test_static_tokens_are_the_eager_samplers(policy, rows, greedy, temperature, top_p):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, rows)
    eager, static, eager_draws, static_draws = both_ways(
        model,
        ids,
        mask,
        tokenizer.eos_token_id,
        tokenizer.pad_token_id,
        max_new_tokens=24,
        greedy=greedy,
        temperature=temperature,
        top_p=top_p,
        with_logprobs=True,
    )
    assert_same(eager, static)
    torch.testing.assert_close(static.logprobs, eager.logprobs, rtol=0, atol=1e-5)
    assert torch.equal(eager_draws.get_state(), static_draws.get_state())  # what is drawn next is the same too


@pytest.mark.parametrize("end_check_every", [1, 5, 16, 64])
def test_a_batch_found_ended_late_takes_back_the_steps_and_draws_after_its_end(policy, end_check_every):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 8, seed=1)
    common = [3, 5, 7, 9, 11, tokenizer.eos_token_id]  # frequent end tokens: rows end early, at different steps
    eager, static, eager_draws, static_draws = both_ways(
        model,
        ids,
        mask,
        common,
        tokenizer.pad_token_id,
        end_check_every=end_check_every,
        max_new_tokens=40,
        with_logprobs=True,
    )
    assert eager.response_ids.shape[1] < 40 and not eager.truncated.any()  # the batch ended before its budget
    assert eager.lengths.unique().numel() > 1  # rows ended at different steps
    assert_same(eager, static)
    assert torch.equal(eager_draws.get_state(), static_draws.get_state())
    assert torch.equal(torch.rand(3, generator=eager_draws), torch.rand(3, generator=static_draws))


def test_progress_reports_the_budget_whatever_the_end(policy):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 4)
    ticks = []
    generate_static(model, ids, mask, 40, [3, 5, 7, tokenizer.eos_token_id], 0, on_step=ticks.append)
    assert sum(ticks) == 40


def test_a_kept_decoder_follows_the_weights_changed_in_place(policy):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 6)
    options = {"max_new_tokens": 16, "greedy": True}
    assert_same(*both_ways(model, ids, mask, tokenizer.eos_token_id, tokenizer.pad_token_id, **options)[:2])
    original = {name: parameter.detach().clone() for name, parameter in model.named_parameters()}
    try:
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter), alpha=0.05)  # an optimiser step moves them in place
        eager, static = both_ways(model, ids, mask, tokenizer.eos_token_id, tokenizer.pad_token_id, **options)[:2]
        assert_same(eager, static)
    finally:
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                parameter.copy_(original[name])


def test_decoders_are_kept_per_shape_and_prompt_widths_share_one(policy, monkeypatch):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 6)
    first = decoder_for(model, 6, ids.shape[1], 16, _encoded(model, ids, mask))
    wider = torch.cat([torch.full((6, 3), tokenizer.pad_token_id), ids], dim=1)
    wider_mask = torch.cat([torch.zeros(6, 3, dtype=mask.dtype), mask], dim=1)
    assert decoder_for(model, 6, wider.shape[1], 16, _encoded(model, wider, wider_mask)) is first
    for budget in (17, 18, 19):
        decoder_for(model, 6, ids.shape[1], budget, _encoded(model, ids, mask))
    kept = static_decoding._DECODERS[model]
    assert len(kept) == static_decoding.KEPT_DECODERS and first not in kept.values()
    assert first.graph is None and first.cache.keys == [] and first.cache.values == []  # released when dropped


@pytest.mark.parametrize(
    ("rows", "bucket"), [(1, 1), (2, 2), (5, 8), (24, 32), (64, 64), (65, 128), (108, 128), (512, 512)]
)
def test_rows_decode_in_a_power_of_two_bucket_then_in_multiples_of_64(rows, bucket):
    assert static_decoding.row_bucket(rows) == bucket


def test_batches_of_one_bucket_share_a_decoder_and_the_rows_left_from_a_larger_one_change_nothing(policy):
    model, tokenizer = policy
    static_decoding._DECODERS.pop(model, None)
    options = {"max_new_tokens": 20, "with_logprobs": True}
    larger = prompts(tokenizer, 7, seed=3)
    both_ways(model, *larger, tokenizer.eos_token_id, tokenizer.pad_token_id, **options)
    (decoder,) = static_decoding._DECODERS[model].values()
    assert decoder.rows == 8
    ids, mask = prompts(tokenizer, 5, seed=4)
    eager, static = both_ways(model, ids, mask, tokenizer.eos_token_id, tokenizer.pad_token_id, **options)[:2]
    assert list(static_decoding._DECODERS[model].values()) == [decoder] and decoder.batch == 5
    assert_same(eager, static)
    torch.testing.assert_close(static.logprobs, eager.logprobs, rtol=0, atol=1e-5)


def _encoded(model, ids, mask):
    from transformers import DynamicCache

    from algos.engine.generation import encode_prompts_once

    cache = DynamicCache(config=model.config)
    encode_prompts_once(model, ids, mask, cache)
    return cache


def test_sample_gives_the_same_responses_with_either_engine(policy):
    model, tokenizer = policy
    problems = make_task(TaskConfig(min_steps=1, max_steps=3)).problems("test", 4, seed=2)
    responses = {
        engine: sample(
            model,
            tokenizer,
            problems,
            24,
            group_size=3,
            generator=torch.Generator().manual_seed(9),
            with_logprobs=True,
            engine=engine,
        )
        for engine in ("eager", "static")
    }
    assert responses["eager"].texts == responses["static"].texts
    assert torch.equal(responses["eager"].sequences.response_ids, responses["static"].sequences.response_ids)


def test_no_deprecated_cache_argument_is_passed(policy):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 3)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*past_key_values.*", category=FutureWarning)
        generate(model, ids, mask, 8, tokenizer.eos_token_id, tokenizer.pad_token_id, greedy=True)
        generate_static(model, ids, mask, 8, tokenizer.eos_token_id, tokenizer.pad_token_id, greedy=True)


def test_auto_is_eager_on_the_cpu_and_static_names_why_it_cannot_run(policy):
    model, _ = policy
    assert resolve_engine("auto", model, processes=1) == "eager"
    assert resolve_engine("static", model, processes=1) == "static"
    with pytest.raises(ValueError, match=r"rollout.engine=static cannot run: the run has 2 processes"):
        resolve_engine("static", model, processes=2)
    with pytest.raises(ValueError, match=r"rollout.engine='fast' is not one of: auto, eager, static"):
        resolve_engine("fast", model, processes=1)
    model.config.use_sliding_window = True
    try:
        with pytest.raises(ValueError, match=r"or a sliding window; the static cache holds full attention only"):
            resolve_engine("static", model, processes=1)
    finally:
        model.config.use_sliding_window = False


@pytest.mark.slow
def test_the_compiled_step_draws_the_same_tokens(tiny_base):
    """The decode step compiled by torch.compile (inductor's fused kernels; on the CPU, C++), compiled once for the
    shape and reused: greedy and sampled tokens, masks and random state as the eager sampler's."""
    cfg = ModelConfig(name_or_path=str(tiny_base))
    model, tokenizer = load_policy(cfg).eval(), load_tokenizer(cfg)
    ids, mask = prompts(tokenizer, 5)
    for greedy in (True, False):
        eager_draws, compiled_draws = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
        options = {"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "greedy": greedy}
        eager = generate(model, ids, mask, 20, generator=eager_draws, with_logprobs=True, **options)
        compiled = generate_static(
            model, ids, mask, 20, generator=compiled_draws, with_logprobs=True, compiled=True, **options
        )
        assert_same(eager, compiled)
        torch.testing.assert_close(compiled.logprobs, eager.logprobs, rtol=0, atol=1e-5)
        assert torch.equal(eager_draws.get_state(), compiled_draws.get_state())
    assert resolve_engine("compiled", model, processes=1) == "compiled"


def test_weights_cast_once_give_autocasts_products_bit_for_bit(policy):
    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 4)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        autocast_cast = model(input_ids=ids, attention_mask=mask).logits
        with static_decoding.matmul_weights_cast_once(model, torch.bfloat16):
            assert model.lm_head.weight.dtype == torch.bfloat16
            assert model.model.embed_tokens.weight.dtype == torch.float32  # the tied embedding keeps its own
            cast_once = model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(cast_once, autocast_cast)
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())  # put back


def test_under_autocast_decoding_with_weights_cast_once_draws_what_it_draws_with_autocasts_casts(policy, monkeypatch):
    import contextlib

    model, tokenizer = policy
    ids, mask = prompts(tokenizer, 6, seed=2)

    def decoded():
        static_decoding._DECODERS.pop(model, None)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return generate_static(
                model,
                ids,
                mask,
                24,
                tokenizer.eos_token_id,
                tokenizer.pad_token_id,
                generator=torch.Generator().manual_seed(3),
                with_logprobs=True,
            )

    static_decoding._CAST_WEIGHTS.pop(model, None)  # the module's model: an earlier test may have cast it
    cast_once = decoded()
    kept = static_decoding._CAST_WEIGHTS[model][1]
    assert kept and all(copy.dtype == torch.bfloat16 for copy in kept.values())
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())
    monkeypatch.setattr(static_decoding, "matmul_weights_cast_once", lambda *args: contextlib.nullcontext())
    cast_every_step = decoded()
    assert torch.equal(cast_once.response_ids, cast_every_step.response_ids)
    assert torch.equal(cast_once.logprobs, cast_every_step.logprobs)
