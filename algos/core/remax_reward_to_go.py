"""ReMax with verl's dense-reward convention: on each token, the reward still to come minus the baseline.

``advantage.estimator=remax`` puts R_i − b_i, the response's whole reward minus its greedy
baseline, on every token. verl's ``remax`` puts Σ_{t' ≥ t} r_{t'} − b_i on token t instead. The two
agree when the reward is one outcome on the last token; they differ when rewards fall on every
token (``kl.placement=reward``), where a token here is not credited with the KL penalties of the
tokens before it.
"""

from algos.config.registry import ADVANTAGE_ESTIMATORS, EstimatorFacts
from algos.config.schema import AdvantageConfig
from algos.core.advantages import AdvantageInputs, Advantages


@ADVANTAGE_ESTIMATORS.register("remax_reward_to_go", EstimatorFacts(kind="token", needs_baselines=True))
def remax_reward_to_go(x: AdvantageInputs, cfg: AdvantageConfig) -> Advantages:
    """Σ_{t'≥t} r_{t'} − b on each token t (ReMax as verl computes it): the reward to come minus the greedy baseline."""
    if x.baselines is None:
        raise ValueError("estimator 'remax_reward_to_go' needs the greedy responses' rewards as baselines")
    to_come = (x.token_rewards * x.mask).flip(-1).cumsum(-1).flip(-1)  # (B, T)
    return Advantages(to_come - x.baselines.unsqueeze(-1) * x.mask)
