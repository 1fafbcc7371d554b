"""Pure-NumPy twins and exact references for the exact transductive SVMs (SelfLabelingTSVM,
CCCPTSVM) and the budgeted S3VM (BGS3VM): slow, written for clarity, used only by the tests."""

import numpy as np
from sklearn.datasets import make_circles, make_moons


def box_qp_coordinate_descent_twin(quadratic, linear, upper, a, n_epochs):
    """``n_epochs`` cyclic exact coordinate steps on ``1/2 a'Qa - m'a``, ``0 <= a <= c``
    (twin of ``box_qp_coordinate_descent`` with its stopping test switched off)."""
    a = np.array(a, dtype=np.float64)
    for _ in range(n_epochs):
        for i in range(len(a)):
            gradient = quadratic[i] @ a - linear[i]
            if quadratic[i, i] > 1e-14:
                target = a[i] - gradient / quadratic[i, i]
            else:
                target = upper[i] if gradient < 0 else 0.0
            a[i] = min(max(target, 0.0), upper[i])
    return a


def box_qp_projected_gradient_violation(quadratic, linear, upper, a):
    """Largest violation of the KKT conditions of the box QP at ``a``."""
    gradient = quadratic @ a - linear
    violation = np.where(a <= 0.0, np.maximum(-gradient, 0.0),
                         np.where(a >= upper, np.maximum(gradient, 0.0), np.abs(gradient)))
    return float(violation.max())


def semi_supervised_split(X, y, n_per_class, seed):
    """``y`` with all but ``n_per_class`` random samples of each class set to -1."""
    rng = np.random.RandomState(seed)
    labeled = np.concatenate([rng.choice(np.flatnonzero(y == label), n_per_class,
                                         replace=False) for label in np.unique(y)])
    y_semi = -np.ones_like(y)
    y_semi[labeled] = y[labeled]
    return y_semi, labeled


def two_moons(n_train=300, n_test=1000, noise=0.2):
    X, y = make_moons(n_train, noise=noise, random_state=0)
    X_test, y_test = make_moons(n_test, noise=noise, random_state=1)
    return X, y, X_test, y_test


def two_circles(n_train=300, n_test=1000, noise=0.1):
    X, y = make_circles(n_train, noise=noise, factor=0.5, random_state=0)
    X_test, y_test = make_circles(n_test, noise=noise, factor=0.5, random_state=1)
    return X, y, X_test, y_test


def bgs3vm_steps_twin(X, targets, labeled_batches, unlabeled_batches, steps, labeled_scale,
                      unlabeled_scales, kernel, labeled_derivative, unlabeled_derivative,
                      capacities, self_kernel, reference=None, balance_target=0.0):
    """Replay of ``bgs3vm_steps`` with NumPy: returns ``(pools, intercept)`` where
    ``pools[p]`` is a list of ``[row, coef, mean_kernel]`` in slot order.

    ``kernel(A, B)`` is a kernel block; ``labeled_derivative(m)`` the hinge derivative in the
    margin, ``unlabeled_derivative(r)`` the unlabeled loss derivative; ``self_kernel[i]`` is
    ``k(x_i, x_i)``.
    """
    pools = [[], []]
    balance = reference is not None

    def intercept():
        if not balance:
            return 0.0
        return balance_target - sum(c * m for pool in pools for _, c, m in pool)

    def output(row):
        value = intercept()
        for pool in pools:
            for sample, coef, _ in pool:
                value += coef * kernel(X[sample:sample + 1], X[row:row + 1])[0, 0]
        return value

    for t, eta in enumerate(steps):
        rows = list(labeled_batches[t]) + list(unlabeled_batches[t])
        outputs = [output(row) for row in rows]
        for pool in pools:
            for entry in pool:
                entry[1] *= 1.0 - eta
        for b, row in enumerate(rows):
            if b < labeled_batches.shape[1]:
                y = targets[row]
                delta = -eta * labeled_scale * y * labeled_derivative(y * outputs[b])
                p = 0
            else:
                delta = -eta * unlabeled_scales[t] * unlabeled_derivative(outputs[b])
                p = 1
            if delta == 0.0:
                continue
            existing = [entry for pool in pools for entry in pool if entry[0] == row]
            if existing:
                existing[0][1] += delta
                continue
            pool = pools[p]
            mean_kernel = (float(kernel(X[row:row + 1], X[reference]).mean())
                           if balance else 0.0)
            if len(pool) < capacities[p]:
                pool.append([row, delta, mean_kernel])
                continue
            sizes = [abs(c) * np.sqrt(self_kernel[s]) for s, c, _ in pool]
            smallest = int(np.argmin(sizes))
            new_size = abs(delta) * np.sqrt(self_kernel[row])
            if sizes[smallest] < new_size:
                pool[smallest] = [row, delta, mean_kernel]
    return pools, intercept()
