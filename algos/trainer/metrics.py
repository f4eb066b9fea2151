"""Every metric a run logs, with what it measures: the names endpoints, reports and users refer to.

``metrics.jsonl`` holds the per-step metrics (step 0: the base's evaluation and, with a critic, the
critic RL starts from); ``critic_metrics.jsonl`` the critic's phases before RL. A test trains tiny
runs of every preset and checks that each key they log is listed here, so the list cannot drift.
"""

from __future__ import annotations

EVAL_SPLITS = ("validation", "test")

METRICS: dict[str, str] = {
    # Rollout: every response generated in the step (all dynamic-sampling rounds).
    "rollout/reward_mean": "mean reward (verifier value plus shaping)",
    "rollout/reward_std": "std of the rewards",
    "rollout/accuracy": "share of correct responses",
    "rollout/accuracy_untruncated": "share of correct responses among those that ended within the budget",
    "rollout/response_length_mean": "mean response length (tokens)",
    "rollout/response_length_max": "longest response (tokens)",
    "rollout/correct_length_mean": "mean length of correct responses (tokens)",
    "rollout/incorrect_length_mean": "mean length of incorrect responses (tokens; Dr. GRPO Fig. 5)",
    "rollout/group_length_std": "mean over groups of the std of their responses' lengths (tokens)",
    "rollout/truncated_frac": "share of responses cut off at the budget",
    "rollout/repetition_frac": "share of responses holding a block repeated three times back to back (a loop)",
    "rollout/all_correct_groups_frac": "share of groups whose responses are all correct",
    "rollout/all_wrong_groups_frac": "share of groups whose responses are all wrong",
    "rollout/zero_variance_groups_filtered_frac": "share of sampled groups dynamic sampling did not train on",
    "rollout/generation_rounds": "sampling rounds of the step",
    "rollout/trained_groups": "groups the step trains on (P unless a dynamic-sampling step ran short)",
    "rollout/short_batch": "1 when dynamic sampling hit its round cap short of P informative groups",
    "rollout/samples_generated": "responses generated in the step",
    "rollout/samples_generated_total": "responses generated since the start of RL (DAPO Fig. 6's x-axis)",
    # Actor: means over the step's optimizer updates unless said otherwise.
    "actor/pg_loss": "clipped-surrogate loss",
    "actor/policy_loss": "policy loss with every term (KL, entropy, positive-example LM)",
    "actor/kl_loss": "KL-to-reference term before its coefficient",
    "actor/kl_ref": "k3 KL to the reference policy",
    "actor/kl_coef": "beta of the step (adaptive KL controller)",
    "rollout/kl_ref": "the batch's KL to the reference that the adaptive controller reads (configured estimator)",
    "actor/loss_multiplier_mean": "mean over loss tokens of the policy-loss multipliers (rollout correction, token and sequence masks)",
    "actor/pos_lm_loss": "NLL of the correct responses (VAPO's positive-example LM loss)",
    "actor/entropy": "policy entropy per response token",
    "actor/clip_frac_low": "share of tokens with A < 0 clipped at 1 - eps_low (objectives other than clip: see algos.core.objectives)",
    "actor/clip_frac_high": "share of tokens with A > 0 clipped at 1 + eps_high (up-clipped; Clip-Cov / KL-Cov: the selected "
    "tokens; DPPO: tokens outside the trust region)",
    "actor/clip_high_prob_mean": "mean sampling probability of the up-clipped tokens (DAPO Fig. 3a)",
    "actor/dual_clip_frac": "share of tokens where the dual-clip bound is the loss",
    "actor/approx_kl_old": "k3 KL to the sampling policy, mean over updates",
    "actor/approx_kl_old_max": "k3 KL to the sampling policy of the step's most distant update",
    "actor/ratio_mean": "mean importance weight over the step's loss tokens",
    "actor/ratio_max": "largest importance weight of the step",
    "actor/ratio_var": "variance of the importance weights over the step's loss tokens",
    "actor/grad_norm": "policy gradient norm before clipping",
    "actor/lr": "actor learning rate (after warm-up)",
    "actor/nonfinite_skipped": "updates skipped for a non-finite loss or gradient",
    "actor/nonfinite_skipped_frac": "share of the step's updates skipped for a non-finite loss or gradient",
    # Critic: value loss and gradient over the updates; the rest measured on the batch before it learns.
    "critic/value_loss": "value loss ½(V - target)²",
    "critic/value_clip_frac": "share of tokens where value clipping was active",
    "critic/explained_variance": "1 - Var(target - V) / Var(target) over the whole batch",
    "critic/value_error": "RMS of V - Monte-Carlo return over the batch's tokens",
    "critic/value_bias": "mean of V - Monte-Carlo return over the batch's tokens",
    "critic/grad_norm": "critic gradient norm before clipping",
    "critic/lr": "critic learning rate",
    # Performance.
    "perf/gen_tokens_per_s": "generated tokens per second",
    "perf/gen_seconds": "sampling time of the step",
    "perf/train_tokens_per_s": "trained tokens per second",
    "perf/step_seconds": "wall time of the step",
    "perf/train_seconds_total": "training time so far",
    "perf/eval_seconds": "wall time of the step's held-out evaluation",
    "perf/peak_memory_mb": "peak memory (resident on CPU, allocated on CUDA)",
    # The critic's phases before RL (critic_metrics.jsonl; step = index within the phase).
    "reward_model/loss": "reward-model fit: ½(score - reward)² at the last token",
    "reward_model/accuracy": "reward-model fit: share of responses scored on the side of their correctness",
    "value_pretraining/value_loss": "value pretraining: value loss",
    "value_pretraining/value_clip_frac": "value pretraining: value clipping share",
    "value_pretraining/explained_variance": "value pretraining: explained variance of the returns, before the step",
    "value_pretraining/value_error": "value pretraining: RMS error against the returns, before the step",
    "value_pretraining/value_bias": "value pretraining: mean error against the returns, before the step",
    "value_pretraining/grad_norm": "value pretraining: gradient norm",
    "value_pretraining/lr": "value pretraining: learning rate",
    **{
        f"eval/{split}/accuracy_{mode}": f"held-out {split} accuracy, {label}"
        for split in EVAL_SPLITS
        for mode, label in (("greedy", "greedy decoding"), ("t1", "one sample at T = 1"))
    },
}
"""Metric key -> what it measures."""


def metric_unit(metric: str) -> str:
    """The unit a metric is logged in: ``share`` (a fraction in [0, 1]: accuracies and shares of responses,
    tokens or groups), ``tokens`` (lengths), or ``value`` (anything else, in its own units)."""
    description = METRICS[metric]
    if "accuracy" in metric or description.startswith("share of"):
        return "share"
    return "tokens" if "(tokens" in description else "value"
