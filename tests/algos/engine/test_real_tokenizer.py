"""A real BPE tokenizer and model through sampling and scoring: the chat template once, every end token stopping
a response, the end token in the loss mask when it is also the pad token, long left-padded prompts scored as
alone, and the graded text exactly the scored tokens. The SmolLM2 tests use the converted real model."""

from types import SimpleNamespace

import pytest
import torch
from torch.testing import assert_close
from transformers import GenerationConfig

from algos.config.presets import load_config
from algos.engine.generation import generate
from algos.engine.models import (
    ChatFormat,
    chat_format,
    decode_responses,
    encode_prompts,
    end_token_ids,
    load_policy,
    load_tokenizer,
)
from algos.engine.sequences import SequenceBatch, response_logprobs
from eval.tasks.config import TaskConfig
from eval.tasks.sources import make_task
from eval.tasks.tokenizer import build_tokenizer

pytestmark = pytest.mark.xdist_group("smollm2")  # in the whole suite, one worker converts the model (minutes)

LONG = "Tom has " + ", then ".join(f"{n} apples" for n in range(60)) + ". How many apples does Tom have in the end?"


@pytest.fixture(scope="module")
def smol(smollm2):
    cfg = load_config(overrides=[f"model.name_or_path={smollm2}", "model.dtype=float32"])
    tokenizer = load_tokenizer(cfg.model)
    return tokenizer, load_policy(cfg.model).eval(), chat_format(cfg.model, tokenizer)


def test_the_chat_template_is_applied_once_and_adds_no_second_start(smol):
    tokenizer, _, chat = smol
    assert chat
    ids, mask = encode_prompts(tokenizer, ["What is 12 + 7?"], chat)
    text = tokenizer.decode(ids[0][mask[0].bool()])
    assert text.count("<|im_start|>user\nWhat is 12 + 7?<|im_end|>") == 1
    assert text.count("<|im_start|>system") == 1 and text.endswith("<|im_start|>assistant\n")
    assert text.startswith("<|im_start|>system")  # nothing (a BOS) added in front of the template


def test_a_system_prompt_replaces_the_templates_default_system_turn(smol, smollm2):
    tokenizer, _, _ = smol
    ids, mask = encode_prompts(tokenizer, ["What is 12 + 7?"], ChatFormat("Answer with one number."))
    text = tokenizer.decode(ids[0][mask[0].bool()])
    assert text.startswith("<|im_start|>system\nAnswer with one number.<|im_end|>\n<|im_start|>user\nWhat is 12 + 7?")
    assert text.count("<|im_start|>system") == 1
    cfg = load_config(
        overrides=[f"model.name_or_path={smollm2}", "model.chat_template=never", "model.system_prompt=Hi"]
    )
    with pytest.raises(ValueError, match="model.system_prompt is set but prompts .* do not go through a chat template"):
        chat_format(cfg.model, tokenizer)


@pytest.mark.slow
def test_every_end_token_of_the_generation_config_ends_a_response(smol):
    tokenizer, model, chat = smol
    ids, mask = encode_prompts(tokenizer, ["Count from one to ten in words."], chat)
    first = generate(model, ids, mask, 6, end_token_ids(tokenizer, model), tokenizer.pad_token_id, greedy=True)
    second_token = int(first.response_ids[0, 1])
    assert first.truncated.all()  # the greedy answer runs past 6 tokens, so only the added end token can stop it
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, second_token]  # e.g. Qwen2.5's two ends
    try:
        ends = end_token_ids(tokenizer, model)
        assert ends == (tokenizer.eos_token_id, second_token)
        stopped = generate(model, ids, mask, 6, ends, tokenizer.pad_token_id, greedy=True)
    finally:
        model.generation_config.eos_token_id = tokenizer.eos_token_id
    assert stopped.lengths.tolist() == [2] and not stopped.truncated.any()
    assert stopped.response_ids[0, :2].tolist() == first.response_ids[0, :2].tolist()


@pytest.mark.slow
def test_the_end_token_stays_in_the_mask_when_it_is_the_pad_token(smol):
    tokenizer, model, chat = smol
    assert tokenizer.pad_token_id == tokenizer.eos_token_id
    calls = []

    def end_at_the_third_token(module, inputs, logits):  # the prompt pass, two steps, then the end token
        calls.append(1)
        return logits if len(calls) < 3 else logits.index_fill(-1, torch.tensor([tokenizer.eos_token_id]), 1e4)

    ids, mask = encode_prompts(tokenizer, ["Say yes.", "Say no, twice."], chat)
    handle = model.lm_head.register_forward_hook(end_at_the_third_token)
    try:
        result = generate(model, ids, mask, 8, end_token_ids(tokenizer, model), tokenizer.pad_token_id, greedy=True)
    finally:
        handle.remove()
    assert result.lengths.tolist() == [3, 3] and not result.truncated.any()
    assert result.response_ids[:, 2].tolist() == [tokenizer.eos_token_id] * 2
    assert result.response_mask.tolist() == [[1, 1, 1], [1, 1, 1]]  # the end token is a scored token


@pytest.mark.parametrize("share_prompts", [True, False])
@pytest.mark.slow
def test_a_long_left_padded_prompt_is_scored_as_alone(smol, share_prompts):
    tokenizer, model, chat = smol
    prompts = [LONG, "Hi"]
    ids, mask = encode_prompts(tokenizer, prompts, chat)
    assert mask.sum(dim=-1).tolist()[0] > 300 and mask[1].sum() < 40  # hundreds of pad tokens before the short one
    responses = torch.tensor([[59, 60, 61, tokenizer.eos_token_id], [62, 63, tokenizer.eos_token_id, 2]])
    response_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    together, _ = response_logprobs(
        model, SequenceBatch(ids, mask, responses, response_mask), 1.0, share_prompts=share_prompts
    )
    for row, prompt in enumerate(prompts):
        alone_ids, alone_mask = encode_prompts(tokenizer, [prompt], chat)
        batch = SequenceBatch(alone_ids, alone_mask, responses[row : row + 1], response_mask[row : row + 1])
        alone, _ = response_logprobs(model, batch, 1.0)
        real = response_mask[row].bool()
        assert_close(together[row][real], alone[0][real], atol=1e-4, rtol=1e-4)


def test_the_graded_text_is_exactly_the_scored_tokens_whatever_the_pad_token(smol):
    tokenizer, _, _ = smol
    scored = tokenizer("The answer is 19.", add_special_tokens=False)["input_ids"]
    ordinary_pad = tokenizer.convert_tokens_to_ids("a")  # a pad that is a word, as some tokenizers have
    ids = torch.tensor([[*scored, tokenizer.eos_token_id, ordinary_pad, ordinary_pad]])
    lengths = torch.tensor([len(scored) + 1])
    assert decode_responses(tokenizer, ids, lengths) == ["The answer is 19."]


def test_the_built_in_tokenizers_texts_are_unchanged():
    """With the built-in tokenizer (special pad) the exact decode equals the whole-row decode used before."""
    tokenizer = build_tokenizer(make_task(TaskConfig()).vocabulary())
    words = torch.randint(5, len(tokenizer), (16, 12))
    lengths = torch.randint(1, 13, (16,))
    ids = torch.where(torch.arange(12) < lengths.unsqueeze(-1), words, tokenizer.pad_token_id)
    ids[torch.arange(16), lengths - 1] = tokenizer.eos_token_id
    assert decode_responses(tokenizer, ids, lengths) == tokenizer.batch_decode(ids, skip_special_tokens=True)


def test_end_token_ids_reads_a_list_or_a_single_id():
    tokenizer = build_tokenizer(make_task(TaskConfig()).vocabulary())
    model = SimpleNamespace(generation_config=GenerationConfig(eos_token_id=tokenizer.eos_token_id))
    assert end_token_ids(tokenizer, model) == (tokenizer.eos_token_id,)
    model.generation_config.eos_token_id = [7, tokenizer.eos_token_id, 9]
    assert end_token_ids(tokenizer, model) == (tokenizer.eos_token_id, 7, 9)
