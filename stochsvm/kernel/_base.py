"""Shared machinery of the kernel SVM estimators (no bias, one-vs-rest multiclass).

Every estimator minimizes, per binary problem with ``y_i in {-1, +1}``,

    F(beta) = 1/2 ||beta||^2 + C sum_i s_i max(0, 1 - y_i <beta, phi(x_i)>),

with ``beta = sum_j a_j phi(x_j)`` so ``||beta||^2 = a^T K a`` and the decision value is
``f(x) = sum_j a_j k(x_j, x)``. ``C`` is as in ``sklearn.svm.SVC`` (default 1.0); the SCS
paper's eq. (2) is the case ``C = 1 / m``.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .._core.kernels import KERNELS, kernel_block, resolve_gamma
from .._core.validation import (
    check_at_least_two_classes,
    check_choice,
    check_positive,
    check_sample_weight,
    validate_prediction_data,
    validate_training_data,
)


class BaseKernelClassifier(ClassifierMixin, BaseEstimator):
    """Base class: validation, one-vs-rest, prediction, objective. Subclasses define
    ``_fit_binary(K, y, weights, rng, label) -> (coefficients, history, n_iter)``."""

    def _kernel(self, A, B):
        return kernel_block(A, B, self._kernel_name, self._gamma, self.degree, self.coef0)

    def fit(self, X, y, sample_weight=None):
        X, y = validate_training_data(self, X, y)
        if X.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s); at least one is required.")
        self.classes_ = np.unique(y)
        check_at_least_two_classes(self.classes_)
        weights = check_sample_weight(sample_weight, X.shape[0])
        self._C = check_positive(self.C, "C")
        self._kernel_name = check_choice(self.kernel, "kernel", KERNELS)
        self._gamma = resolve_gamma(self.gamma, X)
        if self._gamma <= 0:
            raise ValueError(f"gamma={self.gamma!r} must be > 0.")
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

    def decision_function(self, X):
        check_is_fitted(self, "dual_coef_")
        X = validate_prediction_data(self, X)
        if len(self.support_) == 0:
            scores = np.zeros((X.shape[0], self.dual_coef_.shape[0]))
        else:
            scores = self._kernel(X, self.support_vectors_) @ self.dual_coef_.T
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def objective(self, X, y):
        """``1/2 a^T K a + C sum_i hinge(y_i f(x_i))`` summed over the one-vs-rest problems."""
        check_is_fitted(self, "dual_coef_")
        X = validate_prediction_data(self, X)
        y = np.asarray(y)
        scores = self.decision_function(X).reshape(X.shape[0], -1)
        gram = self._kernel(self.support_vectors_, self.support_vectors_)
        total = 0.0
        for index in range(self.dual_coef_.shape[0]):
            label = self.classes_[1] if scores.shape[1] == 1 else self.classes_[index]
            signs = np.where(y == label, 1.0, -1.0)
            a = self.dual_coef_[index]
            total += 0.5 * a @ gram @ a
            total += self._C * np.maximum(0.0, 1.0 - signs * scores[:, index]).sum()
        return float(total)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
