"""Training records, callbacks, progress output and stopping rules shared by all solvers.

A solver works in *chunks* (an epoch for the linear solvers). After every chunk the Python
driver hands a record to :class:`TrainingMonitor`, which appends it to ``history_``, prints a
line when ``verbose``, calls the user's ``callback`` and decides whether to stop. Compiled loops
never see any of this.

Ctrl-C: Python raises ``KeyboardInterrupt`` only between two calls of compiled code, so a
compiled loop never runs long in one call: a pass is split into calls of at most
:data:`CHUNK_WORK` multiply-adds (:func:`chunk_stops`), each continuing the state the last one
left (the split never changes the arithmetic), and a fit stops within a fraction of a second
whatever its data and parameters.

A record is a plain ``dict`` with at least ``iteration`` (chunks done), ``samples_seen`` and
``seconds`` (wall time since ``fit`` began), plus solver-specific keys such as
``objective`` or ``vi_gap``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

__all__ = ["CHUNK_WORK", "SPARSE_VALUE_WORK", "TrainingMonitor", "chunk_stops", "row_work"]

#: the most multiply-adds one call of a compiled loop may do: a few hundredths of a second
CHUNK_WORK = 5e7
#: the multiply-adds one stored value of a CSR row counts for in a compiled loop over rows: a
#: random access to the coefficients (and, in the lazy loops, a catch-up) takes about as
#: long as 50 multiply-adds of a dense row (measured 10-140 ns a stored value in the sparse
#: loops, 2-4 ns a value in the dense ones)
SPARSE_VALUE_WORK = 50.0


def row_work(X):
    """The work of one row of ``X`` in a compiled loop over rows, in multiply-adds: two a
    feature of a dense ``X`` (a product and an update), :data:`SPARSE_VALUE_WORK` a stored
    value of a sparse one (on average over its rows)."""
    if hasattr(X, "nnz"):
        return SPARSE_VALUE_WORK * X.nnz / max(X.shape[0], 1)
    return 2.0 * X.shape[1]


def chunk_stops(count, unit_work):
    """Where the calls of a compiled loop over ``count`` units (steps, rows) end, when one
    unit costs ``unit_work`` multiply-adds: calls of at most :data:`CHUNK_WORK` (at least one
    unit each), the last ending at ``count``; ``[0]`` (one empty call) when ``count`` is 0.

    A loop runs ``for stop in chunk_stops(...)`` over ``start:stop`` pieces, ``start`` the
    last ``stop``."""
    per_call = max(1, int(CHUNK_WORK // max(float(unit_work), 1.0)))
    return list(range(per_call, count, per_call)) + [count]


class TrainingMonitor:
    """Collect per-chunk records and apply the stopping rule.

    Parameters
    ----------
    tol : float or None
        Stop when ``stop_key`` has not decreased below ``best - tol * |best|`` (``best``: the
        lowest value so far) for ``n_iter_no_change`` consecutive chunks: the rule of
        scikit-learn's ``SGDClassifier``, with a tolerance relative to the objective's scale
        so that one value serves data sets whose objectives differ by orders of magnitude.
        ``None`` disables the rule.
    n_iter_no_change : int
        Patience of the stopping rule.
    stop_key : str or tuple of str
        Record key watched by the stopping rule. Several keys (the objectives of a solver's
        candidate outputs, each a sequence of its own) are each watched against their own
        best value, and the rule stops only once every key seen so far has gone
        ``n_iter_no_change`` records without improving: a noisy sequence whose lucky low
        sets the best of all cannot end a fit while another sequence still descends.
    verbose : int
        ``> 0`` prints one line per chunk to standard error.
    callback : callable or None
        ``callback(record) -> bool | None``; returning ``True`` stops training. ``record``
        additionally holds ``"coef"`` and ``"intercept"`` of the current model when the solver
        provides them (they are not stored in ``history_``).
    label : str
        Prefix of the verbose lines (estimator name and, for one-vs-rest, the class).
    problem : int or None
        Index of the one-vs-rest binary problem; every record gets it as ``"problem"``.
    """

    def __init__(self, tol=None, n_iter_no_change=5, stop_key="objective", verbose=0,
                 callback=None, label="", problem=None):
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.stop_key = stop_key
        self.verbose = verbose
        self.callback = callback
        self.label = label
        self.problem = problem
        self.history = []
        self.start = time.perf_counter()
        self._keys = (stop_key,) if isinstance(stop_key, str) else tuple(stop_key)
        self._best = {}
        self._no_improvement = {}
        self._resumes = 0
        self._improved_since_resume = False
        self.stopped_by = None

    def elapsed(self):
        return time.perf_counter() - self.start

    def resume(self):
        """Continue after a ``tol`` stop (the solver changed its step): the patience count
        starts again, the best value so far is kept."""
        if self.stopped_by == "tol":
            self.stopped_by = None
        self._no_improvement = dict.fromkeys(self._no_improvement, 0)
        self._resumes += 1
        self._improved_since_resume = False

    @property
    def last_resume_helped(self):
        """False when training was resumed after a ``tol`` stop (:meth:`resume`) and the
        watched value has not fallen by ``tol`` since: the change made at the resume (a
        smaller step) bought nothing, and a further change of the same kind is not expected
        to; True before any resume."""
        return self._resumes == 0 or self._improved_since_resume

    def record(self, entry, model=None):
        """Store one record; return ``True`` when training should stop."""
        entry = dict(entry)
        entry.setdefault("seconds", self.elapsed())
        if self.problem is not None:
            entry.setdefault("problem", self.problem)
        self.history.append(entry)
        if self.verbose:
            fields = ", ".join(
                f"{key}={value:.6g}" if isinstance(value, float) else f"{key}={value}"
                for key, value in entry.items()
            )
            print(f"{self.label}{fields}", file=sys.stderr)
        stop = False
        if self.callback is not None:
            payload = dict(entry)
            if model is not None:
                payload.update(model)
            if self.callback(payload) is True:
                self.stopped_by = "callback"
                stop = True
        watched = [key for key in self._keys if key in entry]
        if self.tol is not None and watched:
            for key in watched:
                value = float(entry[key])
                best = self._best.get(key, np.inf)
                if np.isfinite(best) and value > best - self.tol * abs(best):
                    self._no_improvement[key] = self._no_improvement.get(key, 0) + 1
                else:
                    self._no_improvement[key] = 0
                    self._improved_since_resume = True
                self._best[key] = min(best, value)
            if min(self._no_improvement.values()) >= self.n_iter_no_change:
                self.stopped_by = self.stopped_by or "tol"
                stop = True
        return stop
