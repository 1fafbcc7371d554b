"""Compare registered solvers with scikit-learn peers on one dataset (``stochsvm bench``).

:func:`compare` runs every solver and peer for every seed through
:func:`stochsvm.bench.harness.run_grid` (one forked process per run, time and memory limits),
writes ``bench.json`` (every record, ``history_`` included) and ``bench.csv`` (one row per run),
draws ``bench_accuracy.png`` (test accuracy over seeds, one box per method) and, when the
package's solvers recorded objectives, ``bench_objective.png`` (objective vs seconds, first seed),
and returns the records.

Peers (scikit-learn, default parameters except those named): ``SGDClassifier`` (hinge loss),
``LinearSVC``, ``LogisticRegression`` and ``SVC`` (RBF kernel, exact; O(n^2) memory).
"""

from __future__ import annotations

from pathlib import Path

from .harness import Dataset, Method, run_grid, summarize, write_tables

__all__ = ["PEERS", "compare", "peer_method", "solver_method", "summary_lines"]


def _sgd(seed):
    from sklearn.linear_model import SGDClassifier

    return SGDClassifier(loss="hinge", random_state=seed)


def _linear_svc(seed):
    from sklearn.svm import LinearSVC

    return LinearSVC(random_state=seed)


def _logistic(seed):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=1000, random_state=seed)


def _svc(seed):
    from sklearn.svm import SVC

    return SVC(random_state=seed)


PEERS = {"SGDClassifier": _sgd, "LinearSVC": _linear_svc, "LogisticRegression": _logistic,
         "SVC": _svc}


def peer_method(name):
    """The :class:`~stochsvm.bench.harness.Method` of a peer in :data:`PEERS`."""
    for key, make in PEERS.items():
        if key.lower() == str(name).lower():
            return Method(key, make, origin="peer")
    raise KeyError(f"unknown peer {name!r}; known peers: {', '.join(PEERS)}")


def solver_method(name, parameters=None):
    """The :class:`~stochsvm.bench.harness.Method` of a registered solver; ``parameters`` are
    passed to its constructor and ``random_state`` is the run's seed."""
    from .. import registry

    entry = registry.get_solver(name)
    if entry.problem == "semi-supervised":
        raise ValueError(f"{entry.name} is semi-supervised; bench compares supervised solvers "
                         "(train it with `stochsvm train --semi-supervised`)")
    cls = entry.load()
    parameters = dict(parameters or {})
    try:
        cls(**parameters)
    except TypeError as error:
        raise ValueError(f"bad parameter for {entry.name}: {error}") from None
    seeded = "random_state" in cls().get_params()

    def make(seed):
        return cls(**({"random_state": seed} if seeded else {}), **parameters)

    return Method(entry.name, make, origin="stochsvm")


def compare(X, y, X_test, y_test, methods, seeds=(0,), time_limit=None, memory_limit=None,
            out_dir=None, dataset_name="data", workers=1, log=None):
    """Run ``methods`` x ``seeds`` on one dataset; write tables and figures to ``out_dir``.

    Returns
    -------
    list of dict
        The harness records, in (method, seed) order.
    """
    dataset = Dataset(dataset_name, X, y, X_test, y_test)
    records = run_grid(list(methods), [dataset], list(seeds), time_limit=time_limit,
                       memory_limit=memory_limit, workers=workers, log=log)
    if out_dir is not None:
        from .figures import box_plots, curves_from_records, objective_vs_seconds

        out = Path(out_dir)
        write_tables(records, out, "bench", extra={
            "dataset": {"name": dataset_name, "n_train": int(X.shape[0]),
                        "n_test": None if X_test is None else int(X_test.shape[0]),
                        "n_features": int(X.shape[1])},
            "seeds": list(seeds), "time_limit": time_limit, "memory_limit": memory_limit})
        accuracies = {}
        for record in records:
            if record.get("test_accuracy") is not None:
                accuracies.setdefault(record["method"], []).append(record["test_accuracy"])
        if accuracies:
            box_plots({dataset_name: accuracies}, out / "bench_accuracy.png")
        curves = curves_from_records(records, dataset_name)
        if curves:
            objective_vs_seconds({dataset_name: {"curves": curves, "optimum": None}},
                                 out / "bench_objective.png", xlabel="seconds")
    return records


def summary_lines(records):
    """A text table: method, runs by status, test accuracy and seconds (median [min, max])."""
    def spread(value, scale=1.0, digits=4):
        if value is None:
            return "-"
        median, low, high = (scale * value[k] for k in ("median", "min", "max"))
        if value["count"] == 1:
            return f"{median:.{digits}f}"
        return f"{median:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"

    lines = [f"{'method':<26} {'origin':<9} {'runs':<24} {'test accuracy':<26} "
             f"{'fit seconds':<26} peak MiB"]
    for row in summarize(records):
        statuses = ", ".join(f"{count} {status}" for status, count in row["statuses"].items())
        memory = row["peak_memory_bytes"]
        memory = "-" if memory is None else f"{memory['median'] / 2**20:.1f}"
        lines.append(
            f"{row['method']:<26} {row['origin']:<9} {statuses:<24} "
            f"{spread(row['test_accuracy']):<26} {spread(row['fit_seconds'], digits=3):<26} "
            f"{memory}")
    return lines
