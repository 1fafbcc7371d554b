"""SCSKernelSVC: kernel SVM by stochastic conjugate subgradient (SCS).

Objective (no bias; eq. (2) of the SCS paper is the case ``C = 1/m``)::

    F(a) = 1/2 a^T K a + C sum_i s_i max(0, 1 - y_i (K a)_i),     beta = sum_j a_j phi(x_j).

Iteration ``k`` (Alg. 1, simplified):

1. draw a sample ``S_k`` of ``batch_size`` indices and form the sampled objective
   ``F_k(a) = 1/2 a^T K a + C (m/|S_k|) sum_{i in S_k} s_i hinge(y_i (K a)_i)``;
2. a subgradient of ``F_k`` in the RKHS has coefficients
   ``g = a - C (m/|S_k|) sum_{i in S_k, y_i (Ka)_i < 1} s_i y_i e_i`` (eq. 4);
3. direction finding (Alg. 2): the minimum-``K``-norm point ``d`` of the convex hull of the
   previous direction ``d_{k-1}`` and the last ``bundle_size`` sampled subgradients, found
   by projected gradient on the simplex weights ``w`` minimizing ``w^T G w``,
   ``G = B^T K B``;
4. line search: the exact minimizer ``t >= 0`` of the convex piecewise quadratic
   ``F_k(a - t d)`` (bisection on its monotone derivative);
5. every ``eval_every`` iterations the full objective is recorded and the best iterate so far
   (the incumbent) is kept; stop when ``tol`` is met or after ``max_iter`` iterations.

The Gram matrix of the training set is held in memory (``8 m^2`` bytes) under
``memory_budget``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.kernels import check_kernel_budget
from .._core.monitor import TrainingMonitor
from .._core.validation import check_positive, check_positive_int
from ._base import BaseKernelClassifier

__all__ = ["SCSKernelSVC"]


def _line_search(a_gram_d, d_gram_d, margins, step_margins, scale, maximum=1e12):
    """Minimize ``phi(t) = 1/2||a - t d||_K^2 + scale sum_i hinge(margins_i - t step_margins_i)``.

    ``phi'(t) = t ||d||^2 - <a, d>_K + sum_{margin_i(t) < 1} scale_i step_margins_i``.
    """
    def derivative(t):
        active = (margins - t * step_margins) < 1.0
        return t * d_gram_d - a_gram_d + (scale[active] * step_margins[active]).sum()

    if derivative(0.0) >= 0.0:
        return 0.0
    upper = 1.0
    while derivative(upper) < 0.0 and upper < maximum:
        upper *= 2.0
    lower = 0.0
    for _ in range(60):
        middle = 0.5 * (lower + upper)
        if derivative(middle) < 0.0:
            lower = middle
        else:
            upper = middle
    return 0.5 * (lower + upper)


def _project_simplex(vector):
    ordered = np.sort(vector)[::-1]
    cumulative = np.cumsum(ordered) - 1.0
    ranks = np.arange(1, len(vector) + 1)
    last = np.nonzero(ordered - cumulative / ranks > 0)[0][-1]
    return np.maximum(vector - cumulative[last] / (last + 1.0), 0.0)


def _min_norm_point(gram, n_steps=300):
    """Weights ``w`` on the simplex minimizing ``w^T G w`` (min-norm point of a bundle)."""
    size = gram.shape[0]
    weights = np.full(size, 1.0 / size)
    step = 1.0 / max(np.trace(gram), 1e-300)
    for _ in range(n_steps):
        weights = _project_simplex(weights - step * (gram @ weights))
    return weights


class SCSKernelSVC(BaseKernelClassifier):
    """Kernel SVM (no bias) by stochastic conjugate subgradient.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge sum, as in ``sklearn.svm.SVC`` (the paper's eq. (2): ``C = 1/m``).
    kernel : {"rbf", "linear", "poly"}, default="rbf"
    gamma : float or None, default=None
        ``None`` means ``1 / (n_features Var(X))``.
    degree : int, default=3
    coef0 : float, default=0.0
    batch_size : int, default=64
        Size of the first sample ``S_1``.
    sample_growth : float, default=1.05
        ``|S_k| = min(m, ceil(batch_size sample_growth^(k-1)))``: the sample grows, as SCS
        requires for convergence, until it is the whole training set.
    bundle_size : int, default=1
        Number of recent sampled subgradients kept, with the previous direction, in the
        bundle whose minimum-norm point is the next direction (Alg. 2).
    eval_every : int, default=10
        Iterations between full-objective records.
    max_iter : int, default=2000
    tol : float or None, default=1e-6
        Stop when the recorded objective stalls (relative, see TrainingMonitor) or the
        direction norm ``||d||_K`` falls below ``tol``. ``None`` disables both rules.
    memory_budget : float, default=2**30
        Bytes allowed for the Gram matrix.
    random_state, verbose, callback : as elsewhere in the package.
    """

    def __init__(self, C=1.0, kernel="rbf", gamma=None, degree=3, coef0=0.0, batch_size=64,
                 sample_growth=1.05, bundle_size=1, eval_every=10, max_iter=2000, tol=1e-6, memory_budget=2**30,
                 random_state=None, verbose=0, callback=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.batch_size = batch_size
        self.sample_growth = sample_growth
        self.bundle_size = bundle_size
        self.eval_every = eval_every
        self.max_iter = max_iter
        self.tol = tol
        self.memory_budget = memory_budget
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _resolve_parameters(self, n_samples):
        self._batch_size = min(check_positive_int(self.batch_size, "batch_size"), n_samples)
        self._sample_growth = float(self.sample_growth)
        if not self._sample_growth >= 1.0:
            raise ValueError(f"sample_growth={self.sample_growth!r} must be >= 1.")
        self._bundle_size = check_positive_int(self.bundle_size, "bundle_size")
        self._eval_every = check_positive_int(self.eval_every, "eval_every")
        self._max_iter = check_positive_int(self.max_iter, "max_iter")
        self._tol = None if self.tol is None else float(check_positive(self.tol, "tol"))
        check_positive(self.memory_budget, "memory_budget")
        check_kernel_budget(n_samples, n_samples, self.memory_budget,
                            "Raise memory_budget or train on a subsample.")

    def _fit_binary(self, X, signs, weights, rng, index):
        n = X.shape[0]
        gram = self._kernel(X, X)
        costs = self._C * weights
        monitor = TrainingMonitor(tol=self._tol, verbose=self.verbose, callback=self.callback,
                                  label=f"SCSKernelSVC[{index}] ")
        a = np.zeros(n)
        scores = np.zeros(n)  # K a
        direction = None
        bundle, gram_bundle = [], []
        gram_direction = None
        best_value, best_a = np.inf, a.copy()
        converged = False
        iteration = samples_seen = 0
        for iteration in range(1, self._max_iter + 1):
            size = min(n, int(np.ceil(self._batch_size * self._sample_growth ** (iteration - 1))))
            scale = n / size
            sample = rng.choice(n, size, replace=False)
            samples_seen += size
            margins = signs[sample] * scores[sample]
            gradient = a.copy()
            violated = sample[margins < 1.0]
            gradient[violated] -= scale * costs[violated] * signs[violated]
            gram_gradient = gram @ gradient
            bundle.append(gradient)
            gram_bundle.append(gram_gradient)
            had_direction = direction is not None
            if had_direction:
                bundle.append(direction)
                gram_bundle.append(gram_direction)
            weights_bundle = _min_norm_point(np.array([[u @ v for v in gram_bundle]
                                                       for u in bundle]))
            direction = sum(w * u for w, u in zip(weights_bundle, bundle))
            gram_direction = sum(w * u for w, u in zip(weights_bundle, gram_bundle))
            if had_direction:
                bundle.pop()
                gram_bundle.pop()
            del bundle[:-self._bundle_size]
            del gram_bundle[:-self._bundle_size]
            d_norm = float(direction @ gram_direction)
            if self._tol is not None and d_norm <= self._tol ** 2:
                converged = True
            step_margins = signs[sample] * gram_direction[sample]
            step = _line_search(float(a @ gram_direction), d_norm, margins, step_margins,
                                scale * costs[sample])
            if step * d_norm ** 0.5 <= 1e-12 * (1.0 + float(a @ scores) ** 0.5):
                # Null step: the bundle's min-norm point gives no descent on F_k; restart the
                # bundle from the current sampled subgradient (Alg. 2 restarts).
                bundle, gram_bundle = [], []
                direction = None
                continue
            a = a - step * direction
            scores = scores - step * gram_direction
            if iteration % self._eval_every == 0 or converged or iteration == self._max_iter:
                value = 0.5 * a @ scores + np.sum(costs * np.maximum(0.0, 1.0 - signs * scores))
                if value < best_value:
                    best_value, best_a = float(value), a.copy()
                stop = monitor.record({"iteration": iteration, "samples_seen":
                                       samples_seen, "objective": float(value),
                                       "direction_norm": d_norm ** 0.5})
                if stop:
                    converged = True
            if converged:
                break
        final_value = 0.5 * a @ scores + np.sum(costs * np.maximum(0.0, 1.0 - signs * scores))
        if final_value < best_value:
            best_a = a.copy()
        if not converged and self._tol is not None:
            warnings.warn(f"SCSKernelSVC reached max_iter={self._max_iter} before the stopping "
                          "rule was met; raise max_iter.", ConvergenceWarning)
        return best_a, monitor.history, iteration
