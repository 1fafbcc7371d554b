r"""The stochastic schedule shared by the triply stochastic semi-supervised solvers.

:class:`~stochsvm.semi.tsgs3vm.TSGS3VM` and :class:`~stochsvm.semi.frs3vm.FRS3VM` draw a
labeled batch :math:`B_l` and an unlabeled batch :math:`B_u` per iteration
(:func:`stochsvm._core.sampling.batch_schedule`) and take steps
:math:`\gamma_t` (eq. (7) of the TSGS3VM paper): :func:`resolve_stochastic_schedule` turns
their parameters into batch sizes, an iteration count and the steps, once per fit.
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.kernels import check_machine_memory
from .._core.random_features import RANDOM_FEATURE_KERNELS

__all__ = [
    "ITERATIONS_PER_PASS",
    "MAXIMUM_FEATURES_PER_ITERATION",
    "MAXIMUM_LABELED_STEPS",
    "MINIMUM_ITERATIONS",
    "SCHEDULE_PARAMETER_CONSTRAINTS",
    "iteration_source",
    "resolve_labeled_steps",
    "resolve_stochastic_schedule",
    "schedule_iterations",
]

# Defaults of the iteration count T and the features per iteration m, chosen from measurements
# (200 labels, n = 20000; generated clusters d = 20 and Fashion-MNIST tops vs rest d = 784,
# 2 seeds): T = 64 with m = 64 (4096 features in all) matches the accuracy of T = 128 with
# m = 128 (0.904 / 0.844 and 0.927 / 0.926 against 0.901 / 0.845 and 0.928 / 0.919) at a quarter
# of the O(samples x d x T m) cost of the evaluations; m = 32 loses 2-4 points on the generated
# data. At n = 1200, T = 64 and T = 128 are within a point (medians over 4 seeds 0.866 / 0.870
# and 0.781 / 0.781).
#
# One pass over a large unlabeled set is spread over at most this many iterations by enlarging
# the unlabeled batch, so that the O(|B| m T^2 d) cost of a pass grows linearly in n instead of
# quadratically (with batches of 256, T = n_u / 256).
ITERATIONS_PER_PASS = 64
# Fewest iterations of a default run on small data (several passes when n_u is small).
MINIMUM_ITERATIONS = 64
# Default cap on the features per iteration m (the paper uses ceil(sqrt(n))).
MAXIMUM_FEATURES_PER_ITERATION = 64
# Cap of ``labeled_steps="auto"`` (ceil(C n_l / T) steps per iteration).
MAXIMUM_LABELED_STEPS = 64


def resolve_labeled_steps(labeled_steps, C, n_labeled, n_iterations):
    """Steps per iteration of TSGS3VM: an int >= 1 as given, or ``"auto"``:
    ``ceil(C n_l / T)`` between 1 and :data:`MAXIMUM_LABELED_STEPS` (measurements there)."""
    if isinstance(labeled_steps, str):  # "auto"
        wanted = math.ceil(C * n_labeled / max(n_iterations, 1))
        return int(min(MAXIMUM_LABELED_STEPS, max(1, wanted)))
    return int(labeled_steps)


#: parameters of the random-feature schedule shared by TSGS3VM and FRS3VM
SCHEDULE_PARAMETER_CONSTRAINTS = {
    "kernel": [StrOptions(set(RANDOM_FEATURE_KERNELS))],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "unlabeled_batch_size": [Interval(Integral, 1, None, closed="left"), None],
    "step_size": [Interval(Real, 0, 1, closed="right"), StrOptions({"theory"})],
    "step_schedule": [StrOptions({"decreasing", "constant"})],
    "theta": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left"), None],
    "n_passes": [Interval(Real, 0, None, closed="neither")],
    # a string, a NumPy type or a dtype: resolved (and refused unless float32 or float64) by
    # resolve_kernel_dtype
    "feature_dtype": [StrOptions({"float32", "float64"}), type, np.dtype],
    "unlabeled_ramp_up": [Interval(Real, 0, 1, closed="both")],
    "record_every": [Interval(Integral, 1, None, closed="left")],
}


def iteration_source(estimator, n_passes):
    """The parameter that set the number of iterations, for messages: ``max_iter=...`` or
    ``n_passes=...``."""
    if estimator.max_iter is not None:
        return f"max_iter={estimator.max_iter!r}"
    return f"n_passes={n_passes!r}"


def schedule_iterations(batch_size, unlabeled_batch_size, max_iter, n_passes, n_labeled,
                        n_unlabeled):
    """``(labeled_batch, unlabeled_batch, n_iterations)`` of a fit with these parameters on
    ``n_labeled`` labeled and ``n_unlabeled`` unlabeled rows: ``max_iter`` iterations, or
    ``n_passes`` passes over the unlabeled batches (over the labeled ones without unlabeled
    rows), at least :data:`MINIMUM_ITERATIONS`; the unlabeled batch, when ``None``, spreads a
    pass over at most :data:`ITERATIONS_PER_PASS` iterations."""
    batch_size = int(batch_size)
    labeled_batch = min(batch_size, n_labeled)
    if unlabeled_batch_size is None:
        unlabeled_batch = max(batch_size, math.ceil(n_unlabeled / ITERATIONS_PER_PASS))
    else:
        unlabeled_batch = int(unlabeled_batch_size)
    unlabeled_batch = min(unlabeled_batch, n_unlabeled)
    if max_iter is not None:
        return labeled_batch, unlabeled_batch, int(max_iter)
    passes = float(n_passes)
    if n_unlabeled:
        n_iterations = math.ceil(passes * n_unlabeled / unlabeled_batch)
    else:
        n_iterations = math.ceil(passes * n_labeled / labeled_batch)
    return labeled_batch, unlabeled_batch, max(n_iterations, MINIMUM_ITERATIONS)


def resolve_stochastic_schedule(estimator, n_labeled, n_unlabeled, n_passes, labeled_steps=1,
                                memory=None):
    """Batch sizes, iteration count and step sizes shared by TSGS3VM and FRS3VM (called
    from ``_resolve_parameters``, after the base class has checked ``C`` into ``_C``).

    ``memory(n_iterations, labeled_batch, unlabeled_batch)``, when given, returns the bytes
    the caller will allocate for that many iterations, the words naming them (", ..." after
    "the step schedule") and more advice (", ..." after "Lower max_iter or n_passes"): with
    the schedule's own array they must fit in the machine's memory
    (:func:`~stochsvm._core.kernels.check_machine_memory`), or a ``MemoryError`` names the
    parameters before anything is allocated.

    Returns ``(labeled_batch, unlabeled_batch, n_iterations, step, labeled_steps)`` where
    ``labeled_steps`` is the number of steps per iteration (an int, resolved by
    :func:`resolve_labeled_steps`; FRS3VM takes one) and ``step`` the constant step
    ``gamma`` of every step (a float) or, with ``step_schedule="decreasing"``, the array of the
    ``n_iterations * labeled_steps`` steps ``gamma_t = gamma_0 / (1 + gamma_0 t)``,
    ``t = 0, 1, ...``.
    """
    # each parameter alone was checked by SCHEDULE_PARAMETER_CONSTRAINTS: only the rules
    # between them remain
    if estimator.max_iter is not None:
        default_passes = inspect.signature(type(estimator)).parameters["n_passes"].default
        if n_passes != default_passes:
            raise ValueError(
                f"max_iter={estimator.max_iter!r} and n_passes={n_passes!r} both set the "
                "number of iterations; give one of them (max_iter=None to count passes).")
    labeled_batch, unlabeled_batch, n_iterations = schedule_iterations(
        estimator.batch_size, estimator.unlabeled_batch_size, estimator.max_iter, n_passes,
        n_labeled, n_unlabeled)
    labeled_steps = resolve_labeled_steps(labeled_steps, float(estimator.C), n_labeled,
                                          n_iterations)
    step_size = estimator.step_size
    if isinstance(step_size, str):  # "theory"
        # Theorems 1-2 of the TSGS3VM paper: gamma = theta / T^(3/4), 0 < theta <= T^(3/4).
        theta = float(estimator.theta)
        step = theta / n_iterations ** 0.75
        if step > 1.0:
            raise ValueError(
                f"theta={estimator.theta!r} gives a step theta / T^(3/4) = {step:.3g} > 1 for "
                f"T={n_iterations} iterations; use theta <= {n_iterations ** 0.75:.3g}.")
    else:
        step = float(step_size)
    decreasing = estimator.step_schedule == "decreasing" and step_size != "theory"
    # before anything of size T is built: the decreasing schedule (one step per step, from
    # an integer range: 16 bytes each) and what the caller keeps per iteration
    extra_bytes, extra_what, extra_advice = (0.0, "", "") if memory is None else memory(
        n_iterations, labeled_batch, unlabeled_batch)
    check_machine_memory(
        (16.0 * n_iterations * labeled_steps if decreasing else 0.0) + extra_bytes,
        f"{type(estimator).__name__}'s step schedule{extra_what} for {n_iterations} "
        f"iterations ({iteration_source(estimator, n_passes)}) x {labeled_steps} steps each",
        f"Lower max_iter or n_passes{extra_advice}.")
    if decreasing:
        # SGD on an objective that is 1-strongly convex in f (the 1/2 ||f||^2 term): the
        # inverse step grows by one per step, as in Pegasos, so the iterates settle whatever
        # C n_l is; a constant step keeps moving f by about gamma C n_l on the labeled points
        # (measurements in the TSGS3VM docstring).
        n_steps = n_iterations * labeled_steps
        return (labeled_batch, unlabeled_batch, n_iterations,
                step / (1.0 + step * np.arange(n_steps)), labeled_steps)
    return labeled_batch, unlabeled_batch, n_iterations, float(step), labeled_steps
