"""The lean sampler on CUDA: greedy tokens and sampled tokens are those of ``transformers``' ``generate`` on CUDA;
the static decoder's are the eager loop's, and its graphs survive the garbage collector; keyed draws are the CPU's."""

import pytest
import torch

from algos.config.schema import ModelConfig
from algos.engine.keyed_draws import DrawKey, KeyedDraws, row_keys
from algos.engine.models import encode_prompts, load_policy, load_tokenizer
from eval.tasks.config import TaskConfig
from eval.tasks.sources import make_task
from tests.algos.engine.test_generation import greedy_both_ways, sampled_both_ways

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def on_cuda(tiny_base):
    """The tiny base on CUDA, its tokenizer, and 6 prompts of different lengths 4 times each (as groups), left-padded."""
    cfg = ModelConfig(name_or_path=str(tiny_base))
    tokenizer = load_tokenizer(cfg)
    problems = make_task(TaskConfig(min_steps=1, max_steps=3)).problems("test", 6, seed=0)
    prompts = [problem.prompt for problem in problems for _ in range(4)]
    ids, mask = encode_prompts(tokenizer, prompts, chat=None)
    assert not mask.all()  # some rows are padded
    return load_policy(cfg).to("cuda").eval(), tokenizer, ids.cuda(), mask.cuda()


def test_greedy_tokens_on_cuda_are_transformers_greedy_tokens(on_cuda):
    model, tokenizer, ids, mask = on_cuda
    ours, theirs = greedy_both_ways(model, tokenizer, ids, mask, 32)
    assert ours.response_ids.is_cuda and torch.equal(theirs, ours.response_ids)
    assert ours.truncated.any() or (ours.lengths < 32).any()


@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 0.9)])
def test_sampled_tokens_on_cuda_are_generates_from_the_same_random_state(on_cuda, temperature, top_p):
    model, tokenizer, ids, mask = on_cuda
    ours, theirs = sampled_both_ways(model, tokenizer, ids, mask, 32, temperature, top_p)
    assert torch.equal(theirs, ours.response_ids)


@pytest.mark.parametrize(
    ("greedy", "temperature", "top_p", "compiled"),
    [(True, 1.0, 1.0, False), (False, 1.0, 1.0, False), (False, 0.7, 0.9, False), (False, 1.0, 1.0, True)],
)
def test_the_static_cuda_graph_decoder_draws_the_eager_samplers_tokens(
    on_cuda, record_property, greedy, temperature, top_p, compiled
):
    """The decode step replayed as a CUDA graph against the eager loop, from the same CUDA random state: the share
    of rows that differ anywhere is recorded (the decoder's attention sums in another order than transformers'
    kernels, and a sampled row that once differs goes its own way), and must stay small."""
    from algos.engine import static_decoding
    from algos.engine.generation import generate

    model, tokenizer, ids, mask = on_cuda
    options = {
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "greedy": greedy,
        "temperature": temperature,
        "top_p": top_p,
        "with_logprobs": True,
    }
    eager_draws = torch.Generator("cuda").manual_seed(13)
    static_draws = torch.Generator("cuda").manual_seed(13)
    eager = generate(model, ids, mask, 32, generator=eager_draws, **options)
    static = static_decoding.generate_static(model, ids, mask, 32, generator=static_draws, compiled=compiled, **options)
    decoder = static_decoding.last_decoder(model)
    assert decoder.graph is not None and decoder.capture_seconds > 0
    width = min(eager.response_ids.shape[1], static.response_ids.shape[1])
    differing_rows = (eager.response_ids[:, :width] != static.response_ids[:, :width]).any(dim=-1)
    share = float(differing_rows.float().mean())
    record_property("differing_row_share", share)
    record_property("capture_seconds", round(decoder.capture_seconds, 3))
    same = ~differing_rows
    if same.any():
        gap = (eager.logprobs[same, :width] - static.logprobs[same, :width]).abs().max()
        record_property("logprob_gap_same_rows", float(gap))
    assert share <= 0.1
    if share == 0:
        assert torch.equal(eager.response_ids, static.response_ids) and torch.equal(eager.truncated, static.truncated)


def test_a_graph_collected_as_garbage_cannot_fall_into_another_capture(on_cuda, monkeypatch):
    """A decoder left unreachable (in a reference cycle, as a bound method keeps it) is collected whenever the
    collector runs; were that during another decoder's capture, its graph's destruction would invalidate it."""
    import gc

    from algos.engine import static_decoding

    model, tokenizer, ids, mask = on_cuda
    options = {"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "greedy": True}
    static_decoding._DECODERS.pop(model, None)
    monkeypatch.setattr(static_decoding, "KEPT_DECODERS", 100)
    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # a collection at nearly every allocation of a Python object
    try:
        for rows in (3, 7, 13, 24):  # four buckets, four captures
            static_decoding._DECODERS.pop(model, None)  # the last decoder unreachable, its graph not released
            static_decoding.generate_static(model, ids[:rows], mask[:rows], 8, **options)
            assert static_decoding.last_decoder(model).graph is not None
    finally:
        gc.set_threshold(*thresholds)


def test_keyed_draws_on_cuda_are_the_cpus():
    """The hash is exact integer arithmetic on both; only the logarithm may round differently (float64, then float32)."""
    keys = row_keys(DrawKey(17), ["a", "b", "c"], 4)
    probs = torch.full((12, 1000), 1e-3)
    on_cpu, on_gpu = KeyedDraws(keys), KeyedDraws(keys, "cuda")
    for _ in range(3):
        assert torch.allclose(on_gpu.exponentials(probs.cuda()).cpu(), on_cpu.exponentials(probs), rtol=1e-6, atol=0)
