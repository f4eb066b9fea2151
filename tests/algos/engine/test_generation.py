import pytest
import torch

from algos.config.schema import ModelConfig
from algos.engine.generation import distinct_prompts, generate, position_ids, sample_tokens
from algos.engine.models import encode_prompts, load_policy, load_tokenizer
from algos.engine.sequences import SequenceBatch, chunked_response_logprobs, chunked_unsupported, response_logprobs

PROMPTS = ["1 a + 2 ;", "3 a * 3 b - 5 ;", "7 a - 8 b * 9 c + 1 ;"]


@pytest.fixture
def policy(tiny_base):
    cfg = ModelConfig(name_or_path=str(tiny_base))
    return load_policy(cfg).eval(), load_tokenizer(cfg)


def _generate(model, tokenizer, prompts, **kwargs):
    ids, mask = encode_prompts(tokenizer, prompts, chat=None)
    return ids, mask, generate(model, ids, mask, 24, tokenizer.eos_token_id, tokenizer.pad_token_id, **kwargs)


def test_position_ids_count_real_tokens_only():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 0, 1]])
    assert position_ids(mask).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4], [0, 0, 1, 1, 2]]


def test_left_padded_batch_decodes_like_each_prompt_alone(policy):
    model, tokenizer = policy
    _, _, batched = _generate(model, tokenizer, PROMPTS, greedy=True)
    for row, prompt in enumerate(PROMPTS):
        _, _, alone = _generate(model, tokenizer, [prompt], greedy=True)
        width = alone.response_ids.shape[1]
        assert batched.response_ids[row, :width].tolist() == alone.response_ids[0].tolist()
        assert batched.response_mask[row].sum() == alone.response_mask[0].sum()


def test_masks_end_at_eos_and_flag_truncation(policy):
    model, tokenizer = policy
    _, _, result = _generate(model, tokenizer, PROMPTS * 4, generator=torch.Generator().manual_seed(3))
    for ids, mask, truncated in zip(result.response_ids, result.response_mask, result.truncated, strict=True):
        length = int(mask.sum())
        assert mask[:length].all() and not mask[length:].any()
        ended = (ids[:length] == tokenizer.eos_token_id).nonzero().flatten().tolist()
        assert ended == ([] if truncated else [length - 1])
        assert (ids[length:] == tokenizer.pad_token_id).all()


def test_same_generator_seed_gives_same_samples(policy):
    model, tokenizer = policy
    first = _generate(model, tokenizer, PROMPTS, generator=torch.Generator().manual_seed(7))[2]
    again = _generate(model, tokenizer, PROMPTS, generator=torch.Generator().manual_seed(7))[2]
    assert torch.equal(first.response_ids, again.response_ids)


def test_tiny_top_p_is_greedy():
    logits = torch.tensor([[0.1, 2.0, 0.3], [1.5, 0.0, 1.4]])
    tokens = sample_tokens(logits, 1.0, 1e-6, torch.Generator().manual_seed(0))
    assert tokens.tolist() == [1, 0]


def test_recomputed_logprobs_match_an_unpadded_forward(policy):
    model, tokenizer = policy
    ids, mask, result = _generate(model, tokenizer, PROMPTS, generator=torch.Generator().manual_seed(1))
    batch = SequenceBatch(ids, mask, result.response_ids, result.response_mask)
    logprobs, _ = response_logprobs(model, batch, temperature=0.7)
    for row in range(len(PROMPTS)):
        prompt = ids[row][mask[row].bool()]
        response = result.response_ids[row][result.response_mask[row].bool()]
        logits = model(torch.cat([prompt, response]).unsqueeze(0)).logits[0, len(prompt) - 1 : -1] / 0.7
        alone = torch.log_softmax(logits.float(), -1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        torch.testing.assert_close(logprobs[row, : len(response)], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("temperature", "top_p"), [(1.0, 1.0), (0.7, 0.9)])
def test_the_samplers_logprobs_are_a_scoring_pass_to_float_rounding(policy, temperature, top_p):
    model, tokenizer = policy
    options = {"temperature": temperature, "top_p": top_p}
    ids, mask, plain = _generate(model, tokenizer, PROMPTS * 4, generator=torch.Generator().manual_seed(2), **options)
    generator = torch.Generator().manual_seed(2)
    _, _, result = _generate(model, tokenizer, PROMPTS * 4, generator=generator, with_logprobs=True, **options)
    assert plain.logprobs is None
    assert torch.equal(result.response_ids, plain.response_ids)  # asking for them changes no token
    scored, _ = response_logprobs(
        model, SequenceBatch(ids, mask, result.response_ids, result.response_mask), temperature
    )
    torch.testing.assert_close(result.logprobs, scored * result.response_mask, atol=1e-5, rtol=1e-5)
    assert (result.logprobs[result.response_mask == 0] == 0).all()
    assert (result.logprobs[result.response_mask == 1] < 0).all()


EQUAL_WIDTH = ["1 a + 2 ;", "3 a * 3 ;", "7 a - 8 ;"]  # no padding: attention runs without a mask


@pytest.mark.parametrize(
    ("temperature", "top_p", "prompts"),
    [(1.0, 1.0, PROMPTS * 6), (0.7, 1.0, PROMPTS * 6), (1.0, 0.8, PROMPTS * 6), (1.0, 1.0, EQUAL_WIDTH * 6)],
)
def test_samples_are_the_tokens_transformers_generate_draws_from_the_same_random_state(
    policy, temperature, top_p, prompts
):
    """Same logits, same distribution, same multinomial draws: the lean sampler reproduces ``generate`` token for token."""
    model, tokenizer = policy
    ids, mask = encode_prompts(tokenizer, prompts, chat=None)  # 18 rows, groups of one prompt
    assert bool(mask.all()) == (set(prompts) == set(EQUAL_WIDTH))
    ours, theirs = sampled_both_ways(model, tokenizer, ids, mask, 32, temperature, top_p)
    assert theirs.shape == ours.response_ids.shape
    assert torch.equal(theirs, ours.response_ids)
    assert ours.truncated.any() and not ours.truncated.all()  # rows ended at different lengths
    assert (ours.lengths < 31).sum() >= len(prompts) / 4  # enough ended early for the batch to shrink


def test_distinct_prompts_index_every_row():
    ids = torch.tensor([[0, 5, 6], [1, 2, 3], [0, 5, 6], [1, 2, 3], [0, 5, 7]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 1, 1]])
    first, inverse = distinct_prompts(ids, mask)
    assert len(first) == 3 and torch.equal(ids[first][inverse], ids) and torch.equal(mask[first][inverse], mask)
    assert sorted(first.tolist()) == [0, 1, 4]  # the first row holding each prompt
    padded_differently = distinct_prompts(torch.tensor([[0, 5], [0, 5]]), torch.tensor([[0, 1], [1, 1]]))[0]
    assert len(padded_differently) == 2  # the same ids under another mask are another prompt


def test_sharing_each_prompt_gives_the_joined_passs_logprobs_entropies_and_gradients(policy):
    model, tokenizer = policy
    prompts = [prompt for prompt in PROMPTS for _ in range(4)]  # groups of 4 rows with one prompt each
    ids, mask, result = _generate(model, tokenizer, prompts, generator=torch.Generator().manual_seed(2))
    batch = SequenceBatch(ids, mask, result.response_ids, result.response_mask)
    weights = result.response_mask.float()
    outputs = []
    for share in (True, False):
        model.zero_grad()
        logprobs, entropy = response_logprobs(model, batch, 0.7, with_entropy=True, share_prompts=share)
        ((logprobs + 0.1 * entropy) * weights).sum().backward()
        outputs.append((logprobs * weights, entropy * weights, [p.grad.clone() for p in model.parameters()]))
    (shared, shared_entropy, shared_grads), (joined, joined_entropy, joined_grads) = outputs
    torch.testing.assert_close(shared, joined, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared_entropy, joined_entropy, atol=1e-5, rtol=1e-5)
    for mine, theirs in zip(shared_grads, joined_grads, strict=True):
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-4)
    one_token = SequenceBatch(ids, mask, result.response_ids[:, :1], result.response_mask[:, :1])
    torch.testing.assert_close(
        response_logprobs(model, one_token, 1.0)[0], response_logprobs(model, one_token, 1.0, share_prompts=False)[0]
    )


@pytest.mark.parametrize("chunk_tokens", [7, 1024])
def test_chunked_logprobs_are_the_whole_logits_ones_in_values_and_gradients(policy, chunk_tokens):
    """The output layer a chunk at a time (recomputed in backward) against log-softmax over the whole (B, T, V) logits."""
    model, tokenizer = policy
    model.float()
    ids, mask, result = _generate(model, tokenizer, PROMPTS * 3, generator=torch.Generator().manual_seed(4))
    batch = SequenceBatch(ids, mask, result.response_ids, result.response_mask)
    weights = result.response_mask.float()
    assert result.response_ids.numel() > 2 * 7  # several chunks at 7 tokens
    outputs = []
    for chunked in (True, False):
        model.zero_grad()
        if chunked:
            logprobs, entropy = chunked_response_logprobs(model, batch, 0.7, chunk_tokens=chunk_tokens)
        else:
            logprobs, entropy = response_logprobs(model, batch, 0.7, with_entropy=True, share_prompts=False)
        assert logprobs.dtype == entropy.dtype == torch.float32
        ((logprobs + 0.1 * entropy) * weights).sum().backward()
        outputs.append((logprobs, entropy, [p.grad.clone() for p in model.parameters()]))
    (chunks, chunk_entropy, chunk_grads), (whole, whole_entropy, whole_grads) = outputs
    torch.testing.assert_close(chunks, whole, atol=1e-6, rtol=0)
    torch.testing.assert_close(chunk_entropy, whole_entropy, atol=1e-6, rtol=0)
    for mine, theirs in zip(chunk_grads, whole_grads, strict=True):  # sums over all tokens: rounding adds up
        torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-4)


def test_chunked_logprobs_name_the_models_they_cannot_split(policy):
    model, _ = policy
    assert chunked_unsupported(model) is None
    assert "wrapped for several processes" in chunked_unsupported(_wrapped(model))
    model_type = model.config.model_type
    model.config.model_type = "gemma2"
    try:
        assert chunked_unsupported(model) == "its model type is 'gemma2', not one of llama, qwen2, qwen3, mistral"
    finally:
        model.config.model_type = model_type


def _wrapped(model):
    wrapper = torch.nn.Module()
    wrapper.module = model
    return wrapper


def test_greedy_tokens_are_transformers_greedy_tokens(policy):
    model, tokenizer = policy
    ids, mask = encode_prompts(tokenizer, PROMPTS * 6, chat=None)
    ours, theirs = greedy_both_ways(model, tokenizer, ids, mask, 24)
    assert torch.equal(theirs, ours.response_ids)


def sampled_both_ways(model, tokenizer, ids, mask, max_new_tokens, temperature, top_p, seed=11):
    """(the lean sampler's Generation, ``transformers``' ``generate`` response ids), each drawn from the global
    random state seeded with ``seed``, at ``temperature`` and ``top_p`` with no top-k."""
    torch.manual_seed(seed)
    ours = generate(
        model, ids, mask, max_new_tokens, tokenizer.eos_token_id, tokenizer.pad_token_id,
        temperature=temperature, top_p=top_p,
    )  # fmt: skip
    torch.manual_seed(seed)
    theirs = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=True,
        temperature=temperature,
        top_p=top_p,
        top_k=0,
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )[:, ids.shape[1] :]
    return ours, theirs


def greedy_both_ways(model, tokenizer, ids, mask, max_new_tokens):
    """(the lean sampler's greedy Generation, ``transformers``' greedy ``generate`` response ids)."""
    ours = generate(model, ids, mask, max_new_tokens, tokenizer.eos_token_id, tokenizer.pad_token_id, greedy=True)
    theirs = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=False,
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )[:, ids.shape[1] :]
    return ours, theirs
