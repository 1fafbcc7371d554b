"""Pure-NumPy references for the S3GD family's averaged output (stochsvm.linear.sgd)."""

import numpy as np


def averaged_prox_twin(X, y, batches, scales, step, alpha, l1_ratio, loss="log_loss",
                       loss_parameter=None):
    """Plain mini-batch prox-SGD steps (no control variate, intercept fitted), returning the
    last iterate, the mean of the iterates after each step, that mean soft-thresholded once
    more at ``step * alpha * l1_ratio`` (the averaged output), and the mean intercept.
    Returns ``(coef, intercept, mean_coef, averaged_coef, mean_intercept)``."""
    from stochsvm._core.losses import get_margin_loss

    margin_loss = get_margin_loss(loss)
    X = np.asarray(X, dtype=np.float64)
    n_features = X.shape[1]
    coef, intercept = np.zeros(n_features), 0.0
    coef_sum, intercept_sum = np.zeros(n_features), 0.0
    strength = step * alpha
    for t in range(batches.shape[0]):
        rows = batches[t]
        margins = y[rows] * (X[rows] @ coef + intercept)
        factors = scales[t] * margin_loss.derivative(margins, loss_parameter) * y[rows]
        point = coef - step * (factors @ X[rows]) / len(rows)
        coef = np.sign(point) * np.maximum(np.abs(point) - strength * l1_ratio, 0.0) / (
            1.0 + strength * (1.0 - l1_ratio))
        intercept -= step * factors.sum() / len(rows)
        coef_sum += coef
        intercept_sum += intercept
    count = batches.shape[0]
    mean_coef = coef_sum / count
    averaged = np.sign(mean_coef) * np.maximum(np.abs(mean_coef) - strength * l1_ratio, 0.0)
    return coef, intercept, mean_coef, averaged, intercept_sum / count
