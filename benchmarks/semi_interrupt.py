r"""Seconds from Ctrl-C to ``KeyboardInterrupt`` on large exact semi-supervised fits.

Protocol
--------
* ``LapSVM``: ``make_classification`` rows (20 features), 10% labeled, the default anchor
  graph and ``manifold_weight``, ``max_memory_mb`` raised to hold the two
  :math:`(n+1)^2` matrices. ``SelfLabelingTSVM``: its default ``max_samples`` rows, 10%
  labeled. One BLAS thread, one process.
* Each trial is a fresh fit in this process. A helper process (not a thread: a thread would
  wait for a LAPACK call that holds the GIL before it could send anything) sends SIGINT to
  the process a given number of seconds after an event, and records the wall-clock time it
  sent it: the fit's start (``fit+``) or the start of LapSVM's
  first Newton solve (``solve+``) or SelfLabelingTSVM's first libsvm call after the first
  (``svc+``); the time to the ``KeyboardInterrupt`` is recorded, with the longest single
  solve / libsvm call seen.
* ``--before`` runs LapSVM's Newton solve as the release before the blocked solve did (one
  ``scipy.linalg.solve`` call).

Run::

    python benchmarks/semi_interrupt.py --estimator lapsvm --rows 10000
    python benchmarks/semi_interrupt.py --estimator lapsvm --rows 10000 --before
    python benchmarks/semi_interrupt.py --estimator tsvm

Output: one JSON line per trial on stdout, and ``--output`` (JSON list) if given.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def data(rows, seed=0):
    from sklearn.datasets import make_classification

    X, y = make_classification(rows, 20, n_informative=10, random_state=seed)
    hidden = np.random.default_rng(seed).random(rows) >= 0.1
    y = y.copy()
    y[hidden] = -1
    return X, y


SENDER = ("import os, signal, sys, time\n"
          "target, pid, path = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]\n"
          "time.sleep(max(0.0, target - time.time()))\n"
          "sent = time.time()\n"
          "os.kill(pid, signal.SIGINT)\n"
          "open(path, 'w').write(repr(sent))\n")


class Events:
    """Start times of the watched calls, and the SIGINT sender armed on one of them."""

    def __init__(self, event, delay):
        self.event, self.delay = event, delay
        self.calls = []  # (start, seconds) of the watched calls
        self.timer = None
        self.record = tempfile.NamedTemporaryFile(suffix=".sent", delete=False).name

    def arm(self):
        self.timer = subprocess.Popen([sys.executable, "-c", SENDER,
                                       repr(time.time() + self.delay), str(os.getpid()),
                                       self.record])

    def signal_time(self):
        """Wall-clock time the SIGINT was sent, or ``None``."""
        if self.timer is None:
            return None
        self.timer.wait()
        with open(self.record) as handle:
            text = handle.read().strip()
        os.unlink(self.record)
        return float(text) if text else None

    def watch(self, function, name):
        def watched(*arguments, **keywords):
            start = time.perf_counter()
            if self.event == name and self.timer is None and (
                    name != "svc" or len(self.calls) >= 1):
                self.arm()
            try:
                return function(*arguments, **keywords)
            finally:
                self.calls.append((start, time.perf_counter() - start))
        return watched


def trial(estimator, rows, event, delay, before):
    import scipy.linalg

    from stochsvm.semi import lapsvm, tsvm

    X, y = data(rows)
    events = Events(event, delay)
    if estimator == "lapsvm":
        solve = ((lambda matrix, right: scipy.linalg.solve(matrix, right, overwrite_a=True,
                                                           check_finite=False))
                 if before else lapsvm.blocked_solve)
        lapsvm.blocked_solve = events.watch(solve, "solve")
        model = lapsvm.LapSVM(max_memory_mb=8 * (rows + 1) ** 2 * 2 / 2**20 + 64,
                              random_state=0)
    else:
        tsvm.fit_weighted_svc = events.watch(tsvm.fit_weighted_svc, "svc")
        model = tsvm.SelfLabelingTSVM()
    start = time.time()
    if event == "fit":
        events.arm()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, y)
        stopped, outcome = time.time(), "finished"
    except KeyboardInterrupt:
        stopped, outcome = time.time(), "KeyboardInterrupt"
    if events.timer is not None and outcome == "finished":
        events.timer.kill()
    sent = events.signal_time() if outcome == "KeyboardInterrupt" else None
    record = {"estimator": estimator, "rows": rows, "before": before,
              "signal": f"{event}+{delay:g}", "outcome": outcome,
              "fit_seconds_until_stop": stopped - start,
              "seconds_to_stop": None if sent is None else stopped - sent,
              "watched_calls": len(events.calls),
              "longest_watched_call": max((seconds for _, seconds in events.calls),
                                          default=None),
              "fitted": hasattr(model, "classes_")}
    print(json.dumps(record), flush=True)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--estimator", choices=("lapsvm", "tsvm"), default="lapsvm")
    parser.add_argument("--rows", type=int, default=None,
                        help="LapSVM: 10000; SelfLabelingTSVM: its max_samples, 5000")
    parser.add_argument("--signals", default=None,
                        help="comma-separated EVENT+SECONDS, EVENT one of fit, solve (LapSVM), "
                             "svc (SelfLabelingTSVM)")
    parser.add_argument("--before", action="store_true")
    parser.add_argument("--output", default=None)
    arguments = parser.parse_args(argv)
    rows = arguments.rows or (10000 if arguments.estimator == "lapsvm" else 5000)
    signals = arguments.signals or ("solve+1,solve+4,fit+3" if arguments.estimator == "lapsvm"
                                    else "svc+0.5,svc+2,fit+3")
    records = []
    for item in signals.split(","):
        event, delay = item.split("+")
        records.append(trial(arguments.estimator, rows, event, float(delay), arguments.before))
    if arguments.output:
        with open(arguments.output, "w") as handle:
            json.dump(records, handle, indent=1)
    return records


if __name__ == "__main__":
    sys.exit(main() and 0)
