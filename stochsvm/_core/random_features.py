r"""Random Fourier features, generated block by block from ``(seed, block index)``.

By Bochner's theorem a shift-invariant kernel is an expectation over random frequencies,
:math:`k(x, x') = E_{\omega, b}[2 \cos(\omega^T x + b) \cos(\omega^T x' + b)]` with
:math:`b \sim U[0, 2\pi]` (eq. (2) of the TSGS3VM paper; Rahimi & Recht 2008):

* ``"rbf"``: :math:`k(x, x') = \exp(-\gamma \|x - x'\|_2^2)`, :math:`\omega \sim N(0, 2\gamma I)`;
* ``"laplacian"``: :math:`k(x, x') = \exp(-\gamma \|x - x'\|_1)` (as
  :func:`sklearn.metrics.pairwise.laplacian_kernel`), each :math:`\omega_j` Cauchy with scale
  :math:`\gamma` (the Fourier transform of :math:`e^{-\gamma |t|}`).

Convention: a block of ``m`` features maps :math:`x` to
:math:`\phi(x) = \sqrt{2/m}\, \cos(\Omega^T x + b) \in \mathbb R^m`, so that
:math:`\phi(x)^T \phi(x') \approx k(x, x')` with error :math:`O(1/\sqrt m)`.

Block ``i`` of a stream with seed ``s`` is drawn from ``numpy.random.default_rng((s, i))``
(a :class:`numpy.random.SeedSequence` with entropy ``(s, i)``): any block can be regenerated
bit for bit, alone and in any order, from two integers. This is what lets TSGS3VM keep a model
of O(T m) numbers (coefficients plus one seed) instead of the frequencies (Alg. 2 of the
TSGS3VM paper). Frequencies are drawn in float64 and cast when float32 is asked for.
"""

from __future__ import annotations

import math

import array_api_compat
import numba
import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .array_api import input_namespace, prediction_namespace, to_namespace
from .kernels import check_machine_memory, resolve_gamma, resolve_gamma_in_namespace
from .state import ArrayField, FloatField, IntField, merged_fields
from .validation import (check_choice, check_positive, check_positive_int,
                         validate_data_in_namespace)

__all__ = [
    "RANDOM_FEATURE_KERNELS",
    "draw_seed",
    "feature_block",
    "feature_blocks",
    "transform_block",
    "cosine_in_place",
    "cosine_feature_scores",
    "cosine_feature_scores_single",
    "cosine_feature_scores_single_models",
    "RandomFourierFeatures",
]

RANDOM_FEATURE_KERNELS = ("rbf", "laplacian")

def draw_seed(random_state):
    """One non-negative 63-bit integer seed drawn from a scikit-learn ``random_state``."""
    rng = check_random_state(random_state)
    return int(rng.randint(0, 2**31 - 1)) * (2**31) + int(rng.randint(0, 2**31 - 1))


def feature_block(seed, block_index, n_features, n_components, gamma, kernel="rbf",
                  dtype=np.float64):
    r"""Frequencies and phases of one block of random Fourier features.

    Parameters
    ----------
    seed : int
        Seed of the stream (non-negative).
    block_index : int
        Index of the block in the stream (non-negative).
    n_features : int
        Input dimension ``d``.
    n_components : int
        Features per block ``m``.
    gamma : float
        Kernel width (see the module docstring).
    kernel : {"rbf", "laplacian"}
    dtype : float64 or float32

    Returns
    -------
    omega : ndarray of shape (n_features, n_components)
    offset : ndarray of shape (n_components,)
        Phases, uniform on :math:`[0, 2\pi)`.
    """
    generator = np.random.default_rng((int(seed), int(block_index)))
    if kernel == "rbf":
        omega = generator.standard_normal((n_features, n_components))
        omega *= math.sqrt(2.0 * gamma)
    elif kernel == "laplacian":
        omega = generator.standard_cauchy((n_features, n_components))
        omega *= gamma
    else:
        check_choice(kernel, "kernel", RANDOM_FEATURE_KERNELS)
    offset = generator.uniform(0.0, 2.0 * np.pi, n_components)
    return omega.astype(dtype, copy=False), offset.astype(dtype, copy=False)


def feature_blocks(seed, block_indices, n_features, n_components, gamma, kernel="rbf",
                   dtype=np.float64):
    """Blocks ``block_indices`` stacked side by side: omega (d, len * m), offset (len * m,)."""
    blocks = [feature_block(seed, index, n_features, n_components, gamma, kernel, dtype)
              for index in block_indices]
    if not blocks:
        return np.empty((n_features, 0), dtype=dtype), np.empty(0, dtype=dtype)
    return (np.concatenate([omega for omega, _ in blocks], axis=1),
            np.concatenate([offset for _, offset in blocks]))


def _project(X, omega):
    product = X @ omega
    if sp.issparse(product):
        product = product.toarray()
    return np.asarray(product)


def transform_block(X, omega, offset, n_components=None):
    r"""Features :math:`\sqrt{2/m} \cos(X \Omega + b)` of dense or CSR ``X``; ``m`` is
    ``n_components`` (the block size) or, by default, the number of columns of ``omega``.
    float64 cosines come from :func:`cosine_in_place`, float32 ones from NumPy's vectorized
    single-precision cosine."""
    m = omega.shape[1] if n_components is None else n_components
    features = _project(X, omega)
    if features.dtype == np.float64 and features.ndim == 2:
        features = cosine_in_place(np.ascontiguousarray(features), np.asarray(offset))
    else:
        features += offset
        np.cos(features, out=features)
    features *= np.sqrt(2.0 / m).astype(features.dtype)
    return features


_INVERSE_TWO_PI = 0.5 / math.pi
_TWO_PI = 2.0 * math.pi


def _two_pi_parts():
    """2 pi as A + B + C (Cody & Waite), A and B with 26 significant bits, so that ``k * A``
    and ``k * B`` are exact in float64 for integers ``|k| < 2^27``, and C the rest of the true
    2 pi rounded to float64 (from 50 decimal digits of pi: the float64 2 pi alone is off by
    2.4e-16, an error of 2.4e-16 k in the reduced argument)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60
    rest = 2 * Decimal("3.14159265358979323846264338327950288419716939937510")
    parts = []
    for _ in range(2):
        mantissa, exponent = math.frexp(float(rest))
        part = math.ldexp(math.floor(math.ldexp(mantissa, 26)), exponent - 26)
        parts.append(part)
        rest -= Decimal(part)  # exact: part is a float64
    return parts[0], parts[1], float(rest)


_TWO_PI_A, _TWO_PI_B, _TWO_PI_C = _two_pi_parts()
# Beyond this |x| the reduction's k * A is no longer exact: such rows use math.cos.
_REDUCTION_LIMIT = 2.0 ** 26 * 2.0 * math.pi
# (-1)^k / (2k)! for k = 1..14: Taylor polynomial of cos r on [-pi, pi], remainder
# pi^30 / 30! < 1.1e-17
(_D1, _D2, _D3, _D4, _D5, _D6, _D7, _D8, _D9, _D10, _D11, _D12, _D13,
 _D14) = ((-1.0) ** k / math.factorial(2 * k) for k in range(1, 15))


# No "reassoc" (it would fold the three reduction products into one rounded 2 pi k) and no
# "afn"; the loop has no reduction, so it vectorizes without them.
@numba.njit(cache=True, fastmath={"nnan", "ninf", "nsz", "contract", "arcp"})
def cosine_in_place(projections, offset):
    r"""``projections[r, j] = cos(projections[r, j] + offset[j])`` in float64, in place.

    :math:`x = p + b` is reduced to :math:`r = x - 2\pi k \in [-\pi, \pi]`,
    :math:`k = \lfloor x / 2\pi + 1/2 \rceil`, by a three-part Cody-Waite subtraction (exact
    products for :math:`|x| < 2^{26} \cdot 2\pi`), and :math:`\cos r` is its Taylor
    polynomial of degree 28 (Horner): a loop the compiler vectorizes, about 5x faster than
    ``math.cos`` or ``np.cos`` in float64 on AVX2. Error within 1e-15 of the exact cosine of
    the float64 ``x`` (measured 7.8e-16 up to :math:`|x| = 10^4`); a row with a larger
    argument is computed with ``math.cos``. Returns ``projections``.
    Twin: ``np.cos(projections + offset)``.
    """
    n_rows, n_columns = projections.shape
    for row in range(n_rows):
        beyond = False  # an integer "or" reduction: vectorizes without "reassoc"
        for column in range(n_columns):
            beyond |= abs(projections[row, column] + offset[column]) >= _REDUCTION_LIMIT
        if beyond:
            for column in range(n_columns):
                projections[row, column] = math.cos(projections[row, column] + offset[column])
            continue
        for column in range(n_columns):
            x = projections[row, column] + offset[column]
            turns = np.floor(x * _INVERSE_TWO_PI + 0.5)
            reduced = ((x - turns * _TWO_PI_A) - turns * _TWO_PI_B) - turns * _TWO_PI_C
            s = reduced * reduced
            projections[row, column] = 1.0 + s * (_D1 + s * (_D2 + s * (_D3 + s * (_D4 + s * (
                _D5 + s * (_D6 + s * (_D7 + s * (_D8 + s * (_D9 + s * (_D10 + s * (
                    _D11 + s * (_D12 + s * (_D13 + s * _D14)))))))))))))
    return projections


def cosine_feature_scores(projections, offset, coefficients, out):
    r"""``out[r] += sum_j coefficients[j] cos(projections[r, j] + offset[j])`` in float64.

    The double-precision path of Alg. 2: :func:`cosine_in_place` on ``projections``
    (overwritten with the cosines: pass a scratch array) and one matrix-vector product.
    Returns ``out``.
    Twin: :func:`tests.reference_semi.cosine_feature_scores_reference`.
    """
    out += cosine_in_place(projections, offset) @ coefficients
    return out


# 1 / (2k)! for k = 1..9: the Taylor series of cos r = sum_k (-1)^k r^(2k) / (2k)!, whose
# remainder on |r| <= pi is below pi^20 / 20! = 4e-9
_COSINE_TAYLOR = tuple(np.float32((-1.0) ** k / math.factorial(2 * k)) for k in range(1, 10))
_C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9 = _COSINE_TAYLOR


@numba.njit(cache=True, fastmath=True)
def cosine_feature_scores_single(projections, offset, coefficients, out):
    r"""``out[r] += sum_j coefficients[j] cos(projections[r, j] + offset[j])`` in float32.

    The single-precision path of Alg. 2 (:func:`cosine_feature_scores` is the float64 one):
    the argument :math:`x = p + b` is reduced in float64 to :math:`r = x - 2\pi k \in
    [-\pi, \pi]`, :math:`k = \lfloor x / 2\pi + 1/2 \rceil`, and :math:`\cos r` is the
    Taylor polynomial of degree 18 in float32 (Horner), a loop the compiler vectorizes. One
    pass over ``projections`` instead of the three of ``np.cos(P + b) @ a`` (add, cosine,
    product), about 2-3x faster. Accuracy: :math:`|\widehat{\cos} x - \cos x| \le 4
    \cdot 10^{-7}` for float32 ``x`` (measured 3.5e-7 up to :math:`|x| = 10^6`: the float64
    reduction keeps large arguments exact), against about :math:`7 \cdot 10^{-8}` for NumPy's
    float32 cosine; each row's sum is accumulated in float32, as a BLAS float32 product does,
    and added to ``out``.
    Twin: :func:`tests.reference_semi.cosine_feature_scores_reference`.
    """
    n_rows, n_columns = projections.shape
    for row in range(n_rows):
        total = np.float32(0.0)
        for column in range(n_columns):
            x = np.float64(projections[row, column] + offset[column])
            turns = np.floor(x * _INVERSE_TWO_PI + 0.5)
            reduced = np.float32(x - turns * _TWO_PI)
            s = reduced * reduced
            cosine = np.float32(1.0) + s * (_C1 + s * (_C2 + s * (_C3 + s * (_C4 + s * (
                _C5 + s * (_C6 + s * (_C7 + s * (_C8 + s * _C9))))))))
            total += coefficients[column] * cosine
        out[row] += total
    return out


@numba.njit(cache=True, fastmath=True)
def cosine_feature_scores_single_models(projections, offset, coefficients, out):
    r"""``out[r, k] += sum_j coefficients[k, j] cos(projections[r, j] + offset[j])`` in
    float32, for several coefficient vectors (rows of ``coefficients``) at once.

    :func:`cosine_feature_scores_single` for the models of one shared pass (the supervised
    check of TSGS3VM): each row's cosines are computed once, with the same reduction and
    Taylor polynomial, into a scratch row, then summed against each model's coefficients;
    each sum is accumulated in float32 and added to ``out``.
    Twin: ``np.cos(projections + offset) @ coefficients.T``
    (:func:`tests.reference_semi.cosine_feature_scores_reference`).
    """
    n_rows, n_columns = projections.shape
    n_models = coefficients.shape[0]
    cosines = np.empty(n_columns, dtype=np.float32)
    for row in range(n_rows):
        for column in range(n_columns):
            x = np.float64(projections[row, column] + offset[column])
            turns = np.floor(x * _INVERSE_TWO_PI + 0.5)
            reduced = np.float32(x - turns * _TWO_PI)
            s = reduced * reduced
            cosines[column] = np.float32(1.0) + s * (_C1 + s * (_C2 + s * (_C3 + s * (_C4 + s * (
                _C5 + s * (_C6 + s * (_C7 + s * (_C8 + s * _C9))))))))
        for model in range(n_models):
            total = np.float32(0.0)
            for column in range(n_columns):
                total += coefficients[model, column] * cosines[column]
            out[row, model] += total
    return out


class RandomFourierFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    r"""Random Fourier features for the rbf and laplacian kernels.

    A drop-in for :class:`sklearn.kernel_approximation.RBFSampler` (same parameters and fitted
    attributes ``random_weights_``, ``random_offset_``) that also covers the laplacian kernel
    and whose frequencies come from the reproducible block stream of this module:
    :math:`z(x) = \sqrt{2/m} \cos(\Omega^T x + b)`, :math:`z(x)^T z(x') \approx k(x, x')`.

    Parameters
    ----------
    gamma : float or "scale", default=1.0
        Kernel width: ``exp(-gamma ||x - x'||_2^2)`` (rbf) or ``exp(-gamma ||x - x'||_1)``
        (laplacian). ``"scale"`` uses ``1 / (n_features X.var())``.
    n_components : int, default=100
        Number of features ``m``.
    random_state : int, RandomState instance or None, default=None
    kernel : {"rbf", "laplacian"}, default="rbf"

    Attributes
    ----------
    random_weights_ : ndarray of shape (n_features, n_components)
    random_offset_ : ndarray of shape (n_components,)
    seed_ : int
        Seed of the block stream (block 0 holds the features).
    n_features_in_ : int
    """

    _fitted_fields = {
        "n_features_in_": IntField(minimum=1),
        "feature_names_in_": ArrayField("str", ("n_features",), optional=True),
        "seed_": IntField(minimum=0),
        "random_weights_": ArrayField("float", ("n_features", "n_components")),
        "random_offset_": ArrayField("float", ("n_components",)),
        "_gamma": FloatField(minimum=0.0, strict=True),
        "_n_features_out": IntField(minimum=1, symbol="n_components"),
    }

    @classmethod
    def fitted_fields(cls):
        """The declared fitted state (see :mod:`stochsvm._core.state`)."""
        return merged_fields(cls)

    def __init__(self, *, gamma=1.0, n_components=100, random_state=None, kernel="rbf"):
        self.gamma = gamma
        self.n_components = n_components
        self.random_state = random_state
        self.kernel = kernel

    def fit(self, X, y=None):
        """Draw the frequencies for the width of ``X`` (only its shape and, for
        ``gamma="scale"``, its variance are used).

        An ``X`` of another array-API namespace (a CuPy array, a PyTorch tensor) inside
        ``sklearn.config_context(array_api_dispatch=True)`` gives ``random_weights_`` and
        ``random_offset_`` on its device, in its precision: the frequencies are drawn on
        the host from the same seed as for NumPy input (the same numbers), then moved, and
        ``gamma="scale"`` is computed on the device."""
        namespace = input_namespace(X)
        if namespace is not None:
            X = validate_data_in_namespace(self, X, namespace, reset=True)
        else:
            X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32))
        check_choice(self.kernel, "kernel", RANDOM_FEATURE_KERNELS)
        n_components = check_positive_int(self.n_components, "n_components")
        if isinstance(self.gamma, str):
            if self.gamma != "scale":
                raise ValueError(f"gamma={self.gamma!r} is not valid; use 'scale' or a float > 0.")
            self._gamma = (resolve_gamma(None, X) if namespace is None
                           else resolve_gamma_in_namespace(None, X, namespace))
        else:
            self._gamma = check_positive(self.gamma, "gamma")
        # the frequencies (d x m) and the features of one sample: refused before NumPy's
        # allocator is asked for more than the machine has
        itemsize = (X.dtype.itemsize if namespace is None
                    else 4 if X.dtype == namespace.float32 else 8)
        check_machine_memory(
            float(itemsize) * (X.shape[1] + 2) * n_components,
            f"RandomFourierFeatures(n_components={self.n_components!r}): the {X.shape[1]} x "
            f"{n_components} random frequencies",
            "Lower n_components.")
        self.seed_ = draw_seed(self.random_state)
        if namespace is None:
            self.random_weights_, self.random_offset_ = feature_block(
                self.seed_, 0, X.shape[1], n_components, self._gamma, self.kernel, X.dtype)
        else:
            dtype = np.float32 if X.dtype == namespace.float32 else np.float64
            device = array_api_compat.device(X)
            self.random_weights_, self.random_offset_ = (
                to_namespace(values, namespace, device) for values in feature_block(
                    self.seed_, 0, X.shape[1], n_components, self._gamma, self.kernel, dtype))
        self._n_features_out = n_components
        return self

    def transform(self, X):
        r"""Features of ``X``, shape (n_samples, n_components), in the dtype of ``X``.

        ``X`` of another array-API namespace under
        ``sklearn.config_context(array_api_dispatch=True)`` gives an array of that namespace,
        :math:`\sqrt{2/m}\cos(X\Omega + b)` computed on its device (a transformer fitted on
        NumPy moves its frequencies there)."""
        check_is_fitted(self, "random_weights_")
        where = prediction_namespace(self, X, "transform")
        if where is not None:
            namespace, device = where
            X = validate_data_in_namespace(self, X, namespace, reset=False)
            omega = namespace.astype(to_namespace(self.random_weights_, namespace, device),
                                     X.dtype)
            offset = namespace.astype(to_namespace(self.random_offset_, namespace, device),
                                      X.dtype)
            return namespace.cos(X @ omega + offset) * math.sqrt(2.0 / omega.shape[1])
        X = validate_data(self, X, accept_sparse="csr", dtype=(np.float64, np.float32),
                          reset=False)
        check_machine_memory(
            float(X.dtype.itemsize) * X.shape[0] * self._n_features_out,
            f"RandomFourierFeatures.transform: the {X.shape[0]} x {self._n_features_out} "
            "features",
            "Transform the samples in smaller batches, or lower n_components.")
        omega = self.random_weights_.astype(X.dtype, copy=False)
        offset = self.random_offset_.astype(X.dtype, copy=False)
        return transform_block(X, omega, offset)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.array_api_support = True
        return tags

