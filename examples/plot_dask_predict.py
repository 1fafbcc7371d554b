"""
=================================
Predicting on a dask array
=================================

A fitted estimator's ``predict``, ``decision_function``, ``predict_proba`` and ``score``
accept a dask array (or DataFrame): each row block is scored where it lives and the result
is again a lazy dask array, so the data are never gathered in one place. This example fits a
model in memory, wraps a larger test set in a dask array of 10 row blocks and predicts on it
with dask's default local scheduler; with a ``dask.distributed`` ``Client`` connected, the
same code runs on the cluster's workers. Training on dask arrays is described in the module
docstring of :mod:`stochsvm.distributed`.

dask is an optional dependency (``pip install "stochsvm[dask]"``); without it this example
computes the same numbers with NumPy.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification

import stochsvm

try:
    import dask.array as da
except ImportError:  # the example still runs, in memory
    da = None

X, y = make_classification(n_samples=20_000, n_features=20, n_informative=10,
                           random_state=0)
X_train, y_train, X_rest, y_rest = X[:2_000], y[:2_000], X[2_000:], y[2_000:]
model = stochsvm.SADMMClassifier(penalty="l2", alpha=1e-4, random_state=0)
model.fit(X_train, y_train)

# %%
# ``X_big`` holds 18 000 rows in blocks of 1 800; ``predict`` returns a dask array with
# the same row blocks, and nothing is computed until ``.compute()``.
if da is not None:
    X_big = da.from_array(X_rest, chunks=(1_800, -1))
    labels = model.predict(X_big)
    print(type(labels).__name__, labels.chunks[0])
    labels = labels.compute()
    accuracy = model.score(X_big, y_rest)
    source = "dask array, 10 row blocks"
else:
    print("dask is not installed: predicting with NumPy instead")
    labels = model.predict(X_rest)
    accuracy = model.score(X_rest, y_rest)
    source = "NumPy array (dask not installed)"
assert np.array_equal(labels, model.predict(X_rest))  # the same labels as in memory
print(f"accuracy on {len(y_rest)} rows: {accuracy:.4f}")

# %%
# Accuracy per row block of the predictions.
blocks = np.array_split(np.arange(len(y_rest)), 10)
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.bar(range(1, 11), [np.mean(labels[rows] == y_rest[rows]) for rows in blocks])
ax.axhline(accuracy, color="gray", linestyle="--", label=f"overall {accuracy:.3f}")
ax.set(xlabel="row block", ylabel="accuracy", ylim=(0.5, 1.0), title=source)
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()
