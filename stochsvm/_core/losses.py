r"""Loss functions shared by every solver.

Two families live here.

*Margin losses* of labelled samples are functions of the margin :math:`m = y f(x)` with
:math:`y \in \{-1, +1\}`:

========================  ===========================================  ==========================
name                      value :math:`\ell(m)`                         derivative :math:`\ell'(m)`
========================  ===========================================  ==========================
``"hinge"``               :math:`\max(0, 1 - m)`                        :math:`-1` if :math:`m<1`
``"squared_hinge"``       :math:`\max(0, 1 - m)^2`                      :math:`-2\max(0, 1-m)`
``"smoothed_hinge"``      :math:`\frac1\beta\log(1+e^{-\beta(m-1)})`    :math:`-\sigma(-\beta(m-1))`
``"log_loss"``            :math:`\log(1 + e^{-m})`                      :math:`-\sigma(-m)`
========================  ===========================================  ==========================

``smoothed_hinge`` is eq. (26) of the S3GD paper ("modified logistic regression"); it tends to
the hinge as :math:`\beta \to \infty`. For the hinge the derivative is the subgradient that
takes the value 0 at the kink :math:`m = 1`.

*Unlabelled losses* of the semi-supervised SVM (Table 2 of the TSGS3VM paper) are functions of
the output :math:`r = f(x)` itself:

==================================  ====================================================
name                                value :math:`u(r)`
==================================  ====================================================
``"symmetric_hinge"`` (SHG)         :math:`\max(0, 1 - |r|)`
``"squared_symmetric_hinge"`` (SSHG) :math:`\frac12 \max(0, 1 - |r|)^2`
``"ramp"``                          :math:`R_s(r) + R_s(-r)`, :math:`R_s(t) = H_1(t) - H_s(t)`,
                                    :math:`H_a(t) = \max(0, a - t)`, :math:`s < 1`
``"differentiable_approximation"``  :math:`\exp(-c r^2)` with :math:`c = 5` (DA)
==================================  ====================================================

Table 2 prints the SHG derivative as :math:`-1` and the SSHG derivative as :math:`|r| - 1` on
:math:`|r| < 1`; those are the derivatives with respect to :math:`|r|`. Here derivatives are
taken with respect to :math:`r` (multiplied by :math:`\operatorname{sign}(r)`), which is what a
gradient step on :math:`f` needs. The ramp is the symmetric ramp of Collobert et al. (2006),
with ``s = -0.3`` by default.

Every loss is available in two forms with identical numbers:

* numba-compiled scalar functions: :func:`margin_loss_value` / :func:`margin_loss_derivative`
  (and the ``unlabeled_`` pair) of the loss's integer :attr:`Loss.code`, which compiled solver
  loops call, and ``<name>_value(x, parameter)`` / ``<name>_derivative(x, parameter)``, the
  same with the code fixed. Loops take the code, not the functions: a compiled function
  passed as an argument is typed by its identity, which numba's on-disk cache cannot match in
  a new process, so every process would compile such loops again. And
* a :class:`Loss` record whose :meth:`Loss.value` / :meth:`Loss.derivative` evaluate whole
  arrays with NumPy (these are the references the compiled scalars are tested against).

Every scalar takes one ``parameter`` (``beta`` for ``smoothed_hinge``, ``s`` for ``ramp``,
``c`` for the DA loss, ignored by the others) so that a solver loop has a single signature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import array_api_compat
import numba
import numpy as np

__all__ = [
    "Loss",
    "MARGIN_LOSSES",
    "UNLABELED_LOSSES",
    "get_margin_loss",
    "get_unlabeled_loss",
    "margin_loss",
    "margin_loss_value",
    "margin_loss_derivative",
    "unlabeled_loss_value",
    "unlabeled_loss_derivative",
]


# --------------------------------------------------------------------------------------
# dispatch by integer code: what compiled solver loops take (see the module docstring)
# --------------------------------------------------------------------------------------
HINGE, SQUARED_HINGE, SMOOTHED_HINGE, LOG_LOSS = 0, 1, 2, 3
SYMMETRIC_HINGE, SQUARED_SYMMETRIC_HINGE, RAMP, DIFFERENTIABLE_APPROXIMATION = 10, 11, 12, 13

# The arithmetic of every loss is written out inside margin_loss and the two unlabeled
# functions, which call no other compiled function: a solver loop then compiles one function
# for its loss (value and derivative together), not one per loss and helper. Each compiled
# function has a fixed cost of 0.03-0.1 s on a cold cache; the ten separate margin functions
# cost about 0.45 s per linear estimator. They are not inlined into the loops, so that the
# losses keep their own rounding in the loops compiled with fastmath.


@numba.njit(cache=True)
def margin_loss(code, margin, parameter):
    r"""Value and (sub)derivative of the margin loss with integer ``code`` (:attr:`Loss.code`).

    Parameters
    ----------
    code : int
        :attr:`Loss.code` of a margin loss.
    margin : float
        :math:`m = y f(x)`.
    parameter : float
        The loss's shape parameter (``beta`` of ``smoothed_hinge``; ignored by the others).

    Returns
    -------
    value, derivative : float
        :math:`\ell(m)` and :math:`\ell'(m)`.
    """
    if code == LOG_LOSS or code == SMOOTHED_HINGE:
        # eq. (26) of the S3GD paper for the smoothed hinge, parameter = beta
        t = -margin if code == LOG_LOSS else -parameter * (margin - 1.0)
        # log(1 + e^t) and the sigmoid 1 / (1 + e^-t) without overflow
        if t > 0.0:
            value = t + np.log1p(np.exp(-t))
        else:
            value = np.log1p(np.exp(t))
        if t >= 0.0:
            sigmoid = 1.0 / (1.0 + np.exp(-t))
        else:
            e = np.exp(t)
            sigmoid = e / (1.0 + e)
        if code == SMOOTHED_HINGE:
            value = value / parameter
        return value, -sigmoid
    gap = max(0.0, 1.0 - margin)
    if code == SQUARED_HINGE:
        return gap * gap, -2.0 * gap
    return gap, -1.0 if margin < 1.0 else 0.0


@numba.njit(cache=True)
def margin_loss_value(code, margin, parameter):
    """Value of the margin loss with integer ``code`` (:func:`margin_loss`)."""
    return margin_loss(code, margin, parameter)[0]


@numba.njit(cache=True)
def margin_loss_derivative(code, margin, parameter):
    """(Sub)derivative of the margin loss with integer ``code`` (:func:`margin_loss`)."""
    return margin_loss(code, margin, parameter)[1]


@numba.njit(cache=True)
def unlabeled_loss_value(code, output, parameter):
    """Value of the unlabeled (S3VM) loss with integer ``code``."""
    if code == SQUARED_SYMMETRIC_HINGE:
        gap = max(0.0, 1.0 - abs(output))
        return 0.5 * gap * gap
    if code == RAMP:
        # R_s(r) + R_s(-r), R_s(t) = H_1(t) - H_s(t), H_a(t) = max(0, a - t), s = parameter
        return ((max(0.0, 1.0 - output) - max(0.0, parameter - output))
                + (max(0.0, 1.0 + output) - max(0.0, parameter + output)))
    if code == DIFFERENTIABLE_APPROXIMATION:
        return np.exp(-parameter * output * output)
    return max(0.0, 1.0 - abs(output))


@numba.njit(cache=True)
def unlabeled_loss_derivative(code, output, parameter):
    """Derivative (with respect to the output) of the unlabeled loss with integer ``code``."""
    if code == SQUARED_SYMMETRIC_HINGE:
        gap = max(0.0, 1.0 - abs(output))
        if output > 0.0:
            return -gap
        if output < 0.0:
            return gap
        return 0.0
    if code == RAMP:
        # d/dr [R_s(r) + R_s(-r)] = R_s'(r) - R_s'(-r), R_s'(t) = -1 on s < t < 1, 0 elsewhere
        # (0 chosen at the kinks)
        forward = -1.0 if parameter < output < 1.0 else 0.0
        backward = -1.0 if parameter < -output < 1.0 else 0.0
        return forward - backward
    if code == DIFFERENTIABLE_APPROXIMATION:
        return -2.0 * parameter * output * np.exp(-parameter * output * output)
    if abs(output) >= 1.0 or output == 0.0:
        return 0.0
    return -1.0 if output > 0.0 else 1.0


# --------------------------------------------------------------------------------------
# numba scalar forms, one function per loss (the dispatch above with a fixed code)
# --------------------------------------------------------------------------------------
# margin losses, x = y f(x)
@numba.njit(cache=True)
def hinge_value(margin, parameter):
    return margin_loss_value(HINGE, margin, parameter)


@numba.njit(cache=True)
def hinge_derivative(margin, parameter):
    return margin_loss_derivative(HINGE, margin, parameter)


@numba.njit(cache=True)
def squared_hinge_value(margin, parameter):
    return margin_loss_value(SQUARED_HINGE, margin, parameter)


@numba.njit(cache=True)
def squared_hinge_derivative(margin, parameter):
    return margin_loss_derivative(SQUARED_HINGE, margin, parameter)


@numba.njit(cache=True)
def log_loss_value(margin, parameter):
    return margin_loss_value(LOG_LOSS, margin, parameter)


@numba.njit(cache=True)
def log_loss_derivative(margin, parameter):
    return margin_loss_derivative(LOG_LOSS, margin, parameter)


@numba.njit(cache=True)
def smoothed_hinge_value(margin, parameter):
    return margin_loss_value(SMOOTHED_HINGE, margin, parameter)


@numba.njit(cache=True)
def smoothed_hinge_derivative(margin, parameter):
    return margin_loss_derivative(SMOOTHED_HINGE, margin, parameter)


# unlabelled losses of Table 2 (TSGS3VM), x = f(x)
@numba.njit(cache=True)
def symmetric_hinge_value(output, parameter):
    return unlabeled_loss_value(SYMMETRIC_HINGE, output, parameter)


@numba.njit(cache=True)
def symmetric_hinge_derivative(output, parameter):
    return unlabeled_loss_derivative(SYMMETRIC_HINGE, output, parameter)


@numba.njit(cache=True)
def squared_symmetric_hinge_value(output, parameter):
    return unlabeled_loss_value(SQUARED_SYMMETRIC_HINGE, output, parameter)


@numba.njit(cache=True)
def squared_symmetric_hinge_derivative(output, parameter):
    return unlabeled_loss_derivative(SQUARED_SYMMETRIC_HINGE, output, parameter)


@numba.njit(cache=True)
def ramp_value(output, parameter):
    return unlabeled_loss_value(RAMP, output, parameter)


@numba.njit(cache=True)
def ramp_derivative(output, parameter):
    return unlabeled_loss_derivative(RAMP, output, parameter)


@numba.njit(cache=True)
def differentiable_approximation_value(output, parameter):
    return unlabeled_loss_value(DIFFERENTIABLE_APPROXIMATION, output, parameter)


@numba.njit(cache=True)
def differentiable_approximation_derivative(output, parameter):
    return unlabeled_loss_derivative(DIFFERENTIABLE_APPROXIMATION, output, parameter)


# --------------------------------------------------------------------------------------
# Vectorised forms (the references of the scalars above), in the array-API namespace of
# their argument: NumPy arrays stay NumPy (the same ufuncs, the same bits), a device array
# is computed on its device
# --------------------------------------------------------------------------------------
def _minus_one_below(condition, like, xp):
    """-1 where ``condition`` holds, 0 elsewhere, in the type of ``like``."""
    return xp.where(condition, xp.full_like(like, -1.0), xp.zeros_like(like))


def _log_one_plus_exp(t, xp):
    return xp.logaddexp(0.0, t)


def _sigmoid(t, xp):
    return xp.exp(-xp.logaddexp(0.0, -t))


def _ramp_one_sided(t, s, xp):
    return xp.maximum(0.0, 1.0 - t) - xp.maximum(0.0, s - t)


def _ramp_one_sided_derivative(t, s, xp):
    return _minus_one_below((t > s) & (t < 1.0), t, xp)


_VECTORISED_FORMS = {
    "hinge": (
        lambda m, p, xp: xp.maximum(0.0, 1.0 - m),
        lambda m, p, xp: _minus_one_below(m < 1.0, m, xp),
    ),
    "squared_hinge": (
        lambda m, p, xp: xp.maximum(0.0, 1.0 - m) ** 2,
        lambda m, p, xp: -2.0 * xp.maximum(0.0, 1.0 - m),
    ),
    "smoothed_hinge": (
        lambda m, p, xp: _log_one_plus_exp(-p * (m - 1.0), xp) / p,
        lambda m, p, xp: -_sigmoid(-p * (m - 1.0), xp),
    ),
    "log_loss": (
        lambda m, p, xp: _log_one_plus_exp(-m, xp),
        lambda m, p, xp: -_sigmoid(-m, xp),
    ),
    "symmetric_hinge": (
        lambda r, p, xp: xp.maximum(0.0, 1.0 - xp.abs(r)),
        lambda r, p, xp: xp.where(xp.abs(r) < 1.0, -xp.sign(r), xp.zeros_like(r)),
    ),
    "squared_symmetric_hinge": (
        lambda r, p, xp: 0.5 * xp.maximum(0.0, 1.0 - xp.abs(r)) ** 2,
        lambda r, p, xp: -xp.sign(r) * xp.maximum(0.0, 1.0 - xp.abs(r)),
    ),
    "ramp": (
        lambda r, p, xp: _ramp_one_sided(r, p, xp) + _ramp_one_sided(-r, p, xp),
        lambda r, p, xp: (_ramp_one_sided_derivative(r, p, xp)
                          - _ramp_one_sided_derivative(-r, p, xp)),
    ),
    "differentiable_approximation": (
        lambda r, p, xp: xp.exp(-p * r * r),
        lambda r, p, xp: -2.0 * p * r * xp.exp(-p * r * r),
    ),
}


def _as_float64(x):
    """``x`` in float64 and its namespace: NumPy for NumPy arrays, numbers and lists."""
    if array_api_compat.is_array_api_obj(x) and not isinstance(x, np.ndarray):
        xp = array_api_compat.array_namespace(x)
        return xp.astype(x, xp.float64, copy=False), xp
    return np.asarray(x, dtype=np.float64), np


@dataclass(frozen=True)
class Loss:
    """A loss function in both its compiled scalar and NumPy vectorised forms.

    Attributes
    ----------
    name : str
        Public name, as accepted by the estimators' ``loss`` parameters.
    scalar_value, scalar_derivative : numba dispatcher
        ``f(x, parameter) -> float``; passed as arguments to compiled solver loops.
    default_parameter : float
        Value of the single shape parameter used when the user gives none.
    smooth : bool
        Whether the derivative is continuous (Lipschitz-smooth loss).
    code : int
        Integer passed to compiled loops (:func:`margin_loss_value` and friends).
    lipschitz : float
        Bound on ``|loss'|`` (the loss's Lipschitz constant in its argument) at the
        default parameter; ``inf`` when unbounded (squared hinge).
    """

    name: str
    scalar_value: Callable
    scalar_derivative: Callable
    default_parameter: float
    smooth: bool
    lipschitz: float
    code: int = -1

    def value(self, x, parameter=None):
        """Loss value, element-wise over an array of margins (or outputs), in float64 and
        in the array-API namespace of ``x`` (NumPy for numbers and lists)."""
        parameter = self.default_parameter if parameter is None else parameter
        x, xp = _as_float64(x)
        return _VECTORISED_FORMS[self.name][0](x, parameter, xp)

    def derivative(self, x, parameter=None):
        """(Sub)derivative with respect to the argument, element-wise."""
        parameter = self.default_parameter if parameter is None else parameter
        x, xp = _as_float64(x)
        return _VECTORISED_FORMS[self.name][1](x, parameter, xp)

    def __reduce__(self):
        # by name, as model files store a loss: a pickled copy (pickle, joblib) is the
        # table's own object, and nothing compiled is serialized
        if MARGIN_LOSSES.get(self.name) is self:
            return get_margin_loss, (self.name,)
        return get_unlabeled_loss, (self.name,)

    def __getstate__(self):
        # the state skops.io stores: the name and the table, nothing compiled
        return {"name": self.name,
                "table": "margin" if MARGIN_LOSSES.get(self.name) is self else "unlabeled"}

    def __setstate__(self, state):
        source = (MARGIN_LOSSES if state["table"] == "margin" else UNLABELED_LOSSES)[
            state["name"]]
        for name in self.__dataclass_fields__:
            object.__setattr__(self, name, getattr(source, name))


MARGIN_LOSSES = {
    "hinge": Loss("hinge", hinge_value, hinge_derivative, 0.0, False, 1.0, HINGE),
    "squared_hinge": Loss(
        "squared_hinge", squared_hinge_value, squared_hinge_derivative, 0.0, True, np.inf,
        SQUARED_HINGE
    ),
    "smoothed_hinge": Loss(
        "smoothed_hinge", smoothed_hinge_value, smoothed_hinge_derivative, 10.0, True, 1.0,
        SMOOTHED_HINGE
    ),
    "log_loss": Loss("log_loss", log_loss_value, log_loss_derivative, 0.0, True, 1.0, LOG_LOSS),
}

UNLABELED_LOSSES = {
    "symmetric_hinge": Loss(
        "symmetric_hinge", symmetric_hinge_value, symmetric_hinge_derivative, 0.0, False, 1.0,
        SYMMETRIC_HINGE
    ),
    "squared_symmetric_hinge": Loss(
        "squared_symmetric_hinge",
        squared_symmetric_hinge_value,
        squared_symmetric_hinge_derivative,
        0.0,
        False,
        1.0,
        SQUARED_SYMMETRIC_HINGE,
    ),
    "ramp": Loss("ramp", ramp_value, ramp_derivative, -0.3, False, 1.0, RAMP),
    "differentiable_approximation": Loss(
        "differentiable_approximation",
        differentiable_approximation_value,
        differentiable_approximation_derivative,
        5.0,
        True,
        float(np.sqrt(10.0) * np.exp(-0.5)),
        DIFFERENTIABLE_APPROXIMATION,
    ),
}


def _lookup(table, name, kind):
    if not isinstance(name, str) or name not in table:
        raise ValueError(
            f"Unknown {kind} loss {name!r}; choose one of {sorted(table)}."
        )
    return table[name]


def get_margin_loss(name):
    """Return the :class:`Loss` of a labelled-sample loss by name."""
    return _lookup(MARGIN_LOSSES, name, "margin")


def get_unlabeled_loss(name):
    """Return the :class:`Loss` of an unlabelled-sample (S3VM) loss by name."""
    return _lookup(UNLABELED_LOSSES, name, "unlabeled")
