"""Fit time of one solver per family in two source trees, alternating old and new code.

Written to show that a restructuring of the package's internals (compiled loops that take
namedtuple records in place of 20+ positional scalars, modules split, hyper-parameters resolved
into frozen records) did not slow the solvers down. The same script measures any two trees that
each hold a ``stochsvm/`` package: ``--old PATH`` and ``--new PATH`` (default: this
repository's working tree).

Solvers (defaults, ``random_state=0``) and data (generated once, in the parent, with fixed seeds,
and saved to a temporary ``.npz`` that every worker loads, so both trees see identical arrays;
labels 0/1; a held-out part of a fifth of the training size is generated with the training rows,
from the same distribution):

* **linear, sparse** -- ``SADMMClassifier()`` on a CSR matrix of 100,000 x 10,000 with 50
  column draws per row (duplicates merged: about 49.9 nonzeros a row), values N(0, 1/50); the
  label is ``x.w* + noise > 0`` with ``w*`` 1,000 N(0, 1) weights on random features and noise of
  0.3 times the standard deviation of ``x.w*``;
* **linear, dense** -- ``S3GDClassifier()`` on 20,000 x 100 standard normal, the same kind of
  noisy linear label (every weight nonzero);
* **kernel** -- ``SCSKernelSVC()`` on scikit-learn's ``make_classification`` (20,000 x 20, 10
  informative features, 2 clusters per class, 5% labels flipped);
* **semi-supervised** -- ``TSGS3VM()`` on ``make_classification`` (50,000 x 20, same settings,
  another seed), 200 stratified labels kept by ``stochsvm.datasets.make_semi_supervised``
  (``random_state=0``), ``y = -1`` elsewhere; the held-out part keeps its true labels.

``--quick`` (a smoke run) divides the numbers of rows by 10 (and the sparse problem's features
by 5).

Protocol. At the start, the ``stochsvm/`` package of each tree is copied (without its
``__pycache__`` folders) into a temporary folder, so that edits made to a tree during the run
(a working tree someone is still editing) reach neither tree's measurements; ``--in-place``
measures the trees where they are instead. Every measurement is a fresh Python process (this
script in its ``--worker`` mode) with ``PYTHONPATH`` set to the (copied) tree alone,
``OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = NUMBA_NUM_THREADS = 1`` and
``NUMBA_CACHE_DIR`` removed from the environment, so each tree compiles into and loads from its
own ``__pycache__`` folders (the worker checks that ``stochsvm`` was imported from its tree;
the JSON records each tree's commit, its uncommitted changes under ``stochsvm/`` and a SHA-1 of
the ``.py`` sources that were run). First one untimed warm-up fit per solver in each tree fills
the numba caches; then, ``--repeats`` times, every solver is fitted in the old tree and then in
the new one (old, new, old, new, ...; the solvers interleaved within each repeat so that a
change of the machine's load reaches them all). The worker times ``fit`` alone
(``time.perf_counter``), counts numba compilations during the fit (``numba:compile`` events:
0 once the cache is warm), and reports its peak resident memory (``ru_maxrss`` after the fit,
the whole process: import, data and fit; and before the fit, the part the fit did not add; the
data are generated in a child of the parent, whose own peak stays small, since on Linux
``ru_maxrss`` carries a parent's peak over into its children), the held-out accuracy and the
held-out predictions' checksum.
Reported per solver: median fit seconds of each tree, new/old ratio of the medians, the median of
the paired ratios (each new run over the old run just before it), the held-out accuracy of each
tree (equal when the restructuring changed no arithmetic) and the share of held-out predictions
on which the two trees agree.

The machine is shared with other work: the load average is recorded before and after, and the
paired, alternating order is what makes the ratio meaningful; read seconds to a tenth.

Run::

    git worktree add /tmp/stochsvm-base 43aad7c     # the code before the restructuring
    python benchmarks/restructuring_speed.py --old /tmp/stochsvm-base       # 6 min, 2 cores
    python benchmarks/restructuring_speed.py --old /tmp/stochsvm-base --quick --repeats 2
    python benchmarks/restructuring_speed.py --old OTHER --solvers SCSKernelSVC --out DIR

Outputs ``results/restructuring_speed.{json,md,png}`` (``restructuring_speed_quick.*`` with
``--quick``). The parent imports only the standard library at module level, and the workers
import ``stochsvm`` from their tree only.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
RECORD_PREFIX = "RESTRUCTURING_SPEED_RECORD "
RANDOM_STATE = 0
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")
WORKER_TIMEOUT_SECONDS = 900

# name -> family, estimator class, data description (full / quick sizes)
SOLVERS = {
    "SADMMClassifier": {"family": "linear (sparse)", "problem": "sparse"},
    "S3GDClassifier": {"family": "linear (dense)", "problem": "dense"},
    "SCSKernelSVC": {"family": "kernel", "problem": "kernel"},
    "TSGS3VM": {"family": "semi-supervised", "problem": "semi"},
}
SIZES = {
    "full": {"sparse": (100_000, 10_000, 50), "dense": (20_000, 100), "kernel": (20_000, 20),
             "semi": (50_000, 20, 200)},
    "quick": {"sparse": (10_000, 2_000, 50), "dense": (2_000, 100), "kernel": (2_000, 20),
              "semi": (5_000, 20, 200)},
}
TEST_FRACTION = 0.2  # held-out rows per training row


# --------------------------------------------------------------------------------------
# the worker: one fit in one fresh process, stochsvm from the tree on PYTHONPATH
# --------------------------------------------------------------------------------------
def _load(path):
    import numpy as np

    with np.load(path) as data:
        if "X_train_data" in data:
            import scipy.sparse as sp

            def csr(prefix):
                return sp.csr_matrix((data[prefix + "_data"], data[prefix + "_indices"],
                                      data[prefix + "_indptr"]),
                                     shape=tuple(data[prefix + "_shape"]))

            X_train, X_test = csr("X_train"), csr("X_test")
        else:
            X_train, X_test = data["X_train"], data["X_test"]
        return X_train, data["y_train"], X_test, data["y_test"]


def _high_water_kib():
    """``VmHWM`` of ``/proc/self/status`` (the peak resident set of this process's own address
    space, KiB), or None where there is no such file."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _versions():
    import importlib

    versions = {}
    for name in ("numpy", "scipy", "sklearn", "numba", "llvmlite"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = None
    return versions


def worker(tree, solver, data_path):
    """Fit ``solver`` (defaults, ``random_state=0``) on the ``.npz`` at ``data_path`` with the
    ``stochsvm`` of ``tree``; return the record (seconds, compilations, memory, accuracy)."""
    started = time.perf_counter()
    import stochsvm
    import_seconds = time.perf_counter() - started
    package = Path(stochsvm.__file__).resolve().parent
    if package != (Path(tree).resolve() / "stochsvm"):
        raise RuntimeError(f"stochsvm was imported from {package}, not from the tree {tree}")

    import warnings

    import numpy as np
    from numba.core import event

    X_train, y_train, X_test, y_test = _load(data_path)
    estimator = getattr(stochsvm, solver)(random_state=RANDOM_STATE)

    compilations = []

    class _Counter(event.Listener):
        def on_start(self, event_):
            compilations.append(str(event_.data["dispatcher"].py_func.__qualname__))

        def on_end(self, event_):
            pass

    counter = _Counter()
    rss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    event.register("numba:compile", counter)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.perf_counter()
        estimator.fit(X_train, y_train)
        fit_seconds = time.perf_counter() - started
    event.unregister("numba:compile", counter)
    rss_after_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    high_water_kib = _high_water_kib()
    predictions = np.asarray(estimator.predict(X_test))
    accuracy = float(np.mean(predictions == y_test))
    warning_texts = sorted({f"{item.category.__name__}: {str(item.message)[:160]}"
                            for item in caught})
    n_iter = getattr(estimator, "n_iter_", None)
    return {"solver": solver, "tree": str(tree), "package": str(package),
            "fit_seconds": fit_seconds, "import_seconds": import_seconds,
            "compiled_during_fit": len(compilations),
            "compiled_functions": sorted(set(compilations)),
            "peak_rss_mib": rss_after_kib / 1024.0,
            "peak_rss_before_fit_mib": rss_before_kib / 1024.0,
            "vm_hwm_mib": None if high_water_kib is None else high_water_kib / 1024.0,
            "versions": _versions(),
            "accuracy": accuracy,
            "predictions_sha1": hashlib.sha1(predictions.astype(np.int64).tobytes()).hexdigest(),
            "predictions": predictions.astype(np.int8).tolist(),
            "n_iter": None if n_iter is None else float(np.asarray(n_iter).max()),
            "warnings": warning_texts,
            "threads": {name: os.environ.get(name) for name in THREAD_VARIABLES}}


# --------------------------------------------------------------------------------------
# the parent
# --------------------------------------------------------------------------------------
def _noisy_linear_label(rng, margins):
    noise = 0.3 * margins.std() * rng.standard_normal(margins.shape[0])
    return (margins + noise > 0).astype("int64")


def make_problems(mode, directory):
    """Generate the four data sets of ``mode`` and save each to ``directory/<problem>.npz``.

    Returns
    -------
    dict
        ``problem -> {"path", "description", "n_train", "n_test", "n_features", ...}``.
    """
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import make_classification

    sys.path.insert(0, str(REPOSITORY))  # make_semi_supervised of this checkout (parent only)
    from stochsvm.datasets import make_semi_supervised

    sizes = SIZES[mode]
    directory = Path(directory)
    problems = {}

    # sparse linear: CSR, ~k nonzeros a row, sparse true weights plus noise
    n, d, k = sizes["sparse"]
    n_all = n + int(TEST_FRACTION * n)
    rng = np.random.default_rng(RANDOM_STATE)
    rows = np.repeat(np.arange(n_all), k)
    columns = rng.integers(0, d, size=n_all * k)
    values = rng.standard_normal(n_all * k) / np.sqrt(k)
    X = sp.csr_matrix((values, (rows, columns)), shape=(n_all, d))
    X.sum_duplicates()
    X.sort_indices()
    w = np.zeros(d)
    support = rng.choice(d, size=d // 10, replace=False)
    w[support] = rng.standard_normal(support.size)
    y = _noisy_linear_label(rng, X @ w)
    arrays = {}
    for prefix, part in (("X_train", X[:n]), ("X_test", X[n:])):
        part = sp.csr_matrix(part)
        arrays.update({prefix + "_data": part.data, prefix + "_indices": part.indices,
                       prefix + "_indptr": part.indptr,
                       prefix + "_shape": np.array(part.shape)})
    arrays.update(y_train=y[:n], y_test=y[n:])
    problems["sparse"] = {
        "description": (f"generated sparse CSR {n:,} x {d:,} (+{n_all - n:,} held out), "
                        f"{X[:n].nnz / n:.1f} nonzeros/row; y = x.w* + noise > 0, "
                        f"{support.size:,} nonzero weights"),
        "short": f"sparse {n:,} x {d:,}, {X[:n].nnz / n:.0f} nnz/row",
        "n_train": n, "n_test": n_all - n, "n_features": d,
        "nonzeros_per_row": X[:n].nnz / n, "arrays": arrays}

    # dense linear
    n, d = sizes["dense"]
    n_all = n + int(TEST_FRACTION * n)
    rng = np.random.default_rng(RANDOM_STATE + 1)
    X = rng.standard_normal((n_all, d))
    y = _noisy_linear_label(rng, X @ rng.standard_normal(d))
    problems["dense"] = {
        "description": (f"generated dense {n:,} x {d} (+{n_all - n:,} held out), N(0, 1); "
                        "y = x.w* + noise > 0"),
        "short": f"dense {n:,} x {d}",
        "n_train": n, "n_test": n_all - n, "n_features": d,
        "arrays": {"X_train": X[:n], "X_test": X[n:], "y_train": y[:n], "y_test": y[n:]}}

    # kernel
    n, d = sizes["kernel"]
    n_all = n + int(TEST_FRACTION * n)
    X, y = make_classification(n_samples=n_all, n_features=d, n_informative=10,
                               n_redundant=0, n_clusters_per_class=2, flip_y=0.05,
                               random_state=RANDOM_STATE)
    problems["kernel"] = {
        "description": (f"make_classification {n:,} x {d} (+{n_all - n:,} held out), 10 "
                        "informative, 2 clusters/class, 5% flipped, random_state=0"),
        "short": f"make_classification {n:,} x {d}",
        "n_train": n, "n_test": n_all - n, "n_features": d,
        "arrays": {"X_train": X[:n], "X_test": X[n:], "y_train": y[:n], "y_test": y[n:]}}

    # semi-supervised
    n, d, n_labeled = sizes["semi"]
    n_all = n + int(TEST_FRACTION * n)
    X, y = make_classification(n_samples=n_all, n_features=d, n_informative=10,
                               n_redundant=0, n_clusters_per_class=2, flip_y=0.05,
                               random_state=RANDOM_STATE + 1)
    y_train = make_semi_supervised(y[:n], n_labeled=n_labeled, random_state=RANDOM_STATE)
    problems["semi"] = {
        "description": (f"make_classification {n:,} x {d} (+{n_all - n:,} held out, labeled), "
                        f"{n_labeled} labels (make_semi_supervised, random_state=0), "
                        "others y = -1"),
        "short": f"make_classification {n:,} x {d}, {n_labeled} labels",
        "n_train": n, "n_test": n_all - n, "n_features": d, "n_labeled": n_labeled,
        "arrays": {"X_train": X[:n], "X_test": X[n:], "y_train": y_train, "y_test": y[n:]}}

    for problem, entry in problems.items():
        path = directory / f"{problem}.npz"
        np.savez(path, **entry.pop("arrays"))
        entry["path"] = str(path)
        entry["sha1"] = hashlib.sha1(path.read_bytes()).hexdigest()
    (directory / "problems.json").write_text(json.dumps(problems, indent=1))
    return problems


def make_problems_in_child(mode, directory):
    """:func:`make_problems` in a child process, so that the parent never holds the data: on
    Linux a process's ``ru_maxrss`` starts at its parent's peak (it survives fork and exec), so
    a parent that had built the data would floor every worker's measured peak."""
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--make-data", mode, "--data",
         str(directory)], capture_output=True, text=True, timeout=WORKER_TIMEOUT_SECONDS)
    if completed.returncode != 0:
        raise RuntimeError(f"data generation failed:\n{completed.stderr[-3000:]}")
    return json.loads((Path(directory) / "problems.json").read_text())


def _worker_environment(tree):
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH", "PYTHONSTARTUP")}
    environment.update({name: "1" for name in THREAD_VARIABLES})
    environment["PYTHONPATH"] = str(tree)
    environment["PYTHONHASHSEED"] = "0"
    return environment


def run_worker(tree, solver, data_path, workdir):
    """One measurement: a fresh process fits ``solver`` with the ``stochsvm`` of ``tree``."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--tree", str(tree),
               "--solver", solver, "--data", str(data_path)]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=str(workdir),
                               env=_worker_environment(tree), timeout=WORKER_TIMEOUT_SECONDS)
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RECORD_PREFIX)]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"{solver} in {tree} failed with exit code {completed.returncode}:\n"
                           f"{completed.stderr[-3000:]}")
    record = json.loads(lines[-1][len(RECORD_PREFIX):])
    record["process_seconds"] = time.perf_counter() - started
    record["finished_at"] = datetime.datetime.now().isoformat(timespec="seconds")
    return record


def _git(tree, *arguments):
    try:
        completed = subprocess.run(["git", "--no-optional-locks", "-C", str(tree), *arguments],
                                   capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def tree_description(tree):
    """Commit (``git rev-parse HEAD``, else ``"working tree"``), uncommitted changes under
    ``stochsvm/`` and a SHA-1 of the package's ``.py`` sources."""
    tree = Path(tree).resolve()
    commit = _git(tree, "rev-parse", "HEAD")
    changed = _git(tree, "status", "--porcelain", "--untracked-files=all", "--", "stochsvm")
    digest = hashlib.sha1()
    sources = sorted((tree / "stochsvm").rglob("*.py"))
    for path in sources:
        digest.update(str(path.relative_to(tree)).encode())
        digest.update(path.read_bytes())
    return {"path": str(tree), "commit": commit or "working tree",
            "uncommitted_changes_in_stochsvm": (None if changed is None
                                                else len(changed.splitlines())),
            "source_files": len(sources), "sources_sha1": digest.hexdigest()}


def machine_info(versions):
    """CPU, cores, platform, thread settings; ``versions``: the libraries a worker imported (the
    parent imports no numerical library, see :func:`make_problems_in_child`)."""
    cpu_model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {"cpu_model": cpu_model, "cpu_count": os.cpu_count(), "usable_cores": usable,
            "platform": platform.platform(), "python": platform.python_version(),
            "python_executable": sys.executable, **versions,
            "worker_threads": {name: "1" for name in THREAD_VARIABLES},
            "worker_numba_cache": "each tree's own __pycache__ (NUMBA_CACHE_DIR unset)"}


def summarize(solver, problem, pairs):
    """The per-solver row from the ``(old record, new record)`` pairs of the timed repeats."""
    old = [pair[0]["fit_seconds"] for pair in pairs]
    new = [pair[1]["fit_seconds"] for pair in pairs]
    old_accuracies = sorted({pair[0]["accuracy"] for pair in pairs})
    new_accuracies = sorted({pair[1]["accuracy"] for pair in pairs})
    first_old, first_new = pairs[0][0]["predictions"], pairs[0][1]["predictions"]
    agreement = sum(a == b for a, b in zip(first_old, first_new)) / max(len(first_old), 1)
    old_median, new_median = statistics.median(old), statistics.median(new)
    return {
        "solver": solver, "family": SOLVERS[solver]["family"], "data": problem["short"],
        "old_seconds": old, "new_seconds": new,
        "old_median_seconds": old_median, "new_median_seconds": new_median,
        "ratio_of_medians": new_median / old_median,
        "median_paired_ratio": statistics.median(b / a for a, b in zip(old, new)),
        "old_accuracy": old_accuracies, "new_accuracy": new_accuracies,
        "accuracy_equal": old_accuracies == new_accuracies,
        # the same predictions in every repeat of a tree (random_state fixed, one thread)
        "deterministic": all(len({pair[side]["predictions_sha1"] for pair in pairs}) == 1
                             for side in (0, 1)),
        "prediction_agreement": agreement,
        "old_n_iter": sorted({pair[0]["n_iter"] for pair in pairs}, key=str),
        "new_n_iter": sorted({pair[1]["n_iter"] for pair in pairs}, key=str),
        "old_peak_rss_mib": statistics.median(pair[0]["peak_rss_mib"] for pair in pairs),
        "new_peak_rss_mib": statistics.median(pair[1]["peak_rss_mib"] for pair in pairs),
        "old_peak_rss_before_fit_mib": statistics.median(pair[0]["peak_rss_before_fit_mib"]
                                                         for pair in pairs),
        "new_peak_rss_before_fit_mib": statistics.median(pair[1]["peak_rss_before_fit_mib"]
                                                         for pair in pairs),
        "old_import_seconds": statistics.median(pair[0]["import_seconds"] for pair in pairs),
        "new_import_seconds": statistics.median(pair[1]["import_seconds"] for pair in pairs),
        "compiled_during_timed_fits": sum(pair[0]["compiled_during_fit"]
                                          + pair[1]["compiled_during_fit"] for pair in pairs),
    }


def _accuracy_text(values):
    return "/".join(f"{100 * value:.2f}" for value in values)


def markdown(report):
    lines = [
        "| solver | data | old median s | new median s | ratio new/old (of medians) | "
        "median paired ratio | accuracy % old / new | predictions agree | peak RSS MiB "
        "old / new (before the fit) |",
        "|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        same = "" if row["accuracy_equal"] else " (differ)"
        lines.append(
            f"| {row['solver']} | {row['data']} | {row['old_median_seconds']:.2f} | "
            f"{row['new_median_seconds']:.2f} | {row['ratio_of_medians']:.3f} | "
            f"{row['median_paired_ratio']:.3f} | {_accuracy_text(row['old_accuracy'])} / "
            f"{_accuracy_text(row['new_accuracy'])}{same} | "
            f"{100 * row['prediction_agreement']:.2f}% | {row['old_peak_rss_mib']:.0f} / "
            f"{row['new_peak_rss_mib']:.0f} ({row['old_peak_rss_before_fit_mib']:.0f} / "
            f"{row['new_peak_rss_before_fit_mib']:.0f}) |")
    machine = report["machine"]
    trees = report["trees"]

    def tree_line(label):
        tree = trees[label]
        changes = tree["uncommitted_changes_in_stochsvm"]
        extra = f" + {changes} uncommitted changes under stochsvm/" if changes else ""
        sha1 = tree.get("measured_sources_sha1", tree["sources_sha1"])
        copied = ", copied at the start" if "measured_copy" in tree else ""
        return (f"{label}: `{tree['path']}` at {tree['commit'][:12]}{extra} "
                f"(sources sha1 {sha1[:12]}{copied})")

    compiled = sum(row["compiled_during_timed_fits"] for row in report["rows"])
    lines += [
        "",
        f"{report['repeats']} alternating old/new pairs per solver, each fit in a fresh "
        f"process, warm numba caches (numba compilations during the timed fits: {compiled}); "
        f"defaults with random_state={RANDOM_STATE}; mode {report['mode']}.",
        tree_line("old") + "; " + tree_line("new") + ".",
        f"{machine['cpu_model']}, {machine['usable_cores']} usable cores, one thread per "
        f"worker (OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS=1), numpy {machine['numpy']}, numba "
        f"{machine['numba']}; load average {report['load_before'][0]:.1f} before, "
        f"{report['load_after'][0]:.1f} after; wall clock {report['wall_seconds'] / 60:.1f} "
        "min."]
    return "\n".join(lines)


def plot(report, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    figure, axes = plt.subplots(1, len(rows), figsize=(3.2 * len(rows), 3.6), squeeze=False)
    for axis, row in zip(axes[0], rows):
        for position, (label, color) in enumerate((("old", "tab:gray"), ("new", "tab:blue"))):
            times = row[f"{label}_seconds"]
            offsets = [position + 0.08 * (i - (len(times) - 1) / 2) for i in range(len(times))]
            axis.scatter(offsets, times, color=color, alpha=0.7, s=22, zorder=3)
            median = row[f"{label}_median_seconds"]
            axis.hlines(median, position - 0.3, position + 0.3, color=color, linewidth=2,
                        zorder=2)
        for old_time, new_time, i in zip(row["old_seconds"], row["new_seconds"],
                                         range(len(row["old_seconds"]))):
            shift = 0.08 * (i - (len(row["old_seconds"]) - 1) / 2)
            axis.plot([shift, 1 + shift], [old_time, new_time], color="0.8", linewidth=0.8,
                      zorder=1)
        axis.set_xticks([0, 1], ["old", "new"])
        axis.set_xlim(-0.6, 1.6)
        axis.set_ylim(bottom=0, top=1.15 * max(row["old_seconds"] + row["new_seconds"]))
        axis.set_title(f"{row['solver']}\n{row['data']}\nnew/old {row['ratio_of_medians']:.2f}",
                       fontsize=8)
        axis.set_ylabel("fit seconds")
        axis.grid(axis="y", alpha=0.3)
    figure.suptitle(f"Fit time before / after the restructuring ({report['repeats']} "
                    "alternating pairs; bars = medians, lines join pairs)", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def snapshot(tree, destination):
    """Copy ``tree/stochsvm`` (sources and package data, no ``__pycache__``) to
    ``destination/stochsvm``; return ``destination``."""
    destination = Path(destination)
    shutil.copytree(Path(tree) / "stochsvm", destination / "stochsvm",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    return destination


def run(old, new, repeats, quick, out_dir, in_place=False, solvers=None, log=print):
    """Generate the data, warm both trees, time ``repeats`` alternating pairs per solver and
    write ``restructuring_speed[_quick].{json,md,png}`` into ``out_dir``; ``solvers``: a
    subset of :data:`SOLVERS` (default: all four)."""
    selected = {name: SOLVERS[name] for name in (solvers or SOLVERS)}
    started = time.perf_counter()
    started_at = datetime.datetime.now().isoformat(timespec="seconds")
    mode = "quick" if quick else "full"
    sources = {"old": Path(old).resolve(), "new": Path(new).resolve()}
    for label, tree in sources.items():
        if not (tree / "stochsvm" / "__init__.py").is_file():
            raise SystemExit(f"--{label} {tree} holds no stochsvm/ package")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="stochsvm-restructuring-") as directory:
        descriptions = {label: tree_description(tree) for label, tree in sources.items()}
        if in_place:
            trees = dict(sources)
        else:
            trees = {label: snapshot(tree, Path(directory) / label)
                     for label, tree in sources.items()}
            for label, tree in trees.items():
                descriptions[label]["measured_copy"] = str(tree)
                descriptions[label]["measured_sources_sha1"] = tree_description(tree)[
                    "sources_sha1"]
        problems = make_problems_in_child(mode, directory)
        log(f"data written to {directory} ({time.perf_counter() - started:.1f} s)")
        warmup = []
        for solver, entry in selected.items():
            for label in ("old", "new"):
                record = run_worker(trees[label], solver, problems[entry["problem"]]["path"],
                                    directory)
                record.update(label=label, phase="warm-up")
                warmup.append(record)
                log(f"warm-up {solver:16s} {label}: fit {record['fit_seconds']:7.2f} s, "
                    f"{record['compiled_during_fit']} compilations, accuracy "
                    f"{record['accuracy']:.4f}")
        pairs = {solver: [] for solver in selected}
        for repeat in range(repeats):
            for solver, entry in selected.items():
                pair = []
                for label in ("old", "new"):
                    record = run_worker(trees[label], solver,
                                        problems[entry["problem"]]["path"], directory)
                    record.update(label=label, phase="timed", repeat=repeat)
                    pair.append(record)
                pairs[solver].append(pair)
                log(f"repeat {repeat + 1}/{repeats} {solver:16s} old "
                    f"{pair[0]['fit_seconds']:7.2f} s, new {pair[1]['fit_seconds']:7.2f} s "
                    f"(load {os.getloadavg()[0]:.1f})")
    rows = [summarize(solver, problems[entry["problem"]], pairs[solver])
            for solver, entry in selected.items()]
    for records in [warmup] + [pair for solver_pairs in pairs.values() for pair in solver_pairs]:
        for record in records:
            record.pop("predictions", None)
    report = {
        "benchmark": "restructuring_speed", "mode": mode, "repeats": repeats,
        "started_at": started_at, "command": " ".join([Path(sys.executable).name] + sys.argv),
        "trees": descriptions, "in_place": in_place,
        "machine": machine_info(warmup[0]["versions"]), "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "problems": {name: {key: value for key, value in entry.items() if key != "path"}
                     for name, entry in problems.items()},
        "solvers": {solver: {**entry, "parameters": {"random_state": RANDOM_STATE}}
                    for solver, entry in selected.items()},
        "rows": rows, "warmup": warmup,
        "timed": {solver: [record for pair in solver_pairs for record in pair]
                  for solver, solver_pairs in pairs.items()},
    }
    report["wall_seconds"] = time.perf_counter() - started
    text = markdown(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "restructuring_speed" + ("_quick" if quick else "")
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
    (out / f"{stem}.md").write_text("# Fit time before / after the restructuring\n\n"
                                    + text + "\n")
    plot(report, out / f"{stem}.png")
    log(text)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="source tree holding the old stochsvm/")
    parser.add_argument("--new", type=Path, default=REPOSITORY,
                        help="source tree holding the new stochsvm/ (default: this repository)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed old/new pairs per solver (default 5)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes / 10, *_quick outputs (a smoke run)")
    parser.add_argument("--solvers", nargs="+", choices=tuple(SOLVERS), default=None,
                        help="a subset of the four solvers (default: all)")
    parser.add_argument("--in-place", action="store_true",
                        help="measure the trees where they are (default: copies of their "
                             "stochsvm/ made at the start)")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "benchmarks" / "results",
                        help="output folder (default: benchmarks/results)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--make-data", choices=tuple(SIZES), help=argparse.SUPPRESS)
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--solver", choices=tuple(SOLVERS), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.make_data:
        return make_problems(arguments.make_data, arguments.data)
    if arguments.worker:
        record = worker(arguments.tree, arguments.solver, arguments.data)
        print(RECORD_PREFIX + json.dumps(record), flush=True)
        return record
    if arguments.old is None:
        parser.error("--old PATH is required (a tree holding the old stochsvm/ package)")
    if arguments.repeats < 1:
        parser.error("--repeats must be at least 1")
    return run(arguments.old, arguments.new, arguments.repeats, arguments.quick, arguments.out,
               in_place=arguments.in_place, solvers=arguments.solvers)


if __name__ == "__main__":
    main()
