r"""Step-size selection by the stability rule of the S3GD paper (eq. 47).

For a grid of constant step sizes :math:`\eta` (the paper's :math:`\{0.1, 1, 5, 10\}`) and a
fixed budget, each estimator is trained and the largest stable step is kept:

.. math::

    \eta^\star = \max \eta \quad \text{s.t.} \quad F(w; \eta) \le (1 + \epsilon)\,F(w^\star)
    \qquad (\text{eq. 47}),

where :math:`F(w^\star)` is the optimal objective and :math:`F(w; \eta)` the objective reached
with step :math:`\eta`. The paper averages the objective over its last 5000 iterations; here
:math:`F(w; \eta)` is the objective of the returned model (``estimator.objective(X, y)``),
optionally averaged over several seeds. ``epsilon`` is 0.01 in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone

__all__ = ["StepSizeSelection", "select_step_size", "PAPER_STEP_SIZES"]

#: the grid of Sec. 4.3 of the S3GD paper
PAPER_STEP_SIZES = (0.1, 1.0, 5.0, 10.0)


@dataclass
class StepSizeSelection:
    """Result of :func:`select_step_size`.

    Attributes
    ----------
    step_size : float or None
        :math:`\\eta^\\star`, ``None`` when no step of the grid is stable.
    objective : float
        :math:`F(w; \\eta^\\star)` (``nan`` when none is stable).
    estimator : estimator or None
        The model fitted with :math:`\\eta^\\star` (first seed).
    objectives : dict
        :math:`F(w; \\eta)` for every step of the grid (``inf`` when the fit diverged).
    """

    step_size: float | None
    objective: float
    estimator: object
    objectives: dict = field(default_factory=dict)


def select_step_size(estimator, X, y, optimal_objective, step_sizes=PAPER_STEP_SIZES,
                     epsilon=0.01, seeds=(0,)):
    """Largest step of ``step_sizes`` whose objective is within ``(1 + epsilon)`` of optimal.

    Parameters
    ----------
    estimator : estimator with ``step_size``, ``random_state`` and ``objective(X, y)``
        Its other parameters (budget ``max_iter``, ``tol``, ...) are used as given.
    X, y : training data
    optimal_objective : float
        :math:`F(w^\\star)` of the same objective (a tight reference solver).
    step_sizes : sequence of float, default=(0.1, 1, 5, 10)
    epsilon : float, default=0.01
    seeds : sequence of int, default=(0,)
        The objective is averaged over fits with these ``random_state`` values.

    Returns
    -------
    StepSizeSelection
    """
    if not np.isfinite(optimal_objective):
        raise ValueError(f"optimal_objective={optimal_objective!r} must be finite.")
    if epsilon < 0:
        raise ValueError(f"epsilon={epsilon!r} must be >= 0.")
    if len(step_sizes) == 0 or any(not step > 0 for step in step_sizes):
        raise ValueError(f"step_sizes={step_sizes!r} must be a non-empty list of positive steps.")
    objectives, models = {}, {}
    for step in sorted(step_sizes):
        values = []
        for seed in seeds:
            model = clone(estimator).set_params(step_size=step, random_state=seed)
            with np.errstate(all="ignore"):
                try:
                    model.fit(X, y)
                    value = float(model.objective(X, y))
                except (FloatingPointError, OverflowError, ValueError):
                    value = np.inf
            values.append(value if np.isfinite(value) else np.inf)
            models.setdefault(step, model)
        objectives[step] = float(np.mean(values))
    threshold = (1.0 + epsilon) * optimal_objective
    stable = [step for step, value in objectives.items() if value <= threshold]
    if not stable:
        return StepSizeSelection(None, float("nan"), None, objectives)
    best = max(stable)
    return StepSizeSelection(best, objectives[best], models[best], objectives)
