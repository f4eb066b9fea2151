"""Typed configuration: the single source of truth for every component toggle.

Every algorithm (PPO, GRPO, Dr. GRPO, DAPO, VAPO, GSPO, GEPO, RLOO, REINFORCE++) is a preset of
these fields over one code path. Each field documents its meaning, its default and the paper it
comes from; a field that names a registered component says what the key is, and :func:`field_docs`
adds its choices from the registry, each with the member's own summary. The defaults form the *base*
that every preset in ``experiments/presets/`` lists its differences from. Cross-field invariants
(:mod:`algos.config.rules`) are checked when a config is constructed.

Sizes are scaled for the built-in default on two CPU cores; the papers' values are given in the
field descriptions.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field
from pydantic.dataclasses import dataclass

from algos.config.registry import (
    ADVANTAGE_ESTIMATORS,
    AGGREGATIONS,
    KL_ESTIMATORS,
    OBJECTIVES,
    REWARD_FUNCTIONS,
    STD_SCALINGS,
    Registry,
    family_of,
)
from algos.config.rules import invariant_violations
from eval.tasks.config import TaskConfig

_STRICT = ConfigDict(extra="forbid", validate_default=True)


def _yaml_no(value: Any) -> Any:
    """A bare ``no`` (in a file or an override) reads as false in YAML; as a mode it is the mode ``no``."""
    return "no" if value is False else value


def _member_of(registry: Registry) -> Any:
    """A config field that takes the name of one of ``registry``'s members (see :mod:`algos.config.registry`)."""
    return Annotated[str, AfterValidator(registry.check)]


Probability = Annotated[float, Field(ge=0.0, le=1.0)]
NonNegative = Annotated[float, Field(ge=0.0)]
Positive = Annotated[float, Field(gt=0.0)]
PositiveInt = Annotated[int, Field(gt=0)]


@dataclass(frozen=True, config=_STRICT)
class AdvantageConfig:
    """How scalar outcome rewards become per-token advantages."""

    estimator: _member_of(ADVANTAGE_ESTIMATORS) = Field(
        "group_mean",
        description=(
            "The advantage estimator: how the rewards of each response become its per-token advantages "
            "(algos.core.advantages)."
        ),
    )
    std_scaling: _member_of(STD_SCALINGS) = Field(
        "group",
        description=(
            "How the estimator's advantages are scaled (algos.core.advantages). A scaling by group statistics applies "
            "to group estimators only, a scaling per response to estimators with one advantage per response."
        ),
    )
    whiten_eps: Positive | None = Field(
        None,
        description=(
            "Epsilon under the square root of batch_whiten and group_batch_whiten; None uses std_eps. verl's "
            "GDPO: 1e-6 for the group std, 1e-8 for the whitening."
        ),
    )
    whiten_keep_mean: bool = Field(
        False,
        description=(
            "batch_whiten and group_batch_whiten only. False: the whitened advantages are centred (verl "
            "masked_whiten shift_mean=True, REINFORCE++). True: the batch mean is added back after dividing "
            "by the std (verl shift_mean=False)."
        ),
    )
    singleton_groups: Literal["zero", "raw"] = Field(
        "zero",
        description=(
            "A group with one scorable response (groups given by an index may have one) has no baseline. zero: its "
            "advantage is 0 (the group's own mean; TRL). raw: baseline 0 and std 1, so the advantage is R (verl)."
        ),
    )
    gpg_alpha: Literal["none", "informative", "nonzero_reward"] = Field(
        "none",
        description=(
            "GPG's rescaling of group advantages by alpha = B / B_valid (Chu et al. 2025, arXiv 2504.02546, "
            "Eq. 9). informative: B_valid counts responses in groups whose rewards differ (the paper: the others "
            "have zero advantage). nonzero_reward: B_valid counts responses with a nonzero reward (verl gpg). "
            "none: alpha = 1."
        ),
    )
    std_eps: Positive = Field(
        1e-6,
        description=(
            "Epsilon of the std scaling: added to the std for group/batch, to the variance under "
            "the square root for batch_whiten. verl uses 1e-6 (whitening 1e-8), TRL 1e-4; default "
            "1e-6 stays closest to the unsmoothed GRPO definition."
        ),
    )
    gamma: Probability = Field(1.0, description="Discount gamma; 1 for LLM outcome rewards (VAPO).")
    lambda_policy: Probability = Field(
        0.95, description="GAE lambda for the policy advantage (PPO: 0.95; VC-PPO/VAPO decoupled GAE)."
    )
    lambda_critic: Probability | None = Field(
        None,
        description=(
            "GAE lambda for the critic's targets. None couples it to the policy's lambda (vanilla "
            "PPO); 1.0 gives Monte-Carlo returns, VAPO's Decoupled-GAE."
        ),
    )
    adaptive_lambda_alpha: Positive | None = Field(
        None,
        description=(
            "VAPO's Length-Adaptive GAE (alpha = 0.05): per sequence "
            "lambda_policy = 1 - 1/(alpha * |o|), replacing lambda_policy. None turns it off."
        ),
    )
    adaptive_lambda_min: Probability = Field(
        0.0,
        description=(
            "Lower clamp of the length-adaptive lambda. The paper's formula is <= 0 for "
            "|o| <= 1/alpha (20 tokens at alpha = 0.05); we clamp to [min, max] so short responses "
            "get lambda = 0 (one-step TD) instead of a negative lambda."
        ),
    )
    adaptive_lambda_max: Probability = Field(
        1.0, description="Upper clamp of the length-adaptive lambda (the formula itself stays below 1)."
    )


@dataclass(frozen=True, config=_STRICT)
class PolicyLossConfig:
    """The clipped surrogate and its aggregation."""

    objective: _member_of(OBJECTIVES) = Field(
        "clip",
        description=(
            "The per-token policy loss (algos.core.objectives); an objective with parameters of its own reads them "
            "from objective_params."
        ),
    )
    objective_params: dict[str, Any] = Field(
        {},
        description=(
            "Parameters of an objective that declares its own (algos.config.registry), checked against its "
            "declaration when the config is built; empty for the objectives whose parameters are fields of "
            "policy_loss."
        ),
    )
    ratio_level: Literal["token", "sequence", "sequence_token", "sequence_sum", "group_expectation"] = Field(
        "token",
        description=(
            "token: r_{i,t} (PPO/GRPO/DAPO). sequence: length-normalised sequence ratio s_i, the "
            "same for every token (GSPO). sequence_token: sg[s_i] * pi/sg[pi] (GSPO-token). sequence_sum: "
            "exp(sum_t log r_{i,t}), the unnormalised sequence ratio (TRL's RLOO loss). group_expectation: "
            "p_i / E_q[q] over the group (GEPO)."
        ),
    )
    group_expectation_scope: Literal["prompt", "micro_batch"] = Field(
        "prompt",
        description=(
            "Which responses GEPO's E_q[q] is taken over. prompt: the G responses of each prompt (the paper's "
            "Eq. 2). micro_batch: the rollout batch shuffled (seeded) and cut into chunks of G responses of "
            "different prompts, as the authors' code does (TRL 0.19 shuffles the generation batch before "
            "splitting it into micro-batches of 8)."
        ),
    )
    clip_eps_low: Probability = Field(
        0.2,
        description="Ratio clipped below at 1 - eps_low, at most 1 since a ratio is never negative (PPO: 0.2; "
        "GSPO: 3e-4).",
    )
    clip_eps_high: NonNegative = Field(
        0.2, description="Ratio clipped above at 1 + eps_high (PPO: 0.2; DAPO Clip-Higher: 0.28; GSPO: 4e-4)."
    )
    dual_clip_c: Annotated[float, Field(gt=1.0)] | None = Field(
        None,
        description=(
            "Dual-clip constant c (Ye et al. 2020): for negative advantages the loss is capped at "
            "-c * A. Off by default; verl turns it on with c = 3."
        ),
    )
    aggregation: _member_of(AGGREGATIONS) = Field(
        "seq_mean_token_mean",
        description=(
            "How the per-token losses of a mini-batch are summed and normalised into its loss (algos.core.aggregation)."
        ),
    )
    aggregation_constant: PositiveInt | None = Field(
        None,
        description=(
            "MAX_TOKENS of seq_mean_token_sum_norm. None uses the generation budget "
            "rollout.max_new_tokens (Dr. GRPO's code uses its budget, 3000)."
        ),
    )
    seq_mean_denominator: Literal["all", "nonempty"] = Field(
        "all",
        description=(
            "Which sequences the seq_mean_* modes divide by. all: every sequence in the mini-batch, "
            "as the papers' 1/G and 1/B and TRL. nonempty: only sequences with at least one loss "
            "token left after filtering (verl)."
        ),
    )
    sapo_tau_pos: Positive = Field(1.0, description="SAPO's gate temperature for A > 0 (TRL and verl: 1.0).")
    sapo_tau_neg: Positive = Field(1.05, description="SAPO's gate temperature for A <= 0 (TRL and verl: 1.05).")
    cov_ratio: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        2e-4,
        description="Clip-Cov / KL-Cov: share of the pass's loss tokens that are detached / KL-penalised (verl: 2e-4).",
    )
    clip_cov_bounds: tuple[float, float] = Field(
        (1.0, 5.0),
        description="Clip-Cov: a token is a candidate when lower < cov < upper (verl clip_cov_lb 1, clip_cov_ub 5).",
    )
    kl_cov_coef: NonNegative = Field(
        1.0, description="KL-Cov: coefficient of |log r| on the selected tokens (verl: 1)."
    )
    dppo_thresholds: tuple[NonNegative, NonNegative] = Field(
        (0.2, 0.2),
        description=(
            "DPPO: (low, high) divergence thresholds; a token with A > 0 learns while its divergence to pi_old is "
            "at most high, one with A <= 0 while it is at most low (TV: |pi - pi_old|; KL: the binary KL)."
        ),
    )
    dppo_ratio_cap: Positive = Field(
        20.0,
        description="DPPO: the detached ratio multiplying the loss is truncated at this value (paper §5.4: large).",
    )
    vespo_k: tuple[NonNegative, NonNegative] = Field(
        (2.0, 3.0), description="VESPO: shape k of the gamma weight for A >= 0 and A < 0 (TRL: 2, 3)."
    )
    vespo_lambda: tuple[NonNegative, NonNegative] = Field(
        (3.0, 2.0), description="VESPO: rate lambda of the gamma weight for A >= 0 and A < 0 (TRL: 3, 2)."
    )
    top_entropy_quantile: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        1.0,
        description=(
            "rho: only the share rho of the pass's loss tokens with the highest entropy keep their policy loss "
            "(Wang et al. 2025, arXiv 2506.01939; TRL top_entropy_quantile). 1.0 keeps every token."
        ),
    )
    off_policy_mask_threshold: NonNegative | None = Field(
        None,
        description=(
            "delta of the off-policy sequence mask (DeepSeek-V3.2; TRL off_policy_mask_threshold): a response "
            "with A < 0 whose mean log(pi_sampler / pi_theta) exceeds delta drops out of the policy loss. None: off."
        ),
    )
    entropy_coef: NonNegative = Field(0.0, description="Entropy bonus coefficient (0 in every paper preset).")
    entropy_aggregation: Literal["policy", "token_mean"] = Field(
        "policy",
        description=(
            "How the entropy bonus is aggregated: policy uses the policy loss's aggregation "
            "(verl); token_mean uses a token mean whatever the aggregation (TRL)."
        ),
    )
    pos_lm_coef: NonNegative = Field(
        0.0,
        description=(
            "mu of VAPO's positive-example LM loss (mu = 0.1): adds mu times the token-averaged "
            "NLL of the correct responses."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class KLConfig:
    """Penalty towards the frozen reference policy."""

    coef: NonNegative = Field(0.0, description="beta. 0 for DAPO, VAPO, Dr. GRPO; 0.04 for GRPO (DeepSeekMath).")
    estimator: _member_of(KL_ESTIMATORS) = Field(
        "k3",
        description=(
            "The per-token estimate of KL(pi || pi_ref) from log r = log pi_ref - log pi of each sampled token "
            "(Schulman 2020, Approximating KL divergence; algos.core.kl)."
        ),
    )
    placement: Literal["loss", "reward"] = Field(
        "loss",
        description=(
            "loss: beta * KL added per token to the policy loss (GRPO). reward: beta * KL "
            "subtracted from the per-token reward before advantages (classic RLHF PPO)."
        ),
    )
    clamp: Positive | None = Field(
        None,
        description="Clamp the per-token estimate to [-clamp, clamp]; None = exact (TRL). verl clamps k3 at 10.",
    )
    importance_weighted: bool = Field(
        False,
        description=(
            "Multiply the per-token KL in the loss by the importance ratio of the policy loss, with its gradient, "
            "so that the estimate is unbiased off-policy (TRL use_bias_correction_kl, TRL's default True; "
            "verl and the papers: False)."
        ),
    )
    controller: Literal["fixed", "adaptive"] = Field(
        "fixed",
        description=(
            "fixed: beta = coef throughout. adaptive: beta starts at coef and after each step is multiplied by "
            "1 + clip(KL / target - 1, -0.2, 0.2) * B / horizon, KL the batch's mean per-token estimate towards "
            "the reference (Ziegler et al. 2019; verl AdaptiveKLController)."
        ),
    )
    target: Positive = Field(0.1, description="Adaptive controller: target per-token KL (verl target_kl 0.1).")
    horizon: PositiveInt = Field(10000, description="Adaptive controller: horizon in responses (verl 10000).")


@dataclass(frozen=True, config=_STRICT)
class RewardConfig:
    """Verifier reward values and DAPO's length shaping and filtering."""

    correct: float = Field(1.0, description="Reward of a verified-correct response (DAPO: +1; TRL and most: 1).")
    incorrect: float = Field(0.0, description="Reward of an incorrect response (DAPO: -1; TRL and most: 0).")
    functions: dict[_member_of(REWARD_FUNCTIONS), float] = Field(
        {"correctness": 1.0},
        min_length=1,
        description=(
            "Reward functions (algos.core.reward_functions) and their weights. A response every function leaves NaN "
            "is unscorable: the group statistics ignore it and its advantage is 0 (TRL)."
        ),
    )
    combine: Literal["sum_then_normalize", "normalize_then_sum"] = Field(
        "sum_then_normalize",
        description=(
            "sum_then_normalize: R = sum_k w_k r_k (NaN terms skipped), then the advantage estimator. "
            "normalize_then_sum: each function's rewards standardised within the group, "
            "(r_k - mean) / (std + advantage.std_eps), before the weighted sum (TRL multi_objective_aggregation; "
            "GDPO)."
        ),
    )
    overlong_filter: bool = Field(
        False,
        description="Mask truncated responses (no EOS within the budget) out of the policy loss (DAPO Overlong Filtering).",
    )
    soft_overlong_buffer: PositiveInt | None = Field(
        None,
        description=("L_cache of DAPO's soft overlong punishment (Eq. 13; DAPO: 4096). None turns the punishment off."),
    )
    soft_overlong_max_length: PositiveInt | None = Field(
        None,
        description="L_max of the soft overlong punishment; None uses the generation budget rollout.max_new_tokens.",
    )
    soft_overlong_factor: NonNegative = Field(
        1.0, description="Multiplies the soft overlong punishment (verl overlong_buffer.penalty_factor; DAPO: 1)."
    )
    coin_flip_share: Annotated[float, Field(ge=0.0, lt=1.0)] = Field(
        0.0,
        description="Share of sampled responses, drawn at random each round (seeded), whose reward sees a fair coin "
        "flip instead of the verifier's verdict: a harm of known direction for a positive control of the tables' "
        "statistics (snakemake calibration). The logged accuracies stay the verifier's. 0 = off.",
    )


@dataclass(frozen=True, config=_STRICT)
class DynamicSamplingConfig:
    """DAPO's Dynamic Sampling: keep only groups whose responses differ in correctness."""

    enabled: bool = Field(
        False, description="Drop groups with accuracy 0 or 1 and generate more prompts (DAPO Dynamic Sampling)."
    )
    oversample: Annotated[float, Field(ge=1.0)] = Field(
        1.5,
        description=(
            "Prompts each round draws per informative group still missing, over the share of groups kept so "
            "far (the first round: oversample * P); DAPO over-samples and keeps sampling until P groups hold "
            "both correct and wrong responses."
        ),
    )
    max_rounds: PositiveInt = Field(
        16,
        description=(
            "Safety cap on generation rounds per step (verl's max_num_gen_batches). A step that reaches it "
            "short of P informative groups trains on those found, logs rollout/short_batch = 1 and a warning, "
            "and the ablation report names it."
        ),
    )
    filter_on: Literal["correctness", "reward"] = Field(
        "correctness",
        description=(
            "What must differ within a kept group: correctness (the paper) or the reward "
            "(for graded verifiers; refused when the reward is shaped, and warned about otherwise)."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class CriticConfig:
    """Value model for GAE (PPO, VAPO)."""

    enabled: bool = Field(False, description="Train a value model; required by, and only used by, estimator gae.")
    lr: Positive = Field(4e-4, description="Critic learning rate, twice the actor's (VAPO: actor 1e-6, critic 2e-6).")
    value_clip: Positive | None = Field(
        None, description="Clip new values to old +- value_clip in the value loss (PPO); None = no clipping."
    )
    init: Literal["backbone", "reward_model"] = Field(
        "backbone",
        description=(
            "backbone: the policy's backbone with a fresh scalar head. reward_model: that critic first fitted "
            "as an outcome reward model (the verifier reward regressed at each response's last token, "
            "reward_model_steps rollouts of the initial policy), then used as the value model: VAPO's "
            "setting (§3.1, §4.1), whose bias on earlier tokens value pretraining removes."
        ),
    )
    reward_model_steps: Annotated[int, Field(ge=0)] = Field(
        20, description="Rollout batches the reward model is fitted on (init=reward_model only)."
    )
    pretrain_steps: Annotated[int, Field(ge=0)] = Field(
        0,
        description=(
            "Critic-only steps on rollouts of the initial policy with Monte-Carlo targets before "
            "policy updates (VAPO Value-Pretraining: 50)."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class RolloutConfig:
    """Sampling: P prompts x G responses per step."""

    prompts_per_step: PositiveInt = Field(16, description="P, prompts per rollout batch (DAPO, VAPO: 512).")
    group_size: PositiveInt = Field(8, description="G, responses per prompt (DAPO, VAPO: 16; PPO: 1).")
    max_new_tokens: PositiveInt = Field(96, description="Generation budget in tokens (DAPO: 20480).")
    temperature: Positive = Field(1.0, description="Sampling temperature (DAPO, VAPO: 1.0).")
    top_p: Annotated[float, Field(gt=0.0, le=1.0)] = Field(1.0, description="Nucleus sampling top-p (1.0 = off).")
    policy_staleness: Annotated[int, Field(ge=0)] = Field(
        0,
        description=(
            "k: rollouts come from the policy k optimizer updates old, as in GEPO's heterogeneous "
            "setting (GEPO Table 2). 0 = on-policy sampling."
        ),
    )
    correction: Literal["none", "truncate", "mask"] = Field(
        "none",
        description=(
            "Rollout/learner mismatch correction under policy_staleness > 0: pi_old becomes the learner's "
            "policy before the update (the proximal policy) and each token's loss is multiplied by the detached "
            "weight w = pi_old / pi_sampler. truncate: min(w, correction_high), clamped below at correction_low "
            "if set (TIS; TRL *_truncate, verl rollout_is). mask: w where correction_low <= w <= correction_high, "
            "else 0 (MIS / IcePop; TRL *_mask). none: the ratio is taken to the sampler itself."
        ),
    )
    correction_level: Literal["token", "sequence"] = Field(
        "token",
        description="token: one weight per token. sequence: exp(sum_t log w_t), one weight per response (TRL, verl).",
    )
    correction_low: NonNegative | None = Field(None, description="Lower bound of the correction weight; None: none.")
    correction_high: Positive = Field(
        2.0, description="Upper bound of the correction weight (verl rollout_is_threshold 2; TRL clip_max 3)."
    )
    engine: Literal["auto", "eager", "static", "compiled"] = Field(
        "auto",
        description=(
            "The decoding loop (algos.engine.static_decoding), the same tokens either way. eager: a cache that grows "
            "a column a step, ended rows leaving the batch, an end check every token (the fastest on the CPU). "
            "static: a fixed batch (rows rounded up to a bucket) and cache width, ends checked every 16 steps, and "
            "on CUDA each decode step one CUDA graph replay (one process, unsharded, no sliding window); on an H200 "
            "4-6x the eager loop's tokens/s. compiled: static with its step compiled by torch.compile first (its "
            "elementwise kernels fused; 4.6-9x the eager loop, but some 35 s of compiling per batch shape). auto: "
            "static on CUDA where it can run, else eager."
        ),
    )
    draws: Literal["stream", "keyed"] = Field(
        "stream",
        description=(
            "Where the sampler's random numbers come from, in the rollouts and the held-out evaluations (the same "
            "distribution either way; algos.engine.keyed_draws). stream: one generator a batch, seeded by (run seed, "
            "step, round), each number the next of the stream, so a batch's draws shift with its responses' lengths. "
            "keyed: each number a function of (that seed, problem, sample, position, token), so two runs of one seed "
            "draw the same numbers for a problem wherever it stands and whatever the rest of the batch does (common "
            "random numbers between the rows of an ablation)."
        ),
    )
    old_logprobs: Literal["auto", "score", "sampler"] = Field(
        "sampler",
        description=(
            "How log π_old is obtained. sampler (the default): the log-probabilities the sampler computed while "
            "drawing each token (its KV-cache logits over the temperature, as vLLM/SGLang rollouts return them): "
            "no pass at all; they differ from a scoring pass by float rounding (same tokens; a run took 1/1.15 of "
            "the time, docs/performance.md). score: a separate forward pass of the sampling policy after sampling, "
            "bit for bit the scoring pass. auto: where one optimizer step per rollout is taken by the policy that "
            "sampled (1 epoch, 1 mini-batch, staleness 0, no dropout) and nothing reads π_old before the update "
            "(no KL in the reward, no group-expectation ratio, no critic), π_old is the update's own forward pass, "
            "detached: the same numbers without the extra pass; elsewhere as score."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class OptimConfig:
    """Policy updates per rollout batch."""

    lr: Positive = Field(
        1e-4,
        description=(
            "Actor learning rate (VAPO, DAPO: 1e-6 for 32B models). The built-in default's 1e-4 is the largest "
            "at which naive GRPO's per-update KL to pi_old stays below 0.01 in most steps (see the README)."
        ),
    )
    lr_warmup_steps: Annotated[int, Field(ge=0)] = Field(
        10,
        description=(
            "Rollout steps over which the actor's learning rate rises linearly to lr (step s trains at "
            "lr * min(1, s / lr_warmup_steps)), constant afterwards: DAPO §4.1 and VAPO §5.1 warm up over 20 "
            "rollout steps (320 optimizer updates); 10 of the default 60 steps are 160. 0 = constant from the start."
        ),
    )
    weight_decay: NonNegative = Field(0.0, description="AdamW weight decay.")
    max_grad_norm: Positive | None = Field(1.0, description="Gradient-norm clip; None = off.")
    mini_batches: PositiveInt = Field(
        16,
        description=(
            "Optimizer updates per epoch over the rollout batch (DAPO §4.1, VAPO §5.1: 16, mini-batches of "
            "512 of 8192 responses). With one update per batch the ratio is always 1 and clipping is inert."
        ),
    )
    epochs: PositiveInt = Field(1, description="Passes over the rollout batch.")
    micro_batch_size: PositiveInt | None = Field(
        None,
        description=(
            "Sequences per forward/backward pass (gradient accumulation); None = whole "
            "mini-batch. Losses are normalised by the whole mini-batch, never per micro-batch."
        ),
    )
    micro_batch_tokens: PositiveInt | None = Field(
        None,
        description=(
            "Token budget of a forward/backward pass: rows sorted by response length are packed into passes "
            "of at most this many padded tokens (rows x (prompt width + longest response)), so a batch of long "
            "responses fits in memory; the gradient is unchanged. Excludes micro_batch_size; None = off."
        ),
    )
    length_buckets: PositiveInt = Field(
        2,
        description=(
            "Without micro_batch_size or micro_batch_tokens: forward/backward passes per mini-batch, over rows sorted by "
            "response length. Each pass is trimmed to its longest response, so short responses stop "
            "paying for long ones' padding; the gradient is the same as one pass (1 = one pass)."
        ),
    )
    update_pass: Literal["auto", "shared_prompts", "joined_rows"] = Field(
        "auto",
        description=(
            "The update's forward pass: shared_prompts = each distinct prompt encoded once and its G rows "
            "continued from its cache; joined_rows = every prompt + response row run whole (the same logits, "
            "to float rounding); auto = shared_prompts for CPU runs, joined_rows on CUDA, where the cache's "
            "copies cost more than the prompts they save. joined_rows regardless under gradient checkpointing "
            "and FSDP."
        ),
    )
    token_logprobs: Literal["auto", "whole_logits", "chunked"] = Field(
        "auto",
        description=(
            "How the update turns the model's last hidden states into log-probabilities and entropies "
            "(algos.engine.sequences). whole_logits: the model's (B, T, V) logits, then float32 log-softmax over "
            "them. chunked: the output layer and the log-softmax a chunk of 1024 tokens at a time, each chunk "
            "recomputed in the backward pass, so no (B, T, V) tensor is ever held (Liger's fused linear "
            "log-probabilities, in plain PyTorch); the same values to float rounding. It takes the joined rows "
            "(joined_rows), one process, and a llama, qwen2, qwen3 or mistral model: for memory, since it measured "
            "slower than whole_logits where those fit (docs/gpus.md). auto: whole_logits."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class LoraConfig:
    """Low-rank adapters (peft's LoRA) on the policy: only the adapters train and are checkpointed."""

    enabled: bool = Field(
        False,
        description=(
            "Train LoRA adapters instead of every weight of the policy. The KL reference is the same model with "
            "its adapters switched off (no second copy in memory); checkpoints hold the adapters alone "
            "(`python -m algos.engine.adapters merge` writes the merged model). The critic, if any, trains fully."
        ),
    )
    rank: PositiveInt = Field(16, description="Rank r of each adapter's update B A.")
    alpha: Positive = Field(32.0, description="Scale: the update is (alpha / r) B A.")
    dropout: Annotated[float, Field(ge=0, lt=1)] = Field(0.0, description="Dropout on each adapter's input.")
    target_modules: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        min_length=1,
        description=(
            "Names of the linear layers that get adapters (the last part of a module's name, as peft matches "
            "them); the default covers the attention and MLP projections of Llama and Qwen2 models."
        ),
    )


@dataclass(frozen=True, config=_STRICT)
class ModelConfig:
    """Which policy to train: the built-in base or any causal LM on the hub or on disk."""

    name_or_path: str = Field(
        "results/base_model",
        description=(
            "Hub id (e.g. Qwen/Qwen2.5-Math-1.5B) or local directory of a causal LM and its tokenizer. "
            "The default is the built-in base that `python -m algos.trainer.sft --out results/base_model` builds."
        ),
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="Parameter dtype; float32 on CPU, bfloat16 for hub models on a GPU."
    )
    gradient_checkpointing: bool = Field(
        False,
        description=(
            "Recompute activations in the backward pass instead of keeping them (policy and critic): less "
            "memory, about one more forward pass of time, the same loss and gradients."
        ),
    )
    chat_template: Literal["auto", "always", "never"] = Field(
        "auto",
        description=(
            "Wrap prompts in the tokenizer's chat template: auto when the tokenizer has one (chat "
            "models), always (error without one), never (raw prompts, base models)."
        ),
    )
    system_prompt: str | None = Field(
        None,
        description="With the chat template: a system turn put before every prompt's user turn; None: no system "
        "turn (the template may still add its own default).",
    )
    lora: LoraConfig = dataclasses.field(default_factory=LoraConfig)


@dataclass(frozen=True, config=_STRICT)
class RunConfig:
    """Length of a run, evaluation, checkpoints and where it runs."""

    steps: PositiveInt = Field(60, description="Rollout batches (policy-update steps) in the run.")
    eval_every: Annotated[int, Field(ge=0)] = Field(
        20, description="Held-out evaluation every this many steps (and at steps 0 and last); 0 = first and last only."
    )
    eval_steps: tuple[Annotated[int, Field(ge=0)], ...] | None = Field(
        None,
        description="The steps whose held-out evaluation runs, in place of eval_every's schedule (the last step's "
        "always runs); None: steps 0, every eval_every and the last. A campaign sets it to the steps its endpoints "
        "read (ablations.eval_scope=read).",
    )
    eval_problems: PositiveInt = Field(256, description="Problems per evaluation split.")
    final_eval_problems: PositiveInt | None = Field(
        None,
        description="Problems per split of the built-in task in the last step's evaluation, which the tables "
        "report (it starts with the eval_problems of the earlier evaluations); None uses eval_problems. "
        "At 256 problems and 80 % accuracy one T = 1 sample per problem has a standard error of 2.5 points; "
        "4096 brings it to 0.6.",
    )
    eval_splits: tuple[Literal["validation", "test"], ...] = Field(
        ("validation", "test"), description="Held-out splits evaluated (see eval_modes)."
    )
    eval_modes: tuple[Literal["greedy", "t1"], ...] = Field(
        ("greedy", "t1"),
        min_length=1,
        description="How each held-out problem is answered: greedy decoding and/or one sample at T = 1.",
    )
    checkpoint_every: Annotated[int, Field(ge=0)] = Field(
        10, description="Save a resumable checkpoint every this many steps (and at the end); 0 = only at the end."
    )
    max_nonfinite_frac: Probability = Field(
        0.5,
        description="Largest share of one step's optimizer updates that may be skipped for a non-finite loss or "
        "gradient; a step above it ends the run with an error (its metrics logged), since a run whose updates "
        "are all skipped no longer trains.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto picks CUDA when available.")
    mixed_precision: Annotated[Literal["no", "bf16", "fp16"], BeforeValidator(_yaml_no)] = Field(
        "no", description="accelerate's autocast mode (GPU runs)."
    )
    deterministic: bool = Field(
        False,
        description="CUDA runs replay bit for bit: deterministic kernels wherever torch has them "
        "(torch.use_deterministic_algorithms; one without warns, naming itself) and cuBLAS's fixed workspace, at "
        "some speed; CPU runs are deterministic without it.",
    )

    def evaluates(self, step: int) -> bool:
        """Whether the held-out evaluation runs after ``step`` (0: the initial policy)."""
        if step == self.steps:
            return True
        if self.eval_steps is not None:
            return step in self.eval_steps
        return step == 0 or bool(self.eval_every and step % self.eval_every == 0)


@dataclass(frozen=True, config=_STRICT)
class TrackingConfig:
    """Where metrics go besides the run directory's plain files."""

    backend: Literal["mlflow", "none"] = Field("mlflow", description="mlflow logs every run; none keeps runs offline.")
    uri: str | None = Field(
        None,
        description=(
            "MLflow tracking URI; None uses $MLFLOW_TRACKING_URI, else the local database sqlite:///mlflow.db "
            "(artifacts under ./mlruns)."
        ),
    )
    experiment: str = Field("rl-harness", description="MLflow experiment name.")
    run_name: str | None = Field(None, description="MLflow run name; None uses the output directory's name.")
    parent_run: str | None = Field(
        None,
        description="Name of a parent run (created on first use) this run is nested under, e.g. an ablation row "
        "grouping its seeds; None: a top-level run.",
    )


@dataclass(frozen=True, config=_STRICT)
class RLConfig:
    """The complete RL configuration. Defaults form the base that presets list differences from."""

    advantage: AdvantageConfig = dataclasses.field(default_factory=AdvantageConfig)
    policy_loss: PolicyLossConfig = dataclasses.field(default_factory=PolicyLossConfig)
    kl: KLConfig = dataclasses.field(default_factory=KLConfig)
    reward: RewardConfig = dataclasses.field(default_factory=RewardConfig)
    dynamic_sampling: DynamicSamplingConfig = dataclasses.field(default_factory=DynamicSamplingConfig)
    critic: CriticConfig = dataclasses.field(default_factory=CriticConfig)
    rollout: RolloutConfig = dataclasses.field(default_factory=RolloutConfig)
    optim: OptimConfig = dataclasses.field(default_factory=OptimConfig)
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    task: TaskConfig = dataclasses.field(default_factory=TaskConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)
    tracking: TrackingConfig = dataclasses.field(default_factory=TrackingConfig)
    seed: int = Field(0, description="Seed of every random number generator in a run.")

    def __post_init__(self) -> None:
        problems = invariant_violations(self)
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def rollout_batch_size(self) -> int:
        """B = P * G sequences per rollout batch."""
        return self.rollout.prompts_per_step * self.rollout.group_size

    @property
    def mini_batch_size(self) -> int:
        """Sequences per optimizer update."""
        return self.rollout_batch_size // self.optim.mini_batches

    @property
    def updates_per_rollout(self) -> int:
        """Optimizer updates made with one rollout batch."""
        return self.optim.mini_batches * self.optim.epochs

    @property
    def aggregation_constant(self) -> int:
        """MAX_TOKENS of seq_mean_token_sum_norm, resolved against the generation budget."""
        return self.policy_loss.aggregation_constant or self.rollout.max_new_tokens

    @property
    def kl_in_loss(self) -> bool:
        """Whether β·KL to the reference policy is a term of the policy loss (GRPO)."""
        return self.kl.coef > 0 and self.kl.placement == "loss"

    @property
    def kl_in_reward(self) -> bool:
        """Whether β·KL to the reference policy is subtracted from the per-token reward (classic RLHF PPO)."""
        return self.kl.coef > 0 and self.kl.placement == "reward"

    @property
    def reward_is_shaped(self) -> bool:
        """Whether the reward is more than the verifier's correct/incorrect value."""
        return self.reward.soft_overlong_buffer is not None or self.kl_in_reward

    @property
    def soft_overlong_max_length(self) -> int:
        """L_max of the soft overlong punishment, resolved against the generation budget."""
        return self.reward.soft_overlong_max_length or self.rollout.max_new_tokens


def field_docs(section: Any, prefix: str) -> dict[str, str]:
    """Description of every field of a config dataclass, keyed by field name; ``prefix`` is the section's dotted key
    (``"advantage."``, ``""`` for the root).

    A field that names a registered component ends with its registry's members and their summaries, read when
    called: the registries fill as :mod:`algos.core` is imported, after these classes are defined.
    """
    docs = {}
    for name, info in section.__pydantic_fields__.items():
        family = family_of(f"{prefix}{name}")
        docs[name] = f"{info.description} Choices: {family.choices()}" if family else info.description or ""
    return docs
