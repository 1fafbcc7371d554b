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
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "epoch_generator",
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
