"""Slow, plain NumPy transcriptions ("twins") of the compiled solver loops.

Each twin updates every coordinate at every step (no lazy catch-up, no scaling tricks), so it is
obviously a transcription of the paper's update; tests check that the compiled loop produces the
same iterates given the same sample order.
"""

import numpy as np
import scipy.sparse as sp


def _rows(X):
    """Dense float64 rows of X, whatever its format."""
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


# ======================================================================================
# SADMM (stochsvm/linear/sadmm.py), eq. (12) of the SADMM paper
# ======================================================================================
def sadmm_twin(X, y, weights, orders, rhos, alpha, l1_ratio, fit_intercept=True,
               average_start=0):
    """SADMM passes ``orders[k]`` with penalty parameter ``rhos[k]``.

    Returns ``(z_last, mu_last, intercept_last, z_average, w_average, intercept_average)``;
    ``average_start=None`` averages nothing (the averages are returned as zeros).
    """
    rows = _rows(X)
    n_features = rows.shape[1]
    z = np.zeros(n_features)
    mu = np.zeros(n_features)
    intercept = 0.0
    z_sum = np.zeros(n_features)
    w_sum = np.zeros(n_features)
    intercept_sum = 0.0
    step = 0
    for order, rho in zip(orders, rhos):
        strength = alpha / rho
        for i in order:
            x, label, weight = rows[i], y[i], weights[i]
            norm_squared = x @ x + (1.0 if fit_intercept else 0.0)
            inner = (z - mu / rho) @ x + intercept
            beta = 0.0
            if norm_squared > 0:
                beta = np.clip(rho * (1.0 - label * inner) / norm_squared, 0.0, weight)
            w = z - mu / rho + beta * label * x / rho
            v = w + mu / rho
            z = np.sign(v) * np.maximum(np.abs(v) - strength * l1_ratio, 0.0) / (
                1.0 + strength * (1.0 - l1_ratio)
            )
            mu = mu + rho * (w - z)
            if fit_intercept:
                intercept += beta * label / rho
            step += 1
            if average_start is not None and step > average_start:
                z_sum += z
                w_sum += w
                intercept_sum += intercept
    counted = 0 if average_start is None else max(0, step - average_start)
    if counted == 0:
        return z, mu, intercept, np.zeros(n_features), np.zeros(n_features), 0.0
    return z, mu, intercept, z_sum / counted, w_sum / counted, intercept_sum / counted

