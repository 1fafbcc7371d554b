"""The training progress bar of ``stochsvm train --progress`` (tqdm, on stderr): each
binary problem's iterations against its solver's iteration cap."""

import numbers
import os
import sys

import numpy as np

from .._core.multiclass import class_pairs

__all__ = ["ProgressBar", "format_label", "iteration_total"]


def iteration_total(estimator, y):
    """Iteration cap of one binary problem of ``estimator`` fitted on ``y``, or None.

    The linear solvers, SCS, Wolfe, kernel Pegasos and the transductive SVMs stop at
    ``max_iter`` (epochs for the linear solvers and kernel Pegasos); TSGS3VM and FRS3VM run
    ``max_iter`` iterations or, when it is None, ``n_passes`` passes of unlabeled batches
    (at least 64 iterations); BGS3VM runs ``n_passes`` passes of ``batch_size`` draws.
    """
    parameters = estimator.get_params()
    name = type(estimator).__name__
    try:
        n_unlabeled = int(np.sum(y == -1))
        n_labeled = int(y.shape[0]) - n_unlabeled
        if name in ("TSGS3VM", "FRS3VM") and parameters.get("max_iter") is None:
            from ..semi.stochastic_schedule import schedule_iterations
            return schedule_iterations(parameters["batch_size"],
                                       parameters.get("unlabeled_batch_size"), None,
                                       parameters["n_passes"], n_labeled, n_unlabeled)[2]
        if name == "BGS3VM":
            batch = int(parameters["batch_size"])
            if n_unlabeled and parameters.get("C_star", None) != 0:
                per_pass = -(-n_unlabeled // min(batch, n_unlabeled))
            else:
                per_pass = -(-n_labeled // min(batch, n_labeled))
            return int(parameters["n_passes"]) * per_pass
    except (ImportError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    cap = parameters.get("max_iter")
    if isinstance(cap, numbers.Integral) and not isinstance(cap, bool) and cap > 0:
        return int(cap)
    return None


class ProgressBar:
    """Training callback drawing a progress bar (tqdm) on stderr.

    The bar counts the ``"iteration"`` of the records against the solver's iteration cap,
    with rate and time left, redrawn at most every 0.2 s. A one-vs-rest fit restarts it for
    each binary problem (the records' ``"problem"`` key; without it, an iteration count that
    does not increase marks a new problem) and names the problem's class (a one-vs-one
    fit, ``multi_class="ovo"``: its pair of classes). A problem that
    stops before the cap (its stopping rule) ends its bar at 100% with "converged".
    """

    def __init__(self, entry, estimator, y):
        self.name = entry.name
        self.total = iteration_total(estimator, y)
        self.unit = "epoch" if entry.problem == "linear" \
            or type(estimator).__name__ == "KernelPegasosSVC" else "it"
        classes = np.unique(y[y != -1]) if entry.problem == "semi-supervised" else np.unique(y)
        self.classes = classes if classes.shape[0] > 2 else None
        # a one-vs-one fit ("ovo") trains one problem a pair of classes
        self.pairs = (class_pairs(classes.shape[0]) if self.classes is not None
                      and estimator.get_params().get("multi_class") == "ovo" else None)
        self.bar = None
        self.problem = None
        self.last_iteration = None

    def _description(self, problem):
        if self.classes is None:
            return self.name
        if self.pairs is not None:
            count = len(self.pairs)
            if not 0 <= problem < count:
                return f"{self.name} pair ? ({problem + 1}/{count})"
            first, second = (format_label(self.classes[k]) for k in self.pairs[problem])
            return f"{self.name} pair {first} vs {second} ({problem + 1}/{count})"
        count = self.classes.shape[0]
        label = format_label(self.classes[problem]) if 0 <= problem < count else "?"
        return f"{self.name} class {label} ({problem + 1}/{count})"

    def start(self, problem=0):
        """Draw the bar of ``problem`` (its clock starts now)."""
        if self.bar is None:
            from tqdm import tqdm
            try:
                size = os.get_terminal_size(sys.stderr.fileno())
                sized = size.columns > 0 and size.lines > 1
            except (AttributeError, OSError, ValueError):
                sized = False
            # follow the terminal's size; a file, or a pseudo-terminal that reports no size
            # (where tqdm would hide the bar as off screen), gets a fixed 100 x 20
            self.bar = tqdm(total=self.total, desc=self._description(problem), unit=self.unit,
                            file=sys.stderr, mininterval=0.2, leave=True, dynamic_ncols=sized,
                            ncols=None if sized else 100, nrows=None if sized else 20)
        else:
            self.finish()
            self.bar.set_postfix_str("", refresh=False)
            self.bar.set_description_str(self._description(problem), refresh=False)
            self.bar.reset(total=self.total)
        self.problem = problem
        self.last_iteration = None

    def __call__(self, record):
        if not isinstance(record, dict):
            return None
        iteration = record.get("iteration")
        if not isinstance(iteration, numbers.Integral) or isinstance(iteration, bool):
            iteration = None
        problem = record.get("problem")
        if not isinstance(problem, numbers.Integral):
            problem = 0 if self.problem is None else self.problem
            if iteration is not None and self.last_iteration is not None \
                    and iteration <= self.last_iteration:
                problem += 1
        if self.bar is None or problem != self.problem:
            self.start(int(problem))
        advance = 1 if iteration is None else max(int(iteration) - self.bar.n, 0)
        if self.bar.total is not None and self.bar.n + advance > self.bar.total:
            self.bar.total = self.bar.n + advance  # more iterations than the cap announced
        for key in ("objective", "running_objective", "labeled_loss"):
            value = record.get(key)
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                self.bar.set_postfix_str(f"{key.replace('_', ' ')} {float(value):.4g}",
                                         refresh=False)
                break
        self.bar.update(advance)
        self.last_iteration = iteration
        return None

    def finish(self):
        """End the bar of the problem that just finished: at 100%, with "converged" when it
        stopped before the cap."""
        if self.bar is None or self.bar.total is None or self.bar.n >= self.bar.total:
            return
        self.bar.total = self.bar.n
        self.bar.set_postfix_str("converged", refresh=False)
        self.bar.refresh()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def format_label(value):
    """A label as text, exactly: integral floats as integers (``-1``, ``1000001``)."""
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)
