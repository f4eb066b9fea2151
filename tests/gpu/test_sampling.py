"""The lean sampler on CUDA: greedy tokens and sampled tokens are those of ``transformers``' ``generate`` on CUDA."""

import pytest
import torch

from algos.config.schema import ModelConfig
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
