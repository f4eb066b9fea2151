"""``abs+``: the absolute log-ratio's value with k2's gradient (verl's straight-through ``abs+``).

|log r| is not differentiable at r = 1 and its gradient ±1 does not shrink as π_θ nears π_ref; k2's
gradient, log π_θ − log π_ref, is the KL's in expectation. ``kl.estimator=abs+`` keeps the value
that is logged and added and takes k2's gradient, as ``k1+`` and ``k3+`` do.
"""

from algos.config.registry import KL_ESTIMATORS, KlFacts
from algos.core.kl import absolute

KL_ESTIMATORS.register("abs+", KlFacts(straight_through=True), summary="abs's value with k2's gradient (verl's abs+).")(
    absolute
)
