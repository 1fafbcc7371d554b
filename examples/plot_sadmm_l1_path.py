"""
=====================================================
l1 regularization path: SADMM against SGDClassifier
=====================================================

:class:`stochsvm.SADMMClassifier` trains an l1-regularized linear SVM by stochastic ADMM.
This example sweeps the regularization strength ``alpha`` on the digits data (even against
odd digits, 64 pixel features) and records, for each ``alpha``, the test accuracy and the
number of nonzero coefficients of

* SADMM with its default output, the averaged iterate of the paper's Theorem 4.2,
* SADMM with ``average=False`` (the last iterate),
* scikit-learn's ``SGDClassifier(loss="hinge", penalty="l1")``.

``alpha`` has the same meaning in all three (the weight of the penalty next to the mean
hinge loss), so the curves share one axis.
"""

# %%
# Data: digits, even against odd, standardized on the training part.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import stochsvm

X, y = load_digits(return_X_y=True)
y = y % 2
X_train, X_test, y_train, y_test = train_test_split(X, y, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

# %%
# The path: 20 epochs per fit for every method, no early stopping.
alphas = np.logspace(-4, -0.5, 8)
models = {
    "SADMM (averaged, default)": lambda a: stochsvm.SADMMClassifier(
        penalty="l1", alpha=a, max_iter=20, tol=None, random_state=0),
    "SADMM (last iterate)": lambda a: stochsvm.SADMMClassifier(
        penalty="l1", alpha=a, max_iter=20, tol=None, average=False, random_state=0),
    "SGDClassifier (l1)": lambda a: SGDClassifier(
        loss="hinge", penalty="l1", alpha=a, max_iter=20, tol=None, random_state=0),
}
accuracy = {name: [] for name in models}
nonzeros = {name: [] for name in models}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    for alpha in alphas:
        for name, make in models.items():
            model = make(alpha).fit(X_train, y_train)
            accuracy[name].append(model.score(X_test, y_test))
            nonzeros[name].append(int(np.count_nonzero(model.coef_)))

for name in models:
    print(f"{name:28s} accuracy {np.round(accuracy[name], 3)}")
    print(f"{'':28s} nonzeros {nonzeros[name]}")

# %%
# The averaged iterate is zero only where *every* iterate was zero, so SADMM's default
# output stays dense along the whole path, while its last iterate and SGDClassifier's
# truncated gradient become sparse as ``alpha`` grows. ``benchmarks/BENCHMARKS.md``
# (section "SADMM family") reports the same effect at full scale.
fig, (ax_acc, ax_nnz) = plt.subplots(1, 2, figsize=(10, 4))
for name, marker in zip(models, "osd"):
    ax_acc.semilogx(alphas, accuracy[name], marker=marker, label=name)
    ax_nnz.semilogx(alphas, nonzeros[name], marker=marker, label=name)
ax_acc.set(xlabel="alpha", ylabel="test accuracy", title="Accuracy")
ax_nnz.set(xlabel="alpha", ylabel="nonzero coefficients (of 64)", title="Sparsity")
ax_acc.legend(loc="lower left")
fig.tight_layout()
plt.show()
