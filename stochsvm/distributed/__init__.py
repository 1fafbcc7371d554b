"""Dask input for the fitted estimators: prediction where the chunks live.

A fitted model is an ordinary in-memory model (a few arrays); a data set larger than one
machine's memory is a :class:`dask.array.Array` (or a dask DataFrame) whose chunks live on
the workers of a ``dask.distributed`` cluster. ``predict``, ``decision_function``,
``predict_proba``, ``predict_log_proba`` and ``score`` of every estimator accept such input
and work block by block: the model travels to the workers once, each row block is scored
where it lives, and the result is again a lazy dask array (``score`` computes one number).
Nothing is gathered to the client.

Dask is an optional dependency (``pip install "stochsvm[dask]"``); this module imports it only
when a dask collection is passed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["blockwise", "is_dask_collection"]


def is_dask_collection(data):
    """True for a dask array, DataFrame or Series (without importing dask)."""
    return hasattr(data, "__dask_graph__") and hasattr(data, "__dask_keys__")


def _as_row_blocks(X):
    """``X`` as a dask array chunked by rows only (the features of a row in one block)."""
    import dask.array as da

    if not isinstance(X, da.Array):
        if hasattr(X, "to_dask_array"):  # a dask DataFrame: row lengths are computed once
            X = X.to_dask_array(lengths=True)
        else:
            raise TypeError(f"unsupported dask collection {type(X).__name__}; pass a dask "
                            "array or a dask DataFrame")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D dask array of shape (n_samples, n_features), got "
                         f"{X.ndim} dimension(s).")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def _score_block(block, estimator, method):
    return np.asarray(getattr(estimator, method)(block))


def blockwise(estimator, method, X):
    """``estimator.<method>(X)`` for a dask ``X``, as a lazy dask array of row blocks.

    Parameters
    ----------
    estimator : fitted estimator
    method : {"predict", "decision_function", "predict_proba", "predict_log_proba"}
    X : dask array or dask DataFrame of shape (n_samples, n_features)

    Returns
    -------
    dask.array.Array
        Of shape (n_samples,) for ``predict`` and for the decision values of two classes,
        (n_samples, n_classes) otherwise; chunked like the rows of ``X``.
    """
    X = _as_row_blocks(X)
    n_features = getattr(estimator, "n_features_in_", None)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {n_features} features as input.")
    n_classes = len(estimator.classes_)
    if method == "predict":
        return X.map_blocks(_score_block, estimator, method, dtype=estimator.classes_.dtype,
                            drop_axis=1, meta=np.empty(0, dtype=estimator.classes_.dtype))
    if method == "decision_function" and n_classes == 2:
        return X.map_blocks(_score_block, estimator, method, dtype=np.float64, drop_axis=1,
                            meta=np.empty(0))
    return X.map_blocks(_score_block, estimator, method, dtype=np.float64,
                        chunks=(X.chunks[0], (n_classes,)), meta=np.empty((0, 0)))


def score(estimator, X, y, sample_weight=None):
    """Mean accuracy of ``estimator`` on dask ``X`` and labels ``y``, computed blockwise."""
    import dask.array as da

    predictions = blockwise(estimator, "predict", X)
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    y = da.asarray(y).rechunk((predictions.chunks[0],))
    correct = (predictions == y).astype(np.float64)
    if sample_weight is None:
        return float(correct.mean().compute())
    weights = da.asarray(sample_weight).rechunk((predictions.chunks[0],))
    total, weight = da.compute((correct * weights).sum(), weights.sum())
    return float(total / weight)
