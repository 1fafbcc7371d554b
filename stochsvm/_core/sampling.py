r"""Mini-batch samplers shared by the mini-batch solvers.

Every sampler returns a rectangular array of sample indices of shape
``(n_batches, batch_size)`` together with the per-draw *scale* :math:`c_i` that makes the
averaged mini-batch gradient an unbiased estimate of the gradient of

.. math::

    P(w) = \frac1n \sum_{i=1}^n s_i\,\psi_i(w),

namely :math:`\mathbb E\big[\frac1p\sum_{q=1}^p c_{i_q}\nabla\psi_{i_q}(w)\big] = \nabla P(w)`:

``uniform_batches``
    consecutive slices of a random permutation (draws without replacement inside an epoch, as
    the S3GD paper assumes below its eq. 8); :math:`c_i = s_i`.
``weighted_batches``
    draws with replacement with probability :math:`\pi_i = s_i / \sum_j s_j` (the weighted
    sampling of eq. 46 of the S3GD paper used by its mini-batch SGD baseline); then
    :math:`c_i = \sum_j s_j / n` is the same for every draw.
``stratified_batches``
    one draw per stratum :math:`h = 1..H` (stratified SGD, Zhao & Zhang 2014), uniform inside
    the stratum of size :math:`n_h`; :math:`c_i = s_i\,H\,n_h / n`, since
    :math:`\nabla P = \sum_h \frac{n_h}{n}\,\overline{s\nabla\psi}_h`.

``epoch_generator`` derives a NumPy generator from the permutation of an epoch, so that
solvers which need more random numbers than the permutation stay reproducible from
``random_state`` alone.

Seeds and schedules shared by the families and by their Dask fits:

``problem_seeds``
    one seed per binary problem of a one-vs-rest fit, so that a model does not depend on
    ``n_jobs``;
``batch_schedule``
    the labeled and unlabeled mini-batches of the triply stochastic semi-supervised solvers
    (TSGS3VM and FRS3VM), drawn in memory and on Dask from the same generator;
``distinct_indices``
    sampling without replacement in O(count log count);
``class_weighted_order``
    the order in which a growing sample (SCS's :math:`S_k`) takes the rows of a binary
    problem: each class at the rate of its share of the weights, with the importance factors
    that keep the sample's objective an unbiased estimate of the whole one.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "batch_schedule",
    "class_weighted_order",
    "distinct_indices",
    "epoch_generator",
    "problem_seeds",
    "uniform_batches",
    "weighted_batches",
    "strata_from_labels",
    "stratified_batches",
]


def epoch_generator(order, epoch):
    """A ``numpy.random.Generator`` seeded by the first entries of ``order`` and ``epoch``.

    Parameters
    ----------
    order : ndarray of int
        The permutation of the epoch (itself drawn from ``random_state``).
    epoch : int
        Index of the epoch, so that an unshuffled order still gives fresh numbers.
    """
    head = [int(value) for value in np.asarray(order[:8])]
    return np.random.default_rng([int(epoch), len(order), *head])


def uniform_batches(order, n_batches, batch_size):
    """``n_batches`` consecutive slices of ``order`` (wrapping around to its start)."""
    order = np.asarray(order, dtype=np.int64)
    return np.resize(order, n_batches * batch_size).reshape(n_batches, batch_size)


def weighted_batches(generator, weights, n_batches, batch_size):
    r"""Draws with probability :math:`s_i / \sum_j s_j`; returns ``(indices, scale)``.

    ``scale`` is the constant :math:`\sum_j s_j / n` of the module docstring.
    """
    weights = np.asarray(weights, dtype=np.float64)
    total = weights.sum()
    if total <= 0.0:
        raise ValueError("weighted sampling needs at least one sample with a positive weight.")
    cumulative = np.cumsum(weights) / total
    cumulative[-1] = 1.0
    draws = np.searchsorted(cumulative, generator.random(n_batches * batch_size), side="right")
    draws = np.minimum(draws, len(weights) - 1).astype(np.int64)
    return draws.reshape(n_batches, batch_size), total / len(weights)


def strata_from_labels(labels):
    """``(members, offsets)``: the samples sorted by stratum and the start of each stratum.

    Empty strata are dropped; stratum ``h`` is ``members[offsets[h]:offsets[h + 1]]``.
    """
    labels = np.asarray(labels)
    members = np.argsort(labels, kind="stable").astype(np.int64)
    _, counts = np.unique(labels, return_counts=True)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return members, offsets


def stratified_batches(generator, members, offsets, n_batches):
    """One uniform draw per stratum per batch; returns ``(indices, factors)``.

    ``factors[i, h]`` is :math:`H n_h / n`; multiply by the sample weight to get the scale
    :math:`c_i` of the module docstring.
    """
    sizes = np.diff(offsets)
    n_strata = len(sizes)
    positions = (generator.random((n_batches, n_strata)) * sizes).astype(np.int64)
    positions = np.minimum(positions, sizes - 1)
    indices = members[offsets[:-1] + positions]
    factors = np.broadcast_to(n_strata * sizes / sizes.sum(), indices.shape).copy()
    return indices, factors


# bound of the seeds drawn for the binary problems of a one-vs-rest fit
SEED_BOUND = np.iinfo(np.int32).max


def problem_seeds(random_state, n_problems):
    """One integer seed per binary problem, drawn from ``random_state``.

    For a single problem the seed list is ``[None]`` and the caller uses the generator
    itself, so that two-class models are exactly what they were before one-vs-rest was
    parallel; for several problems each gets an independent seed.
    """
    random_state = check_random_state(random_state)
    if n_problems == 1:
        return random_state, [None]
    return random_state, [int(seed) for seed in random_state.randint(SEED_BOUND,
                                                                     size=n_problems)]


def distinct_indices(rng, n, count):
    """``count`` distinct indices of ``range(n)`` in random order, in O(count log count).

    The first ``count`` distinct values of a sequence of independent uniform draws, so every
    ordered selection is equally likely (sampling without replacement); for
    ``count <= n / 2`` fewer than ``2 count`` draws are expected, against the O(n) of a
    permutation.
    """
    chosen = np.empty(0, dtype=np.intp)
    while chosen.size < count:
        draws = rng.randint(0, n, size=2 * (count - chosen.size) + 16).astype(np.intp)
        merged = np.concatenate([chosen, draws])
        _, first = np.unique(merged, return_index=True)
        chosen = merged[np.sort(first)]
    return chosen[:count]


def batch_schedule(rng, n_labeled, n_unlabeled, labeled_batch, unlabeled_batch, n_iterations):
    """Yield ``(labeled_indices, unlabeled_indices)`` for each iteration.

    Labeled batches are drawn without replacement, independently each iteration; unlabeled
    batches walk through a fresh permutation of the unlabeled samples on every pass. A run
    that needs at most half a pass draws just the distinct samples it uses
    (:func:`distinct_indices`), so that a fixed iteration budget costs the same on any n
    (a permutation of 10^7 indices takes 0.9 s).
    """
    needed = unlabeled_batch * n_iterations
    if n_unlabeled and unlabeled_batch and 2 * needed <= n_unlabeled:
        order = distinct_indices(rng, n_unlabeled, needed)
    else:
        order = rng.permutation(n_unlabeled) if n_unlabeled else np.empty(0, dtype=np.intp)
    position = 0
    for _ in range(n_iterations):
        labeled = (np.arange(n_labeled) if labeled_batch == n_labeled
                   else rng.choice(n_labeled, labeled_batch, replace=False))
        if unlabeled_batch == 0:
            unlabeled = order[:0]
        else:
            if position + unlabeled_batch > order.shape[0]:
                order = rng.permutation(n_unlabeled)
                position = 0
            unlabeled = order[position:position + unlabeled_batch]
            position += unlabeled_batch
        yield labeled, unlabeled


def class_weighted_order(signs, weights, length, rng):
    r"""A permutation of the ``n`` rows of a binary problem whose first ``length`` entries
    hold each class :math:`c` at the rate :math:`\pi_c` of its share of the weights,
    :math:`W_c / W` with :math:`W_c = \sum_{y_i = c} s_i`, at most all of its :math:`n_c`
    rows (water-filling: what a class cannot fill goes to the other), interleaved so that
    every prefix holds each class in about that proportion; the rows past ``length`` follow
    in random order.

    A sample of the first :math:`m \le` ``length`` rows estimates
    :math:`\sum_i s_i \ell_i` by :math:`\frac nm \sum_{i \le m} s_i \rho_{y_i} \ell_i`
    without bias for the importance factors :math:`\rho_c = n_c / (n \pi_c)` (each row of
    class :math:`c` stands for :math:`n_c / (m \pi_c)` rows of it); where no class is
    capped, :math:`s_i \rho_{y_i} = W / n` for class weights :math:`s_i = w_{y_i}`, an
    unweighted sample. Under ``class_weight="balanced"`` a rare class thus fills up to half
    of the sample instead of its share of the rows.

    Parameters
    ----------
    signs : ndarray of shape (n,)
        The labels, -1 or +1.
    weights : ndarray of shape (n,)
        :math:`s_i > 0`.
    length : int
        The most rows the sample will take.
    rng : numpy.random.RandomState

    Returns
    -------
    order : ndarray of shape (n,)
    factors : ndarray of shape (n,)
        :math:`\rho_{y_i}` for the rows of the first ``length`` entries, 1 past them.
    """
    n = signs.shape[0]
    length = min(int(length), n)
    members = [rng.permutation(np.flatnonzero(signs < 0)),
               rng.permutation(np.flatnonzero(signs > 0))]
    counts = np.array([rows.size for rows in members], dtype=float)
    shares = np.array([weights[rows].sum() for rows in members])
    shares = shares / shares.sum()
    takes = shares * length
    if np.any(takes > counts):  # a class has fewer rows than its share: all of them
        capped = np.argmax(takes - counts)
        takes[capped] = counts[capped]
        takes[1 - capped] = length - counts[capped]
    takes = np.floor(takes).astype(np.int64)
    takes[np.argmax(counts - takes)] += length - takes.sum()
    keys, factors = [], np.ones(n)
    for rows, take, count in zip(members, takes, counts):
        # row j of the class at (j + u_j) / take: every prefix holds it at its rate
        keys.append((np.arange(take) + rng.uniform(size=take)) / max(take, 1))
        factors[rows[:take]] = count * length / (n * take)
    head = np.concatenate([rows[:take] for rows, take in zip(members, takes)])
    head = head[np.argsort(np.concatenate(keys), kind="stable")]
    tail = rng.permutation(np.concatenate([rows[take:] for rows, take in zip(members, takes)]))
    return np.concatenate([head, tail]), factors
