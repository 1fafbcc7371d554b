"""Pure-NumPy twins of the compiled loops and training loops of the semi-supervised solvers
(TSGS3VM, FRS3VM): slow, written for clarity, used only by the tests."""

import numpy as np

from stochsvm._core.random_features import feature_block


def cosine_feature_scores_reference(projections, offset, coefficients):
    """``cos(P + b) @ a`` (twin of ``cosine_feature_scores``)."""
    return np.cos(projections + offset) @ coefficients


def _loss_derivatives(outputs, signs, n_batch_labeled, labeled_weight, unlabeled_weight,
                      unlabeled_loss, unlabeled_parameter, ramp):
    labeled = outputs[:n_batch_labeled]
    weights = np.empty(outputs.shape[0])
    weights[:n_batch_labeled] = labeled_weight * np.where(signs * labeled < 1.0, -signs, 0.0)
    weights[n_batch_labeled:] = ramp * unlabeled_weight * unlabeled_loss.derivative(
        outputs[n_batch_labeled:], unlabeled_parameter)
    return weights


def tsgs3vm_reference(X_labeled, y_signed, X_unlabeled, batches, *, seed, C, C_star, gamma,
                      kernel, unlabeled_loss, unlabeled_parameter, block_size, step,
                      balance=True, ramp_up=0.0, labeled_steps=1):
    """Alg. 1 of the TSGS3VM paper written plainly (eager scaling of every old block, the
    whole model re-evaluated feature by feature with ``np.cos``), float64.

    ``batches`` is the list of ``(labeled_indices, unlabeled_indices)`` of each iteration;
    ``step`` a constant or one step per step (``len(batches) * labeled_steps``). Each
    iteration takes ``labeled_steps`` steps on its new block: the first with the gradient at
    the iteration's start, the others with the labeled hinge derivatives re-evaluated from
    the whole model and the first step's unlabeled gradient.
    Returns ``(alphas, intercepts)``: the coefficient blocks after the last iteration and the
    intercept used at each iteration.
    """
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    m = block_size
    alphas, blocks, intercepts = [], [], []
    target = float(np.mean(y_signed))
    n_iterations = len(batches)
    steps = np.broadcast_to(np.asarray(step, dtype=np.float64),
                            (n_iterations * labeled_steps,))

    def evaluate(X_rows):
        outputs = np.zeros(X_rows.shape[0])
        for (omega, offset), alpha in zip(blocks, alphas):
            outputs += np.sqrt(2.0 / m) * np.cos(X_rows @ omega + offset) @ alpha
        return outputs

    for iteration, (labeled_indices, unlabeled_indices) in enumerate(batches):
        X_batch = np.vstack([_dense(X_labeled[labeled_indices]),
                             _dense(X_unlabeled[unlabeled_indices])])
        outputs = evaluate(X_batch)
        n_batch_labeled = len(labeled_indices)
        intercept = 0.0
        if balance and n_unlabeled:
            intercept = target - outputs[n_batch_labeled:].mean()
        outputs += intercept
        intercepts.append(intercept)
        ramp = min(1.0, (iteration + 1) / (ramp_up * n_iterations)) if ramp_up > 0 else 1.0
        labeled_weight = C * n_labeled / len(labeled_indices)
        weights = _loss_derivatives(
            outputs, y_signed[labeled_indices], n_batch_labeled, labeled_weight,
            C_star * n_unlabeled / len(unlabeled_indices) if len(unlabeled_indices) else 0.0,
            unlabeled_loss, unlabeled_parameter, ramp)
        omega, offset = feature_block(seed, iteration, X_batch.shape[1], m, gamma, kernel)
        features = np.sqrt(2.0 / m) * np.cos(X_batch @ omega + offset)
        unlabeled_part = features[n_batch_labeled:].T @ weights[n_batch_labeled:]
        alphas.append(np.zeros(m))
        blocks.append((omega, offset))
        for sub in range(labeled_steps):
            step_now = steps[iteration * labeled_steps + sub]
            if sub:
                margins = y_signed[labeled_indices] * (evaluate(X_batch[:n_batch_labeled])
                                                       + intercept)
                weights[:n_batch_labeled] = np.where(
                    margins < 1.0, -labeled_weight * y_signed[labeled_indices], 0.0)
            gradient = features[:n_batch_labeled].T @ weights[:n_batch_labeled] + unlabeled_part
            alphas = [(1.0 - step_now) * alpha for alpha in alphas]  # Alg. 1 line 8
            alphas[-1] = alphas[-1] - step_now * gradient               # eq. (7), line 7
    return alphas, intercepts


def random_feature_scores_reference(X, alphas, seed, block_size, gamma, kernel):
    """Alg. 2 of the TSGS3VM paper: regenerate every block and sum."""
    X = _dense(X)
    scores = np.zeros(X.shape[0])
    for index, alpha in enumerate(alphas):
        omega, offset = feature_block(seed, index, X.shape[1], block_size, gamma, kernel)
        scores += np.sqrt(2.0 / block_size) * np.cos(X @ omega + offset) @ alpha
    return scores


def _dense(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)


def frs3vm_reference(X_labeled, y_signed, X_unlabeled, batches, *, omega, offset, C, C_star,
                     unlabeled_loss, unlabeled_parameter, step, balance=True, ramp_up=0.0):
    """Mini-batch SGD on fixed random features, written plainly in float64: returns ``w``."""
    n_labeled, n_unlabeled = X_labeled.shape[0], X_unlabeled.shape[0]
    D = omega.shape[1]
    w = np.zeros(D)
    target = float(np.mean(y_signed))
    for iteration, (labeled_indices, unlabeled_indices) in enumerate(batches):
        X_batch = np.vstack([_dense(X_labeled[labeled_indices]),
                             _dense(X_unlabeled[unlabeled_indices])])
        Z = np.sqrt(2.0 / D) * np.cos(X_batch @ omega + offset)
        outputs = Z @ w
        n_batch_labeled = len(labeled_indices)
        if balance and n_unlabeled:
            outputs += target - outputs[n_batch_labeled:].mean()
        ramp = min(1.0, (iteration + 1) / (ramp_up * len(batches))) if ramp_up > 0 else 1.0
        weights = _loss_derivatives(
            outputs, y_signed[labeled_indices], n_batch_labeled,
            C * n_labeled / len(labeled_indices),
            C_star * n_unlabeled / len(unlabeled_indices) if len(unlabeled_indices) else 0.0,
            unlabeled_loss, unlabeled_parameter, ramp)
        w = (1.0 - step) * w - step * Z.T @ weights
    return w
