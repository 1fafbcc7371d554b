r"""A box-constrained convex quadratic program solved exactly by cyclic coordinate descent.

:math:`\min_a \tfrac12 a^\top Q a - m^\top a` over :math:`0 \le a \le c`, the dual of a
bias-free SVM: the convex steps of :class:`~stochsvm.semi.tsvm.CCCPTSVM`
(:func:`~stochsvm.semi.tsvm.balanced_cccp_step`), whose balancing constraint
``sklearn.svm.SVC``'s free intercept cannot express.
"""

from __future__ import annotations

import numba
import numpy as np

from .._core.monitor import chunk_stops

__all__ = ["box_qp_coordinate_descent", "solve_box_qp"]


@numba.njit(cache=True)
def box_qp_coordinate_descent(quadratic, upper, a, gradient, tol, max_epochs):
    """Cyclic exact coordinate minimization of ``1/2 a'Qa - m'a`` over ``0 <= a <= c``.

    ``a`` and ``gradient`` (``= Q a - m``) are updated in place. One epoch visits every
    coordinate once; the loop stops after the first epoch that starts with a largest
    projected-gradient violation ``<= tol``. Returns the number of epochs run.
    """
    n = a.shape[0]
    for epoch in range(max_epochs):
        violation = 0.0
        for i in range(n):
            g = gradient[i]
            if a[i] <= 0.0:
                v = -g if g < 0.0 else 0.0
            elif a[i] >= upper[i]:
                v = g if g > 0.0 else 0.0
            else:
                v = abs(g)
            if v > violation:
                violation = v
        if violation <= tol:
            return epoch
        for i in range(n):
            diagonal = quadratic[i, i]
            if diagonal > 1e-14:
                target = a[i] - gradient[i] / diagonal
            elif gradient[i] < 0.0:
                target = upper[i]
            else:
                target = 0.0
            if target < 0.0:
                target = 0.0
            elif target > upper[i]:
                target = upper[i]
            delta = target - a[i]
            if delta != 0.0:
                a[i] = target
                row = quadratic[i]
                for j in range(n):
                    gradient[j] += delta * row[j]
    return max_epochs


def solve_box_qp(quadratic, linear, upper, start=None, tol=1e-9, max_epochs=100000):
    r"""Minimize :math:`\tfrac12 a^\top Q a - m^\top a` over :math:`0 \le a \le c`.

    Exact cyclic coordinate descent (the dual coordinate method of LIBLINEAR without shrinking)
    until the largest projected-gradient violation is at most ``tol``. ``Q`` must be positive
    semi-definite. Returns ``(a, value, epochs)``. The epochs run in calls of bounded work
    (:func:`~stochsvm._core.monitor.chunk_stops`), the same arithmetic as one call.
    """
    n = len(linear)
    if n == 0:
        return np.zeros(0), 0.0, 0
    quadratic = np.ascontiguousarray(quadratic, dtype=np.float64)
    linear = np.asarray(linear, dtype=np.float64)
    upper = np.asarray(upper, dtype=np.float64)
    a = np.zeros(n) if start is None else np.clip(np.asarray(start, dtype=np.float64), 0.0,
                                                     upper)
    gradient = quadratic @ a - linear
    # calls of a bounded number of epochs (one epoch: a row of Q a coordinate at most), so
    # that Ctrl-C acts between them; a and gradient carry the state, and a call that stops
    # before its last epoch has converged
    epochs = 0
    for stop in chunk_stops(int(max_epochs), float(n) * (n + 1)):
        budget = stop - epochs
        done = box_qp_coordinate_descent(quadratic, upper, a, gradient, float(tol), budget)
        epochs += done
        if done < budget:
            break
    value = 0.5 * a @ (quadratic @ a) - linear @ a
    return a, float(value), int(epochs)
