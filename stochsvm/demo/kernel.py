"""The kernel task of the default demo: :class:`~stochsvm.SCSKernelSVC` against scikit-learn's
``SVC`` and two kernel approximations on generated data with a nonlinear boundary."""

from __future__ import annotations

from ..bench import harness
from .comparisons import Comparison

__all__ = ["kernel_comparison"]

#: rows and budget of the warm-up fit that grows S_k past its 16-bit matrix
WARM_UP_ROWS = 3000
WARM_UP_MEMORY_MB = 0.1


def _fit_past_the_budget(X, y):
    from ..kernel import SCSKernelSVC

    SCSKernelSVC(kernel_dtype="fixed16", max_memory_mb=WARM_UP_MEMORY_MB, max_iter=200,
                 random_state=0).fit(X, y)


def _past_the_budget_fit(X, y):
    """An SCS fit on :data:`WARM_UP_ROWS` rows whose sample grows past a tiny budget in 16-bit
    storage: it compiles (or loads) the loops of the 16-bit matrix and of the rows computed
    past the budget, which the default fit on the full task uses and a fit of a few rows does
    not reach (``benchmarks/main_job_first_fit.py``). It runs in a forked process, which
    writes them to numba's disk cache: the loops past the budget are parallel, and a process
    forked from one that has started numba's OpenMP threads (as the timed fits are forked
    from this one) stops at its first parallel loop."""
    import multiprocessing

    rows = (X[:WARM_UP_ROWS], y[:WARM_UP_ROWS])
    if not harness.fork_available():
        _fit_past_the_budget(*rows)
        return
    helper = multiprocessing.get_context("fork").Process(target=_fit_past_the_budget,
                                                         args=rows)
    helper.start()
    helper.join()


def kernel_comparison(n_samples, seed=0):
    """SCS against SVC and two kernel approximations on generated nonlinear data.

    Parameters
    ----------
    n_samples : int
        Training samples; the test set has 10000 more from the same distribution.
    seed : int, default=0
        Seed of the estimators (the data are those of
        :func:`stochsvm.bench.scs.generated_datasets`).

    Returns
    -------
    Comparison
    """
    from sklearn.kernel_approximation import Nystroem, RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import SVC, LinearSVC

    from ..bench.scs import generated_datasets
    from ..kernel import SCSKernelSVC

    generated = generated_datasets([n_samples])[0]
    dataset = harness.Dataset("kernel", generated.X_train, generated.y_train, generated.X_test,
                              generated.y_test)
    # Nystroem has no gamma="scale": the same width, from the same training data
    gamma = harness.scale_gamma(dataset.X_train)
    methods = [
        harness.Method("SCSKernelSVC", lambda seed: SCSKernelSVC(random_state=seed),
                       warm_up=_past_the_budget_fit),
        harness.Method("SVC", lambda seed: SVC(), origin="peer"),
        harness.Method("Nystroem + LinearSVC", lambda seed: make_pipeline(
            Nystroem(gamma=gamma, random_state=seed), LinearSVC(random_state=seed)),
            origin="peer"),
        harness.Method("RBFSampler + SGDClassifier", lambda seed: make_pipeline(
            RBFSampler(gamma="scale", random_state=seed), SGDClassifier(random_state=seed)),
            origin="peer"),
    ]
    from .._core.threads import fit_threads

    n_test, n_features = dataset.X_test.shape
    notes = [f"kernel: generated data with a nonlinear boundary (make_classification, two "
             f"clusters per class, some labels flipped), {n_samples} training / {n_test} test "
             f"samples x {n_features} features; rbf kernel of width gamma = 1 / (d Var X) "
             f"for every model, the approximations with their default 100 components; "
             f"SCSKernelSVC on {fit_threads()} thread(s)"]
    intel = _intel_svc()
    if intel is not None:
        intel_class, threads = intel
        methods.insert(2, harness.Method("scikit-learn-intelex SVC",
                                         lambda seed: intel_class(), origin="peer"))
        notes.append(f"scikit-learn-intelex's SVC (installed here) on {threads} thread(s)")
    return Comparison("kernel", dataset, methods, notes)


def _intel_svc():
    """``(sklearnex.svm.SVC, its thread count)`` where scikit-learn-intelex is installed (a
    user's strongest CPU peer), else ``None``."""
    try:
        import daal4py
        from sklearnex.svm import SVC as IntelSVC
    except Exception:  # not installed, or a broken installation: the peer is left out
        return None
    return IntelSVC, int(daal4py.num_threads())
