"""A real Hugging Face tokenizer for the built-in task, built with ``tokenizers``.

Word-level over whitespace-separated symbols: every word of the task's vocabulary (numbers below its
modulus, operations, punctuation, ``answer``, ...) is one token. It is wrapped in
``PreTrainedTokenizerFast`` so that it saves with ``save_pretrained`` and loads back with
``AutoTokenizer.from_pretrained``, like any hub tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenizers import Tokenizer, decoders
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from tokenizers.processors import TemplateProcessing
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>"}


def build_tokenizer(vocabulary: Sequence[str]) -> PreTrainedTokenizerFast:
    """A tokenizer of the task's ``vocabulary`` (its ``vocabulary()``): special tokens first, then the words.

    Encoding adds ``<bos>`` in front (as a causal LM's prompt expects); ``<eos>`` ends a response.
    """
    words = [*SPECIAL_TOKENS.values(), *vocabulary]
    vocab = {word: index for index, word in enumerate(words)}
    core = Tokenizer(WordLevel(vocab, unk_token=SPECIAL_TOKENS["unk_token"]))
    core.pre_tokenizer = WhitespaceSplit()
    # Joins words with single spaces; saved with the tokenizer, so a reloaded copy decodes identically.
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    core.post_processor = TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    return PreTrainedTokenizerFast(tokenizer_object=core, padding_side="left", **SPECIAL_TOKENS)
