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
def paper_sadmm(**parameters):
    """``SADMMClassifier`` running eq. (12) itself (``solver="stochastic"``), with the
    intercept's constant feature :math:`c = 1` of :func:`sadmm_twin` unless given."""
    from stochsvm import SADMMClassifier

    return SADMMClassifier(**{"solver": "stochastic", "intercept_scaling": 1.0, **parameters})


def sadmm_twin(X, y, weights, orders, rhos, alpha, l1_ratio, fit_intercept=True,
               average_start=0, intercept_scaling=1.0):
    """SADMM passes ``orders[k]`` with penalty parameter ``rhos[k]``; the intercept is the
    coefficient ``v`` of a constant feature of value ``intercept_scaling`` (``b = c v``).

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
            norm_squared = x @ x + (intercept_scaling ** 2 if fit_intercept else 0.0)
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
                # v += (beta y / rho) c, so b = c v moves by c^2 beta y / rho
                intercept += intercept_scaling ** 2 * beta * label / rho
            step += 1
            if average_start is not None and step > average_start:
                z_sum += z
                w_sum += w
                intercept_sum += intercept
    counted = 0 if average_start is None else max(0, step - average_start)
    if counted == 0:
        return z, mu, intercept, np.zeros(n_features), np.zeros(n_features), 0.0
    return z, mu, intercept, z_sum / counted, w_sum / counted, intercept_sum / counted



# ======================================================================================
# RDA (stochsvm/linear/rda.py), eq. (13) of the SADMM paper / Xiao (2010)
# ======================================================================================
def rda_twin(X, y, weights, orders, alpha, l1_ratio, gamma, sparsity_boost=0.0, loss="hinge",
             fit_intercept=True, average_start=None):
    """RDA passes over ``orders``: every step recomputes the whole iterate from the average
    gradient, w = argmin <g_bar, w> + alpha R(w) + (gamma / sqrt(t)) h(w).

    Returns ``(coef_last, intercept_last, gradient_sum, intercept_gradient_sum, coef_average,
    intercept_average)`` where the last iterate is the one after the final step and the
    averages run over the iterates after the steps ``t > average_start`` (zeros when
    ``average_start`` is None or nothing was averaged).
    """
    from stochsvm._core.losses import get_margin_loss

    margin_loss = get_margin_loss(loss)
    rows = _rows(X)
    n_features = rows.shape[1]
    gradient_sum = np.zeros(n_features)
    intercept_gradient_sum = 0.0

    def iterate(count):
        if count == 0:
            return np.zeros(n_features), 0.0
        average_gradient = gradient_sum / count
        proximal_weight = gamma / np.sqrt(count)  # beta_t / t
        threshold = alpha * l1_ratio + sparsity_boost * proximal_weight
        shrink = alpha * (1.0 - l1_ratio) + proximal_weight
        coef = -np.sign(average_gradient) * np.maximum(
            np.abs(average_gradient) - threshold, 0.0) / shrink
        intercept = -(intercept_gradient_sum / count) / proximal_weight
        return coef, intercept

    coef_sum = np.zeros(n_features)
    intercept_sum = 0.0
    step = 0
    for order in orders:
        for i in order:
            coef, intercept = iterate(step)
            margin = y[i] * (rows[i] @ coef + intercept)
            gradient = weights[i] * float(margin_loss.derivative(margin)) * y[i]
            gradient_sum += gradient * rows[i]
            if fit_intercept:
                intercept_gradient_sum += gradient
            step += 1
            if average_start is not None and step > average_start:
                coef, intercept = iterate(step)
                coef_sum += coef
                intercept_sum += intercept
    coef, intercept = iterate(step)
    counted = 0 if average_start is None else max(0, step - average_start)
    if counted == 0:
        return coef, intercept, gradient_sum, intercept_gradient_sum, np.zeros(n_features), 0.0
    return (coef, intercept, gradient_sum, intercept_gradient_sum, coef_sum / counted,
            intercept_sum / counted)


# ======================================================================================
# Pegasos (stochsvm/linear/pegasos.py), Fig. 1-2 of Shalev-Shwartz et al. (2011)
# ======================================================================================
def pegasos_twin(X, y, weights, order, alpha, t0, batch_size, radius, fit_intercept=True,
                 average_start=0, loss_derivative=None, batches_done=0):
    """Mini-batch Pegasos on plain vectors; return ``(w, b, w_average, b_average)``.

    Batch ``t`` (``t = batches_done, ...``) is ``order[t k:(t + 1) k]``; its step is
    ``eta = 1 / (alpha (t + t0))``; ``w <- (1 - eta alpha) w - (eta / k) sum s l'(m) y x``, then
    ``w`` is projected onto the ball of radius ``radius`` (``None``: no projection). The
    intercept takes the same step without shrinkage. A batch counts in the average when the
    samples seen at its end exceed ``average_start`` (``None``: no average, zeros returned).
    ``loss_derivative`` defaults to the hinge's ``-1 if m < 1 else 0``.
    """
    if loss_derivative is None:
        def loss_derivative(margin):
            return -1.0 if margin < 1.0 else 0.0
    rows = _rows(X)
    w = np.zeros(rows.shape[1])
    b = 0.0
    w_sum = np.zeros(rows.shape[1])
    b_sum = 0.0
    counted = 0
    for number, start in enumerate(range(0, len(order), batch_size)):
        batch = order[start:start + batch_size]
        eta = 1.0 / (alpha * (batches_done + number + t0))
        gradient = np.zeros(rows.shape[1])
        gradient_b = 0.0
        for i in batch:
            margin = y[i] * (rows[i] @ w + b)
            derivative = weights[i] * loss_derivative(margin) * y[i]
            gradient += derivative * rows[i]
            gradient_b += derivative
        w = (1.0 - eta * alpha) * w - eta * gradient / len(batch)
        if fit_intercept:
            b = b - eta * gradient_b / len(batch)
        if radius is not None and np.linalg.norm(w) > radius:
            w = w * radius / np.linalg.norm(w)
        if average_start is not None and start + len(batch) > average_start:
            w_sum += w
            b_sum += b
            counted += 1
    if counted == 0:
        return w, b, np.zeros_like(w), 0.0
    return w, b, w_sum / counted, b_sum / counted


# ======================================================================================
# Comid / FOBOS (stochsvm/linear/comid.py), eq. (3) of Duchi et al. (2010)
# ======================================================================================
def comid_twin(X, y, weights, order, alpha, l1_ratio, eta0, power_t, fit_intercept=True,
               average_start=0, loss_derivative=None, steps_done=0):
    """Comid with the Euclidean mirror map on plain vectors: ``(w, b, w_average, b_average)``.

    Step ``t = steps_done + 1, ...`` on sample ``order[t - steps_done - 1]``: ``eta = eta0 /
    t ** power_t``, ``w <- prox_{eta alpha R}(w - eta s l'(m) y x)`` on *every* coordinate,
    ``b <- b - eta s l'(m) y``. Steps with ``t > average_start`` enter the average (``None``:
    no average, zeros returned). ``loss_derivative`` defaults to the hinge's.
    """
    if loss_derivative is None:
        def loss_derivative(margin):
            return -1.0 if margin < 1.0 else 0.0
    rows = _rows(X)
    w = np.zeros(rows.shape[1])
    b = 0.0
    w_sum = np.zeros(rows.shape[1])
    b_sum = 0.0
    counted = 0
    for number, i in enumerate(order):
        step = steps_done + number + 1
        eta = eta0 / step ** power_t
        margin = y[i] * (rows[i] @ w + b)
        gradient = weights[i] * loss_derivative(margin) * y[i]
        v = w - eta * gradient * rows[i]
        strength = eta * alpha
        w = np.sign(v) * np.maximum(np.abs(v) - strength * l1_ratio, 0.0) / (
            1.0 + strength * (1.0 - l1_ratio)
        )
        if fit_intercept:
            b = b - eta * gradient
        if average_start is not None and step > average_start:
            w_sum += w
            b_sum += b
            counted += 1
    if counted == 0:
        return w, b, np.zeros_like(w), 0.0
    return w, b, w_sum / counted, b_sum / counted


# --------------------------------------------------------------------------------------
# S3GD family: the generic mini-batch proximal step of stochsvm.linear.sgd
# --------------------------------------------------------------------------------------
def prox_minibatch_twin(X, y, batches, scales, control_constants, control_slopes, correction,
                        coef, intercept, step, alpha, l1_ratio, loss="log_loss",
                        loss_parameter=None, moment=None, moment_scale=0.0,
                        fit_intercept=True, average_start=None, steps_done=0,
                        return_state=False):
    """Plain NumPy transcription of ``stochsvm.linear.proximal_steps.prox_steps_dense``: for
    each batch, the averaged controlled gradient plus the correction (plus
    ``moment_scale * moment @ (w, b)``), then the elastic-net prox of every coordinate. Returns ``(coef, intercept, loss_sum)``.

    With ``return_state`` returns a dict that also holds the running sums of the averaged
    iterates: step ``steps_done + t`` (``t = 1, 2, ...``) is added to ``coef_sum`` and
    ``intercept_sum`` when ``(steps_done + t) * batch_size > average_start`` (``None``: never),
    ``averaged_count`` counts them, and ``gradient`` is the gradient of the last step
    (intercept last)."""
    from stochsvm._core.losses import get_margin_loss

    margin_loss = get_margin_loss(loss)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    coef = np.array(coef, dtype=np.float64)
    intercept = float(intercept)
    loss_sum = 0.0
    coef_sum = np.zeros_like(coef)
    intercept_sum = 0.0
    averaged_count = 0
    gradient = np.zeros(X.shape[1] + 1)
    for t in range(batches.shape[0]):
        gradient = np.zeros(X.shape[1] + 1)
        for q in range(batches.shape[1]):
            i = batches[t, q]
            row = np.append(X[i], 1.0)
            score = X[i] @ coef + intercept
            margin = y[i] * score
            loss_sum += scales[t, q] * float(margin_loss.value(np.array([margin]),
                                                                loss_parameter)[0])
            derivative = float(margin_loss.derivative(np.array([margin]), loss_parameter)[0])
            factor = (scales[t, q] * derivative * y[i] - control_constants[t, q]
                      - control_slopes[t, q] * score)
            gradient += factor * row
        gradient = gradient / batches.shape[1] + correction
        if moment is not None:
            gradient += moment_scale * moment @ np.append(coef, intercept)
        value = coef - step * gradient[:-1]
        strength = step * alpha
        value = np.sign(value) * np.maximum(np.abs(value) - strength * l1_ratio, 0.0)
        coef = value / (1.0 + strength * (1.0 - l1_ratio))
        if fit_intercept:
            intercept -= step * gradient[-1]
        if average_start is not None and (steps_done + t + 1) * batches.shape[1] > average_start:
            coef_sum += coef
            intercept_sum += intercept
            averaged_count += 1
    if return_state:
        return {"coef": coef, "intercept": intercept, "loss_sum": loss_sum,
                "coef_sum": coef_sum, "intercept_sum": intercept_sum,
                "averaged_count": averaged_count, "gradient": gradient}
    return coef, intercept, loss_sum


def s3gd_twin(X, y, weights, graph, batches, n_inner, step, alpha, l1_ratio, loss="log_loss",
              loss_parameter=None, fit_intercept=True):
    """Plain NumPy transcription of ``_s3gd_epoch_dense``: at every ``n_inner``-th batch the
    snapshot's anchor derivatives (eq. 21) and grad H (eq. 22, summed sample by sample as in
    eq. 20), then steps with the eq. (8) controls of eq. (19). Returns ``(coef, intercept,
    loss_sum)``."""
    from stochsvm._core.losses import get_margin_loss

    margin_loss = get_margin_loss(loss)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    n, d = X.shape
    coef, intercept, loss_sum = np.zeros(d), 0.0, 0.0
    anchors = X[graph.anchor_indices]
    for start in range(0, batches.shape[0], n_inner):
        scores = anchors @ coef + intercept
        full = np.zeros(d + 1)
        for i in range(n):
            derivative = margin_loss.derivative(y[i] * scores[graph.neighbor_index[i]],
                                                loss_parameter)
            full += weights[i] * y[i] * (graph.neighbor_weight[i] @ derivative) * np.append(
                X[i], 1.0)
        full /= n
        block = batches[start:start + n_inner]
        controls = np.zeros(block.shape)
        for t in range(block.shape[0]):
            for q in range(block.shape[1]):
                i = block[t, q]
                derivative = margin_loss.derivative(y[i] * scores[graph.neighbor_index[i]],
                                                    loss_parameter)
                controls[t, q] = weights[i] * y[i] * (graph.neighbor_weight[i] @ derivative)
        coef, intercept, part = prox_minibatch_twin(
            X, y, block, weights[block], controls, np.zeros(block.shape), full, coef,
            intercept, step, alpha, l1_ratio, loss, loss_parameter,
            fit_intercept=fit_intercept)
        loss_sum += part
    return coef, intercept, loss_sum


# ======================================================================================
# SCS on a fixed sample (stochsvm/kernel/scs.py, sample_iterations), Alg. 1 of the SCS paper
# ======================================================================================
def scs_sample_iterations_twin(Q, labels, costs, a, d, settings, state, iterations):
    """Alg. 1 steps 6-8 and 14-16 on a fixed sample, ``iterations`` times, in plain NumPy.

    ``Q`` is the sample's kernel matrix, ``settings`` and ``state`` are dicts with the names
    of the compiled loop's vectors (``delta``, ``norm``, ``null_step``, ``spread``,
    ``restart``, ``restart_value``). Products with ``Q`` are recomputed from scratch at every
    use (no incremental update of ``Q v``). Returns ``(a, d, records)`` with one record
    ``(objective, direction_norm, delta, step, accepted, line_search, stalled)`` per iteration.
    """
    from .reference_kernel import line_search_twin

    euclidean = settings["euclidean"]
    a, d = a.astype(float).copy(), d.astype(float).copy()
    delta, norm = state["delta"], state["norm"]
    null_step, spread = state["null_step"], state["spread"]
    restart, restart_value = state["restart"], state["restart_value"]
    plateau = []
    patience = settings["patience"]

    def inner(x, z):
        return x @ z if euclidean else x @ Q @ z

    def subgradient(point):
        v = np.where(labels * (Q @ point) < 1.0, costs * labels, 0.0)
        g = point - v
        return Q @ g if euclidean else g

    def objective(point):
        return 0.5 * point @ Q @ point + costs @ np.maximum(0.0, 1.0 - labels * (Q @ point))

    records = []
    for _ in range(iterations):
        if null_step > 0.0:
            distance = null_step * norm
            g = subgradient(a + null_step * d)
        else:
            distance = 0.0
            g = subgradient(a)
        u = -d
        weight = 0.0
        if not restart:
            denominator = inner(u, u) - 2.0 * inner(u, g) + inner(g, g)
            if denominator > 0.0:
                weight = min(1.0, max(0.0, (inner(g, g) - inner(u, g)) / denominator))
        restart = False
        d = -(weight * u + (1.0 - weight) * g)
        spread = max(spread, distance) if weight > 0.0 else distance
        norm = np.sqrt(max(inner(d, d), 0.0))
        if norm < settings["epsilon"] and spread > settings["delta_min"]:
            g = subgradient(a)
            d = -g
            norm = np.sqrt(max(inner(g, g), 0.0))
            spread = 0.0
        step, last_trial, outcome = 0.0, 0.0, 2
        if norm > 0.0:
            step, last_trial, outcome = line_search_twin(
                labels * (Q @ a), labels * (Q @ d), costs, d @ Q @ a, d @ Q @ d, norm * norm,
                delta / norm, delta / (settings["divisor"] * norm), delta / norm,
                settings["m1"], settings["m2"], 40)
        null_step = last_trial if step == 0.0 else 0.0
        # f(a + t d) = f(a) - hinge(a) + t d'Qa + t^2 d'Qd / 2 + hinge(a + t d)
        value_a = objective(a)
        margins, step_margins = labels * (Q @ a), labels * (Q @ d)
        value_b = (0.5 * a @ Q @ a + step * (d @ Q @ a) + 0.5 * step * step * (d @ Q @ d)
                   + costs @ np.maximum(0.0, 1.0 - (margins + step * step_margins)))
        accepted = value_a - value_b > 0.0 and norm > settings["eta2"] * delta
        if accepted:
            a = a + step * d
            delta = min(settings["radius_factor"] * delta, settings["delta_max"])
            value = value_b
            spread += step * norm
        else:
            delta = max(delta / settings["radius_factor"], settings["delta_min"])
            value = value_a
        plateau.append(value)
        stalled = (patience > 0 and len(plateau) > patience
                   and plateau[-1 - patience] - value <= settings["stall_tol"] * abs(value))
        if stalled and restart_value - value > settings["stall_tol"] * abs(value):
            stalled, restart, restart_value = False, True, value
            plateau = []
            null_step = 0.0
            delta = settings["delta_reset"]
        records.append((value, norm, delta, step, accepted, outcome, stalled))
        if (norm < settings["epsilon"] and delta <= settings["delta_min"]) or stalled:
            break
    return a, d, records


def sadmm_memory_twin(X, y, weights, orders, rho, alpha, l1_ratio, intercept_value):
    """Plain-NumPy twin of :mod:`stochsvm.linear.sadmm_memory`: the passes ``orders`` of
    dual coordinate steps on the proximal subproblem, recentred before every pass after the
    first. Returns ``(w, intercept)``."""
    X = sp.csr_matrix(X)
    n, d = X.shape
    proximal = rho / n
    sigma = max(proximal - alpha * (1.0 - l1_ratio), 0.0)
    threshold, curvature = alpha * l1_ratio, sigma + alpha * (1.0 - l1_ratio)

    def primal(u):
        return np.sign(u) * max(abs(u) - threshold, 0.0) / curvature

    duals, v, w, centre = np.zeros(n), np.zeros(d), np.zeros(d), np.zeros(d)
    v_b = centre_b = w_b = 0.0
    for number, order in enumerate(orders):
        if number > 0:
            centre, centre_b = w.copy(), w_b
            w = np.array([primal(sigma * centre[j] + v[j]) for j in range(d)])
            if intercept_value:
                w_b = centre_b + v_b / proximal
        for i in order:
            row = X.getrow(i)
            columns, values = row.indices, row.data
            dot = w_b * intercept_value + float(np.dot(w[columns], values))
            moving = [value * value for j, value in zip(columns, values)
                      if threshold == 0.0 or w[j] != 0.0]
            slope = intercept_value ** 2 / proximal + sum(moving) / curvature
            residual = 1.0 - y[i] * dot
            if slope > 0:
                target = duals[i] + n * residual / slope
            else:
                target = weights[i] if residual > 0 else 0.0
            change = min(max(target, 0.0), weights[i]) - duals[i]
            if change == 0.0:
                continue
            duals[i] += change
            for j, value in zip(columns, values):
                v[j] += change * y[i] / n * value
                w[j] = primal(sigma * centre[j] + v[j])
            if intercept_value:
                v_b += change * y[i] / n * intercept_value
                w_b = centre_b + v_b / proximal
    return w, intercept_value * w_b
