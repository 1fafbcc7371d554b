r"""Shared machinery of the kernel SVM estimators (no bias, one-vs-rest multiclass).

Every estimator minimizes, per binary problem with :math:`y_i \in \{-1, +1\}` and sample
weights :math:`s_i`,

.. math::

    F(\beta) = \tfrac12\|\beta\|^2 + C\sum_{i=1}^m s_i \max(0, 1 - y_i\langle\beta,
    \phi(x_i)\rangle),
    \qquad \beta = \sum_j a_j\phi(x_j),

so :math:`\|\beta\|^2 = a^\top K a` and the decision value is :math:`f(x) = \sum_j a_j k(x_j, x)`
(no bias, as in the SCS paper). ``C`` is the weight of scikit-learn's ``SVC`` (default 1.0).
The SCS paper's eq. (2), :math:`\tfrac12 a^\top Q a + \tfrac1m\sum_i \max(0, 1 - w_i (Qa)_i)`,
is the case :math:`C = 1/m`; with an RBF kernel (:math:`k \le 1`) that problem is degenerate:
every sample violates the margin at the optimum and the solution is the Parzen-window
classifier :math:`a = y/m`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._core.kernels import (
    KERNELS,
    check_memory_budget,
    kernel_block,
    resolve_gamma,
    resolve_kernel_dtype,
)
from .._core.validation import (
    check_at_least_two_classes,
    check_choice,
    check_nonnegative,
    check_positive,
    check_sample_weight,
    validate_prediction_data,
    validate_training_data,
)

__all__ = ["BaseKernelClassifier", "check_gram_budget", "matvec"]

# rows per chunk of the prediction and objective kernel blocks (float64 temporaries)
_PREDICTION_CHUNK_BYTES = 64 * 2**20


class BaseKernelClassifier(ClassifierMixin, BaseEstimator):
    """Base class: validation, one-vs-rest, prediction and the objective.

    Subclasses define ``_resolve_parameters(n_samples)`` and
    ``_fit_binary(X, signs, weights, rng, index) -> (coefficients, history, n_iter)``, where
    ``coefficients`` has one entry per training sample (zeros outside the support).
    """

    def _kernel(self, A, B, out=None):
        return kernel_block(A, B, self._kernel_name, self._gamma, self._degree, self._coef0,
                            dtype=self._kernel_dtype, out=out)

    def _resolve_kernel(self, X):
        self._kernel_name = check_choice(self.kernel, "kernel", KERNELS)
        self._gamma = resolve_gamma(self.gamma, X)
        self._degree = check_nonnegative(self.degree, "degree")
        self._coef0 = float(self.coef0)
        if not np.isfinite(self._coef0):
            raise ValueError(f"coef0={self.coef0!r} must be a finite number.")
        self._kernel_dtype = resolve_kernel_dtype(self.kernel_dtype).name
        self._max_memory_mb = check_positive(self.max_memory_mb, "max_memory_mb")

    def fit(self, X, y, sample_weight=None):
        """Fit one binary problem (two classes) or one per class (one-vs-rest).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Multiplies ``C`` sample by sample.

        Returns
        -------
        self
        """
        X, y = validate_training_data(self, X, y)
        if X.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s); at least one is required.")
        self.classes_ = np.unique(y)
        check_at_least_two_classes(self.classes_)
        weights = check_sample_weight(sample_weight, X.shape[0])
        self._C = check_positive(self.C, "C")
        self._resolve_kernel(X)
        self._resolve_parameters(X.shape[0])
        rng = np.random.RandomState(self.random_state)
        if len(self.classes_) == 2:
            problems = [np.where(y == self.classes_[1], 1.0, -1.0)]
        else:
            problems = [np.where(y == label, 1.0, -1.0) for label in self.classes_]
        coefficients, self.history_, n_iters = [], [], []
        for index, signs in enumerate(problems):
            a, history, n_iter = self._fit_binary(X, signs, weights, rng, index)
            coefficients.append(a)
            for entry in history:
                entry["problem"] = index
            self.history_.extend(history)
            n_iters.append(n_iter)
        coefficients = np.vstack(coefficients)
        support = np.flatnonzero(np.any(coefficients != 0.0, axis=0))
        self.support_ = support
        self.support_vectors_ = X[support]
        self.dual_coef_ = coefficients[:, support]
        self.n_iter_ = int(max(n_iters))
        return self

    def _chunk_rows(self, n_columns):
        return max(1, int(_PREDICTION_CHUNK_BYTES // (8 * max(n_columns, 1))))

    def decision_function(self, X):
        r"""Decision values :math:`f(x) = \sum_j a_j k(z_j, x)` over the support vectors.

        Returns an array of shape (n_samples,) for two classes, (n_samples, n_classes)
        otherwise. The kernel block is computed in row chunks of at most 64 MiB.
        """
        check_is_fitted(self, "dual_coef_")
        X = validate_prediction_data(self, X)
        scores = np.zeros((X.shape[0], self.dual_coef_.shape[0]))
        if len(self.support_):
            chunk = self._chunk_rows(len(self.support_))
            for start in range(0, X.shape[0], chunk):
                block = self._kernel(X[start:start + chunk], self.support_vectors_)
                scores[start:start + chunk] = block @ self.dual_coef_.T
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Class labels: the sign of the decision value (two classes) or its argmax."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def _squared_norms_of_beta(self):
        r""":math:`a^\top K a` over the support vectors, one value per binary problem."""
        values = np.zeros(self.dual_coef_.shape[0])
        n_support = len(self.support_)
        chunk = self._chunk_rows(n_support)
        for start in range(0, n_support, chunk):
            block = self._kernel(self.support_vectors_[start:start + chunk],
                                 self.support_vectors_)
            values += np.einsum("ki,ik->k", self.dual_coef_[:, start:start + chunk],
                                block @ self.dual_coef_.T)
        return values

    def objective(self, X, y, sample_weight=None):
        r"""The training objective on ``(X, y)``, summed over the one-vs-rest problems:

        .. math::

            \tfrac12 a^\top K a + C\sum_i s_i \max(0, 1 - y_i f(x_i)).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        float
        """
        check_is_fitted(self, "dual_coef_")
        X = validate_prediction_data(self, X)
        y = np.asarray(y)
        weights = check_sample_weight(sample_weight, X.shape[0])
        scores = self.decision_function(X).reshape(X.shape[0], -1)
        norms = self._squared_norms_of_beta()
        total = 0.0
        for index in range(self.dual_coef_.shape[0]):
            label = self.classes_[1] if scores.shape[1] == 1 else self.classes_[index]
            signs = np.where(y == label, 1.0, -1.0)
            total += 0.5 * norms[index]
            total += self._C * np.sum(weights * np.maximum(0.0, 1.0 - signs * scores[:, index]))
        return float(total)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def check_gram_budget(n_rows, n_columns, dtype, max_memory_mb, what, advice):
    """``MemoryError`` when an ``n_rows x n_columns`` matrix of ``dtype`` exceeds the budget."""
    check_memory_budget(float(np.dtype(dtype).itemsize) * n_rows * n_columns, max_memory_mb,
                        what, advice)


def matvec(block, vector):
    """``block @ vector`` in float64, without converting a float32 ``block`` to float64 (the
    vector is cast down instead, so the product streams the stored matrix once)."""
    if block.dtype == np.float64:
        return block @ vector
    return (block @ vector.astype(block.dtype)).astype(np.float64)
