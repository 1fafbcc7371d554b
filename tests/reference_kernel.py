"""Plain NumPy twins of the compiled loops of the kernel SVM family.

* :func:`line_search_twin` -- Alg. 2 of the SCS paper written with Python closures, evaluating
  the one-dimensional function from the full vectors at every trial.
* :func:`kernel_pegasos_twin` -- Fig. 3 of the Pegasos paper, computing every kernel row from
  the data at every step (no chunking, no block reuse).
"""

import functools

import numpy as np

from stochsvm._core.kernels import kernel_block, resolve_gamma

from .reference import binary_breast_cancer, binary_digits, exact_kernel_svm


def line_values_twin(t, margins, step_margins, costs, d_Q_a, d_Q_d):
    """``phi(t) - a^T Q a / 2`` and ``phi'(t)`` (active hinge terms: margin < 1).

    Summed term by term in index order, so that the rounding is that of the compiled loop and
    the two line searches take the same branches even at hinge kinks."""
    value = t * d_Q_a + 0.5 * t * t * d_Q_d
    slope = d_Q_a + t * d_Q_d
    for margin, step_margin, cost in zip(margins.tolist(), step_margins.tolist(),
                                         costs.tolist()):
        current = margin + t * step_margin
        if current < 1.0:
            value += cost * (1.0 - current)
            slope -= cost * step_margin
    return value, slope


def line_search_twin(margins, step_margins, costs, d_Q_a, d_Q_d, squared_norm, t_start, t_low,
                     t_high, m1, m2, max_halvings):
    """Alg. 2 as printed (with points outside L and R treated as too long); same returns as
    :func:`stochsvm.kernel._conjugate.line_search`: the null step (step 11) reports the last
    trial evaluated, and a bisection that closes on a kink returns its right end when that
    end is in L."""
    base = line_values_twin(0.0, margins, step_margins, costs, d_Q_a, d_Q_d)[0]

    def classify(t):
        value, slope = line_values_twin(t, margins, step_margins, costs, d_Q_a, d_Q_d)
        in_l = value - base <= -m1 * squared_norm * t
        if in_l and 0.0 > slope >= -m2 * squared_norm:
            return "good"
        if in_l and slope < -m2 * squared_norm:
            return "short"
        return "long, in L" if in_l else "long"

    t = t_start
    kind = classify(t)
    if kind == "good":
        return t, t, 0
    if kind == "short":
        for _ in range(max_halvings):
            trial = 2.0 * t
            if trial > t_high:
                return t, trial, 1
            kind = classify(trial)
            if kind == "good":
                return trial, trial, 0
            if kind.startswith("long"):
                lower, upper = t, trial
                break
            t = trial
        else:
            return t, t, 3
    else:
        while True:
            if 0.5 * t < t_low:
                return 0.0, t, 2
            t = 0.5 * t
            kind = classify(t)
            if kind == "good":
                return t, t, 0
            if kind == "short":
                lower, upper = t, 2.0 * t
                break
    upper_in_l = False
    for _ in range(max_halvings):
        t = 0.5 * (lower + upper)
        kind = classify(t)
        if kind == "good":
            return t, t, 0
        if kind == "short":
            lower = t
        else:
            upper = t
            upper_in_l = kind == "long, in L"
    if upper_in_l:
        return upper, upper, 3
    return lower, t, 3


def kernel_pegasos_twin(X, y, weights, draws, regularization, kernel="rbf", gamma=1.0,
                        intercept_offset=0.0):
    """Fig. 3 of the Pegasos paper step by step; returns the counts ``alpha`` after the draws."""
    counts = np.zeros(X.shape[0])
    for step, i in enumerate(draws, start=1):
        row = kernel_block(X[i:i + 1], X, kernel, gamma)[0] + intercept_offset
        score = np.sum(counts * y * row)
        if y[i] * score < regularization * step:
            counts[i] += weights[i]
    return counts


@functools.lru_cache(maxsize=None)
def exact_rbf_optimum(name, C=1.0, intercept_offset=0.0):
    """``exact_kernel_svm`` on ``"breast_cancer"`` or ``"digits"`` (the binary tasks of
    ``tests/reference.py``) with the RBF kernel and ``gamma="scale"``, plus
    ``intercept_offset`` (:math:`s^2` of ``fit_intercept=True``) on every kernel value; cached,
    since the digits problem takes seconds and several test files need it. Returns
    ``(a, primal, dual)``."""
    loader = {"breast_cancer": binary_breast_cancer, "digits": binary_digits}[name]
    X, y = loader()
    gram = kernel_block(X, X, "rbf", resolve_gamma("scale", X)) + intercept_offset
    return exact_kernel_svm(gram, y, C)
