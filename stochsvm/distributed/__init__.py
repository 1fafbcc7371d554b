"""Dask input: training and prediction where the chunks live.

A fitted model is an ordinary in-memory model (a few arrays); a data set larger than one
machine's memory is a :class:`dask.array.Array` (or a dask DataFrame) whose chunks live on
the workers of a ``dask.distributed`` cluster. ``predict``, ``decision_function``,
``predict_proba``, ``predict_log_proba`` and ``score`` of every estimator accept such input
and work block by block: the model travels to the workers once, each row block is scored
where it lives, and the result is again a lazy dask array (``score`` computes one number).
Nothing is gathered to the client.

``fit`` of the estimators named in :data:`TRAINERS` accepts the same input and trains where
the row blocks live, in the distributed form natural to each family; the fitted model is again
the ordinary in-memory model (it saves, loads and predicts on NumPy input as before):

* ``"model_averaging"`` (:mod:`stochsvm.distributed.linear`): the linear solvers whose epoch
  needs nothing but its own rows. Each round runs one epoch of the estimator's compiled
  solver on every row block and averages the solver states; ``tol`` watches the exact
  objective, computed in the same pass.
* ``"triply_stochastic"`` (:mod:`stochsvm.distributed.semi`): ``TSGS3VM`` and ``FRS3VM``. One
  pass validates the blocks and counts the labeled and unlabeled rows (``y == -1``); the
  labeled rows (few) are gathered once; the batch indices are drawn on the client with the
  generator of an in-memory fit, and each round fetches only the rows sampled for the next
  iterations from the blocks that hold them, while the client applies eq. (7) of the TSGS3VM
  paper to the previous ones. For a fixed ``random_state`` the model is the in-memory model.
* ``"sampled_rows"`` (:mod:`stochsvm.distributed.kernel`): ``SCSKernelSVC`` (adaptive
  sampling, the default). One pass validates the blocks and counts the labels; the random
  permutation that orders the growing sample :math:`S_k` and the validation samples
  :math:`T_k` is drawn on the client with the generator of an in-memory fit, and each round
  fetches only the rows of :math:`S_0` or of the next :math:`T_k`, with their labels and
  weights, from the blocks that hold them; :math:`Q^k` grows on the client as in memory. For
  a fixed ``random_state`` the model is the in-memory model, and the rows moved are those of
  the samples (at most ``max_samples`` plus one :math:`T_k` per binary problem).

The other estimators refuse dask input with a message saying why (the exact small-n
references name their size limit) and what to do instead.

Dask is an optional dependency (``pip install "stochsvm[dask]"``); this module imports it only
when a dask collection is passed.
"""

from __future__ import annotations

import numpy as np

from .._core.base import register_distributed_backend
from ..registry import SOLVERS
from .blocks import as_row_blocks, is_dask_collection

__all__ = ["TRAINERS", "blockwise", "fit", "is_dask_collection", "score"]



def _read_trainers(solvers):
    """Distributed form -> the names of the registered solvers whose class names it in
    ``_distributed_training``, in the registry's order."""
    forms = {}
    for entry in solvers.values():
        form = entry.load()._distributed_training
        if form is not None:
            forms.setdefault(form, []).append(entry.name)
    return {form: tuple(names) for form, names in forms.items()}


#: distributed form -> the estimators (class names) that train on dask input with it
TRAINERS = _read_trainers(SOLVERS)


def fit(estimator, X, *args, **kwargs):
    """``estimator.fit(X, y, **kwargs)`` for a dask ``X``, in the estimator's distributed form.

    Raises
    ------
    TypeError
        When the estimator has no distributed form (the message says what to do instead).
    """
    form = estimator._distributed_training
    if form is None:
        raise TypeError(estimator._dask_refusal.format(name=type(estimator).__name__))
    if form == "model_averaging":
        from .linear import fit_model_averaging

        return fit_model_averaging(estimator, X, *args, **kwargs)
    if form == "triply_stochastic":
        from .semi import fit_triply_stochastic

        return fit_triply_stochastic(estimator, X, *args, **kwargs)
    if form == "sampled_rows":
        from .kernel import fit_sampled_rows

        return fit_sampled_rows(estimator, X, *args, **kwargs)
    raise ValueError(f"unknown distributed form {form!r}")  # pragma: no cover


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
    X = as_row_blocks(X)
    n_features = getattr(estimator, "n_features_in_", None)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
                         f"expecting {n_features} features as input.")
    n_classes = len(estimator.classes_)
    if method == "predict":
        return X.map_blocks(_score_block, estimator, method, dtype=estimator.classes_.dtype,
                            drop_axis=1, meta=np.empty(0, dtype=estimator.classes_.dtype))
    # float32 blocks and a model fitted on float32 data score in float32, as in memory
    dtype = (estimator._output_dtype(X) if X.dtype in (np.float32, np.float64)
             else np.dtype(np.float64))
    if method == "decision_function" and n_classes == 2:
        return X.map_blocks(_score_block, estimator, method, dtype=dtype, drop_axis=1,
                            meta=np.empty(0, dtype=dtype))
    return X.map_blocks(_score_block, estimator, method, dtype=dtype,
                        chunks=(X.chunks[0], (n_classes,)), meta=np.empty((0, 0), dtype=dtype))


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


register_distributed_backend(fit=fit, blockwise=blockwise, score=score)
