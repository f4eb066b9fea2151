"""Decoding into a static KV cache: a fixed batch whose decode step is one CUDA graph on a GPU.

The eager sampler (:func:`~algos.engine.generation.generate`) grows its cache a column a step, drops
ended rows from the batch and asks the device after every token whether all rows have ended: on a
GPU each decode step is some hundreds of kernel launches and a host synchronisation, and the card
idles between them. Here the batch keeps all N rows to the end, the keys and values go into
buffers of a fixed width (prompt columns + the generation budget), the attention mask is a fixed
(N, 1, 1, L) tensor updated in place, and the ended rows are looked at every ``end_check_every``
steps. Every tensor the decode step reads or writes then keeps its address, so on CUDA the step is
captured once as a CUDA graph and replayed: one launch a step, no synchronisation inside it.
Sampling stays outside the graph (softmax, nucleus cut-off and the exponential draws of
:func:`~algos.engine.generation.sample_tokens`, which never synchronise). The step attends with
:func:`grouped_decode_attention`, which reads each key/value head once for all the query heads it serves.

The contract is the eager sampler's tokens from the same random state. The prompts are encoded by
the eager sampler's own pass (:func:`~algos.engine.generation.encode_prompts_once`) and copied into
the buffers; each step draws the random numbers of all N rows, as the eager sampler does, and when
the batch is found ended some steps late, the generator is put back to its state just after the
step that ended it, so what follows draws exactly what it would after the eager sampler. The masked
columns the eager sampler does not have weigh exactly 0 in the softmax; the attention sums in another
order than transformers' kernels, so logits differ by float rounding, which the tests measure as a share
of differing tokens (none on the CPU in float32).

A decoder (its buffers and its graph) is kept per model for the last few batch shapes, since a run
samples the same shapes every step; the prompt columns are rounded up to :data:`PROMPT_COLUMNS` and
the rows up to a bucket (:func:`row_bucket`), so prompts of different widths and the varying rounds of
dynamic sampling share a few. A batch fills the first rows of its bucket; the rows beyond it decode
what they are given and are never read. The graph reads the weights where they are, so optimiser
steps (in place) need no new capture. A decoder dropped from the kept ones releases its graph at
once, and no garbage collection runs during a capture: a graph destroyed while another is being
captured invalidates that capture.

Under autocast (float32 weights, bf16 matrix products) autocast casts every matrix's weights again at
every step; here the linear layers' weights are cast once a call instead, into copies the steps read
(:func:`matmul_weights_cast_once`): the same bf16 values, so the same products bit for bit.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence

import torch
from transformers import AttentionInterface, Cache, DynamicCache, PreTrainedModel

from algos.core.logprobs import token_logprobs
from algos.engine.generation import (
    Draws,
    Generation,
    cache_keyword,
    encode_prompts_once,
    position_ids,
    sample_tokens,
)

ENGINES = ("auto", "eager", "static", "compiled")
"""``rollout.engine``: auto (static on CUDA where the model allows it, else eager), eager, static, compiled (static
with its step compiled by ``torch.compile``)."""

PROMPT_COLUMNS = 64
"""The cache's prompt columns are the prompt width rounded up to a multiple of this."""

END_CHECK_EVERY = 16
"""Decode steps between two looks at whether every row has ended (each look synchronises with the device)."""

KEPT_DECODERS = 3
"""Decoders (buffers and graphs) kept per model, the most recently used."""

ROW_BUCKET = 64
"""Batches of up to this many rows decode in a power-of-two bucket, larger ones in a multiple of it."""

DECODE_ATTENTION = "static_decode"
"""The name :func:`grouped_decode_attention` is registered under with transformers' attention functions."""


def _rounded_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def row_bucket(rows: int) -> int:
    """The decoder rows a batch of ``rows`` rows decodes in: the next power of two up to :data:`ROW_BUCKET`, else
    the next multiple of it (e.g. 5 -> 8, 24 -> 32, 68 -> 128, 512 -> 512)."""
    if rows <= ROW_BUCKET:
        return 1 << max(rows - 1, 0).bit_length()
    return _rounded_up(rows, ROW_BUCKET)


def static_unsupported(model: PreTrainedModel) -> str | None:
    """Why ``model`` cannot decode into a static cache, or None when it can."""
    config = model.config
    kinds = set(getattr(config, "layer_types", None) or ["full_attention"])
    if kinds != {"full_attention"} or getattr(config, "use_sliding_window", False):
        return f"it has layers of kinds {sorted(kinds)} or a sliding window; the static cache holds full attention only"
    return None


def resolve_engine(engine: str, model: PreTrainedModel, processes: int) -> str:
    """``eager``, ``static`` or ``compiled`` for ``rollout.engine`` = ``engine`` on ``model`` in a run of ``processes``
    processes.

    auto: static on CUDA in one process, unsharded, where the model allows it (:func:`static_unsupported`), else eager.
    static or compiled where they cannot run fails naming why.
    """
    if engine not in ENGINES:
        raise ValueError(f"rollout.engine={engine!r} is not one of: {', '.join(ENGINES)}")
    why = static_unsupported(model)
    if processes > 1:
        why = f"the run has {processes} processes; the static cache decodes one process's whole batch"
    elif _sharded(model):
        why = "the model is sharded (FSDP), which gathers its weights at every forward call"
    if engine == "auto":
        on_cuda = next(model.parameters()).device.type == "cuda"
        return "static" if on_cuda and why is None else "eager"
    if engine != "eager" and why is not None:
        raise ValueError(f"rollout.engine={engine} cannot run: {why}; use rollout.engine=eager or auto")
    return engine


def _sharded(model: torch.nn.Module) -> bool:
    from torch.distributed.fsdp import FSDPModule

    return any(isinstance(module, FSDPModule) for module in model.modules())


def grouped_decode_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor,
    scaling: float | None = None,
    **kwargs: object,
) -> tuple[torch.Tensor, None]:
    """Attention of each row's one new position over its cache, every key/value head read once for the query heads
    it serves: query (N, H, 1, D), key and value (N, H_kv, L, D), attention_mask (N, 1, 1, L) bool (True: visible)
    -> ((N, 1, H, D), None).

    transformers' sdpa and eager attention copy each key/value head to its H / H_kv query heads first
    (``repeat_kv``, two (N, H, L, D) tensors a layer a step) whenever a mask is given: on a GPU that copy was
    most of a large batch's decode step. Query head h reads key/value head h // (H / H_kv), as there.
    """
    rows, heads, _, width = query.shape
    kv_heads = key.shape[1]
    grouped = query.reshape(rows, kv_heads, heads // kv_heads, width)  # (N, H_kv, H / H_kv, D)
    scores = torch.matmul(grouped, key.transpose(-1, -2)) * (width**-0.5 if scaling is None else scaling)
    scores = scores.float().masked_fill(~attention_mask, -math.inf)  # (N, H_kv, H / H_kv, L)
    weights = torch.softmax(scores, dim=-1).to(value.dtype)
    output = torch.matmul(weights, value)  # (N, H_kv, H / H_kv, D)
    return output.reshape(rows, heads, 1, width).transpose(1, 2), None


AttentionInterface.register(DECODE_ATTENTION, grouped_decode_attention)


@contextlib.contextmanager
def _decode_attention(model: PreTrainedModel) -> Iterator[None]:
    """``model`` attends with :func:`grouped_decode_attention` inside the block (its own choice is put back after)."""
    own = model.config._attn_implementation
    model.config._attn_implementation = DECODE_ATTENTION
    try:
        yield
    finally:
        model.config._attn_implementation = own


class StaticKVCache(Cache):
    """Keys and values of N rows in fixed (N, H_kv, L, D) buffers, a pair per layer, written at column ``write_at``.

    The model calls nothing of it but :meth:`update` (its mask comes prepared, its positions given) and, on
    the way to its prepared mask, reads the kinds of its layers: it lists none (transformers' cache base is
    not initialised), which reads as full attention throughout.
    """

    def __init__(self, keys: list[torch.Tensor], values: list[torch.Tensor], write_at: torch.Tensor):
        self.keys, self.values, self.write_at = keys, values, write_at  # write_at: (1,) long, on the device
        self.layers: list[object] = []

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: object, **kwargs: object
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write one step's (N, H_kv, 1, D) keys and values at ``write_at``; return the layer's whole buffers."""
        self.keys[layer_idx].index_copy_(2, self.write_at, key_states.to(self.keys[layer_idx].dtype))
        self.values[layer_idx].index_copy_(2, self.write_at, value_states.to(self.values[layer_idx].dtype))
        return self.keys[layer_idx], self.values[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """Columns written before the step (read by transformers versions that derive cache positions)."""
        return 0


class StaticDecoder:
    """The decode step of up to ``rows`` rows over ``prompt_columns`` + ``budget`` cache columns, captured as a CUDA
    graph on CUDA.

    layers: per layer, a (keys, values) pair of the encoded prompts, (N, H_kv, T_prompt, D): the buffers take
    their dtype, heads and head width. ``compiled``: the step compiled by ``torch.compile`` (inductor fuses its
    elementwise kernels) before it is captured; compiling takes a while, once a decoder. Call :meth:`start` with a
    batch's encoded prompts (N <= ``rows``), then :meth:`step` with each drawn token. The model is held weakly
    (the decoders are kept per model).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        rows: int,
        prompt_columns: int,
        budget: int,
        layers: Sequence[tuple[torch.Tensor, torch.Tensor]],
        compiled: bool = False,
    ):
        device = layers[0][0].device
        columns = prompt_columns + budget
        self._model = weakref.ref(model)
        self.rows, self.prompt_columns = rows, prompt_columns
        self.batch = rows  # the rows of the loaded batch, the first of the buffers' rows
        self.keyword = cache_keyword(model)
        keys = [torch.zeros(rows, k.shape[1], columns, k.shape[3], dtype=k.dtype, device=device) for k, _ in layers]
        values = [torch.zeros(rows, v.shape[1], columns, v.shape[3], dtype=v.dtype, device=device) for _, v in layers]
        self.cache = StaticKVCache(keys, values, torch.zeros(1, dtype=torch.long, device=device))
        self.input_ids = torch.zeros(rows, 1, dtype=torch.long, device=device)  # (N, 1)
        self.positions = torch.zeros(rows, 1, dtype=torch.long, device=device)  # (N, 1)
        self.visible = torch.zeros(rows, 1, 1, columns, dtype=torch.bool, device=device)  # (N, 1, 1, L)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None  # (N, V): where the graph writes its output
        self.capture_seconds = 0.0
        self._step = torch.compile(self._forward, dynamic=False) if compiled else self._forward
        if device.type == "cuda":
            self._capture()

    def _forward(self) -> torch.Tensor:
        """One decode step on the buffers: the (N, V) logits of the next token; the write column and positions advance."""
        self.visible.index_fill_(-1, self.cache.write_at, True)
        model = self._model()
        with _decode_attention(model):
            logits = model(
                input_ids=self.input_ids,
                attention_mask=self.visible,
                position_ids=self.positions,
                **{self.keyword: self.cache},
            ).logits[:, -1]
        self.cache.write_at.add_(1)
        self.positions.add_(1)
        return logits

    def _capture(self) -> None:
        """Warm the step up on a side stream (its lazy allocations and kernel choices), then capture it."""
        started = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self._step()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        collecting = gc.isenabled()
        gc.disable()  # a collection here could destroy an unreachable decoder's graph mid-capture
        try:
            with torch.cuda.graph(self.graph):
                self.logits = self._step()
        finally:
            if collecting:
                gc.enable()
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - started

    def release(self) -> None:
        """Free the graph and the buffers now (the decoder is not used again)."""
        if self.graph is not None:
            self.graph.reset()
        self.graph = self.logits = None
        self.cache.keys.clear()
        self.cache.values.clear()

    def start(self, prompt_cache: DynamicCache, prompt_mask: torch.Tensor, next_position: torch.Tensor) -> None:
        """Load a batch into the first N rows: the prompts' keys and values (``prompt_cache``, N rows of T_prompt
        columns) right-aligned in the prompt columns, their mask (N, T_prompt), and each row's first response
        position (N, 1). The rows beyond see only the columns the steps write (never none, so never a 0/0)."""
        rows, width = prompt_mask.shape
        offset = self.prompt_columns - width
        for layer, (keys, values) in enumerate(_layer_tensors(prompt_cache)):
            self.cache.keys[layer][:rows, :, offset : self.prompt_columns].copy_(keys)
            self.cache.values[layer][:rows, :, offset : self.prompt_columns].copy_(values)
        self.visible.zero_()
        self.visible[:rows, 0, 0, offset : self.prompt_columns] = prompt_mask.bool()
        self.cache.write_at.fill_(self.prompt_columns)
        self.positions.zero_()
        self.positions[:rows].copy_(next_position)
        self.batch = rows

    def step(self, token: torch.Tensor) -> torch.Tensor:
        """Feed each row's drawn token (N,); the (N, V) logits of the next."""
        self.input_ids[: self.batch].copy_(token.unsqueeze(-1))
        if self.graph is None:
            return self._step()[: self.batch]
        self.graph.replay()
        return self.logits[: self.batch]


_CAST_WEIGHTS: weakref.WeakKeyDictionary[PreTrainedModel, tuple[tuple, dict[torch.nn.Linear, torch.nn.Parameter]]] = (
    weakref.WeakKeyDictionary()
)


@contextlib.contextmanager
def matmul_weights_cast_once(model: PreTrainedModel, dtype: torch.dtype) -> Iterator[None]:
    """Inside the block every linear layer of ``model`` whose weight is not in ``dtype`` reads a copy cast to
    ``dtype`` (refreshed on entry, kept per model at the same addresses); its own weight is put back after.

    Meant for ``dtype`` = the autocast dtype the model's products run in: autocast casts a weight to it at every
    call, and casts a weight already in it not at all, so the products are the same bit for bit.
    """
    layers = [m for m in model.modules() if isinstance(m, torch.nn.Linear) and m.weight.dtype != dtype]
    if not layers:
        yield
        return
    sources = tuple(layer.weight.data_ptr() for layer in layers)
    kept = _CAST_WEIGHTS.get(model)
    if kept is None or kept[0] != sources:
        copies = {layer: torch.nn.Parameter(layer.weight.detach().to(dtype), requires_grad=False) for layer in layers}
        _CAST_WEIGHTS[model] = kept = (sources, copies)
    own = {layer: layer.weight for layer in layers}
    try:
        for layer, copy in kept[1].items():
            copy.data.copy_(own[layer].detach())
            layer._parameters["weight"] = copy
        yield
    finally:
        for layer, weight in own.items():
            layer._parameters["weight"] = weight


def autocast_weights_cast_once(model: PreTrainedModel, device_type: str) -> contextlib.AbstractContextManager:
    """:func:`matmul_weights_cast_once` into the dtype of the autocast enabled on ``device_type``; nothing
    without one.

    The dtype is autocast's own, not one read off the activations: a rotary embedding multiplies the bf16
    keys by float32 angles, so the cache comes out in float32 while every product ran in bf16.
    """
    if not torch.is_autocast_enabled(device_type):
        return contextlib.nullcontext()
    return matmul_weights_cast_once(model, torch.get_autocast_dtype(device_type))


def _layer_tensors(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each layer's (keys, values) of a filled dynamic cache, (N, H_kv, T, D) each."""
    return [(layer.keys, layer.values) for layer in cache.layers]


_DECODERS: weakref.WeakKeyDictionary[PreTrainedModel, OrderedDict[tuple, StaticDecoder]] = weakref.WeakKeyDictionary()


def decoder_for(
    model: PreTrainedModel,
    rows: int,
    prompt_width: int,
    budget: int,
    prompt_cache: DynamicCache,
    compiled: bool = False,
) -> StaticDecoder:
    """The kept decoder of ``model`` for a batch of ``rows`` rows in this shape (compiled or not), or a new one in
    the rows' bucket (:func:`row_bucket`; the least recently used beyond :data:`KEPT_DECODERS` is released). A
    decoder is reused only while the weights stay where it read them."""
    layers = _layer_tensors(prompt_cache)
    prompt_columns = _rounded_up(prompt_width, PROMPT_COLUMNS)
    bucket = row_bucket(rows)
    weights = tuple(parameter.data_ptr() for parameter in model.parameters())
    key = (bucket, prompt_columns, budget, layers[0][0].dtype, layers[0][0].device, weights, compiled)
    kept = _DECODERS.setdefault(model, OrderedDict())
    if key not in kept:
        while len(kept) >= KEPT_DECODERS:
            kept.popitem(last=False)[1].release()
        kept[key] = StaticDecoder(model, bucket, prompt_columns, budget, layers, compiled)
    kept.move_to_end(key)
    return kept[key]


def last_decoder(model: PreTrainedModel) -> StaticDecoder:
    """The decoder ``model`` decoded with last (for diagnostics: its graph, its capture time)."""
    return next(reversed(_DECODERS[model].values()))


@torch.no_grad()
def generate_static(
    model: PreTrainedModel,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    max_new_tokens: int,
    eos_token_id: int | Sequence[int],
    pad_token_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    greedy: bool = False,
    generator: Draws | None = None,
    with_logprobs: bool = False,
    on_step: Callable[[int], None] | None = None,
    end_check_every: int = END_CHECK_EVERY,
    compiled: bool = False,
) -> Generation:
    """:func:`~algos.engine.generation.generate`'s responses (one process), decoded into a static cache.

    prompt_ids, prompt_mask: (N, T_prompt), left-padded; the other arguments are ``generate``'s; ``compiled``: the
    decode step compiled by ``torch.compile`` (:class:`StaticDecoder`). Every row stays in the batch to the end;
    whether all have ended is looked at every ``end_check_every`` steps, and the steps drawn after the batch ended
    are taken back (their columns and their random draws). Under autocast the linear layers read their weights cast
    once (:func:`matmul_weights_cast_once`).
    """
    rows, width = prompt_ids.shape
    device = prompt_ids.device
    prompt_cache = DynamicCache(config=model.config)
    logits = encode_prompts_once(model, prompt_ids, prompt_mask, prompt_cache)  # (N, V)
    with autocast_weights_cast_once(model, device.type):
        decoder = decoder_for(model, rows, width, max_new_tokens, prompt_cache, compiled)
        decoder.start(prompt_cache, prompt_mask, position_ids(prompt_mask)[:, -1:] + 1)
        del prompt_cache
        tokens = torch.full((rows, max_new_tokens), pad_token_id, dtype=torch.long, device=device)
        alive = torch.zeros(rows, max_new_tokens, dtype=torch.bool, device=device)
        logprobs = torch.zeros(rows, max_new_tokens, device=device, dtype=torch.float32) if with_logprobs else None
        finished = torch.zeros(rows, dtype=torch.bool, device=device)
        ended_at = torch.full((rows,), max_new_tokens, dtype=torch.long, device=device)  # each row's last step
        end_ids = torch.as_tensor(eos_token_id, device=device).reshape(-1)  # (E,)
        drawing = generator is not None and not greedy
        states, first_state = [], 0  # the generator's state after each step since the last look (from first_state)
        for step in range(max_new_tokens):
            token = logits.argmax(dim=-1) if greedy else sample_tokens(logits, temperature, top_p, generator)
            token = token.masked_fill(finished, pad_token_id)
            tokens[:, step] = token
            alive[:, step] = ~finished
            if with_logprobs:
                logprobs[:, step] = token_logprobs(logits / temperature, token).masked_fill(finished, 0.0)
            ended = ~finished & torch.isin(token, end_ids)
            ended_at.masked_fill_(ended, step)
            finished |= ended
            if drawing:
                states.append(generator.get_state())
            last = step == max_new_tokens - 1
            if last or (step + 1) % end_check_every == 0:
                if last or bool(finished.all()):
                    break
                states, first_state = [], step + 1
            if on_step is not None:
                on_step(1)
            logits = decoder.step(token)
        steps = int(ended_at.max()) + 1 if bool(finished.all()) else max_new_tokens
        if on_step is not None:
            on_step(max_new_tokens - step)
        if drawing and steps - 1 < step:
            generator.set_state(states[steps - 1 - first_state])
        return Generation(
            response_ids=tokens[:, :steps],
            response_mask=alive[:, :steps].long(),
            truncated=~finished,
            logprobs=logprobs[:, :steps] if with_logprobs else None,
        )
