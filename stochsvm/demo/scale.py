r"""The default demo: the comparisons where size matters, each against the peers a user would
otherwise pick.

``python -m stochsvm`` (or ``stochsvm demo``) runs three comparisons in about a minute on
two cores, prints one table (:mod:`stochsvm.demo.report`) and writes
``stochsvm-demo.png``:

* **kernel** -- :class:`~stochsvm.SCSKernelSVC` (defaults) against scikit-learn's ``SVC``
  (defaults), ``Nystroem + LinearSVC`` and ``RBFSampler + SGDClassifier`` (defaults, with the
  rbf width of ``SVC``'s ``gamma="scale"``) on generated data with a nonlinear boundary
  (:func:`stochsvm.bench.scs.generated_datasets`: ``make_classification`` with 10 features and
  two clusters per class), 100000 training and 10000 test samples;
* **semi-supervised** -- :class:`~stochsvm.TSGS3VM` (defaults) against
  ``LabelSpreading(kernel="knn")`` and ``SVC`` on the labeled samples alone, with 100 labels
  (10 a class) among 20000 training samples of ten classes: Fashion-MNIST when its files are
  installed (:func:`stochsvm.datasets.load_fashion_mnist`), generated clusters of ten classes
  (:func:`stochsvm.bench.data.generated_clusters`) otherwise;
* **linear** -- ``SADMMClassifier(penalty="l1")`` and :class:`~stochsvm.S3GDClassifier`
  (defaults) against ``SGDClassifier`` (defaults, and with ``penalty="l1"``) and
  ``LinearSVC`` (defaults) on generated sparse text (:func:`stochsvm.bench.data.make_sparse_text`,
  CSR, 100000 documents x 100000 features), with the number of nonzero coefficients of each
  model; and, when dask is installed, the same SADMM model trained on a local Dask cluster of
  two single-threaded workers (:mod:`stochsvm.distributed`), started in a thread while the
  last forked fit runs.

How it measures
---------------
* Every fit but the Dask one runs in its own forked process
  (:func:`stochsvm.bench.harness.run_tasks`), ``workers`` at a time with one BLAS thread each,
  and is killed when its fit and test prediction together pass ``time_limit`` seconds; its
  row then says so instead of showing a number.
* Seconds are the wall-clock seconds of ``fit`` alone.
* Memory is the peak resident memory that the fit's process added over what it held at its
  start: everything the fit allocated (NumPy arrays, the compiled loops' arrays, LIBSVM's and
  LIBLINEAR's own copies and caches), but not the training data, which the forked process
  shares with its parent. For the Dask row it is the sum of that number over the client and
  the two workers, the data having been moved to the workers before the fit.
* The package's solvers are first fitted on a few rows in this process, so no row includes
  numba's compilation (done once on the very first run, then cached on disk).

Where it lives
--------------
This module holds the settings and the whole run. Each task builds its
:class:`~stochsvm.demo.comparisons.Comparison` in its own module
(:mod:`~stochsvm.demo.kernel`, :mod:`~stochsvm.demo.semi_supervised`,
:mod:`~stochsvm.demo.linear`); :mod:`~stochsvm.demo.distributed` trains the Dask row;
:mod:`~stochsvm.demo.comparisons` fits the models into table rows,
:mod:`~stochsvm.demo.progress` draws the progress bar and :mod:`~stochsvm.demo.report`
prints the table and draws the figure.
"""

from __future__ import annotations

import os
import textwrap
import time
from dataclasses import dataclass

from .comparisons import run_comparisons, warm_up
from .distributed import ClusterStarter, dask_installed, dask_row
from .kernel import kernel_comparison
from .linear import linear_comparison
from .progress import ProgressBar
from .semi_supervised import semi_supervised_comparison

__all__ = ["DemoSettings", "run_scale_demo", "write_record"]


@dataclass(frozen=True)
class DemoSettings:
    """Sizes and limits of the default demo; the defaults are the README's main job.

    Attributes
    ----------
    kernel_samples : int
        Training samples of the kernel comparison (its test set has 10000 more).
    semi_supervised_samples : int
        Training samples of the semi-supervised comparison, ``n_labeled`` of them labeled.
    n_labeled : int
        Labeled training samples of the semi-supervised comparison.
    semi_supervised_test_samples : int
        Test samples of the generated clusters (Fashion-MNIST keeps its official test split).
    text_samples, text_test_samples, text_features, tokens_per_document : int
        Training documents, test documents, features (vocabulary) and mean tokens per
        document of the generated sparse text.
    time_limit : float
        Seconds after which a fit (with its test prediction) is killed.
    workers : int
        Fits run at a time, each in its own process with one BLAS thread.
    use_fashion_mnist : bool
        Use Fashion-MNIST for the semi-supervised comparison when its files are installed.
    use_dask : bool
        Add the row trained on a local Dask cluster when dask is installed.
    dask_workers : int
        Worker processes of that cluster, one thread each.
    seed : int
        Seed of every estimator, of the semi-supervised training subset and label split, and
        of the generated clusters and text (the kernel comparison's data are fixed).
    """

    kernel_samples: int = 100_000
    semi_supervised_samples: int = 20_000
    n_labeled: int = 100
    semi_supervised_test_samples: int = 10_000
    text_samples: int = 100_000
    text_test_samples: int = 20_000
    text_features: int = 100_000
    tokens_per_document: int = 50
    time_limit: float = 25.0
    workers: int = 2
    use_fashion_mnist: bool = True
    use_dask: bool = True
    dask_workers: int = 2
    seed: int = 0


def _print_notes(notes, width, print_function):
    """Print each note wrapped at ``width`` characters, its later lines indented."""
    for note in notes:
        for line in textwrap.wrap(note, width, subsequent_indent="  "):
            print_function(line)


def run_scale_demo(settings=None, print_function=print, figure_path="stochsvm-demo.png",
                   progress=True):
    """Run the three comparisons (and the Dask row), print the table, write the figure.

    Parameters
    ----------
    settings : DemoSettings or None
        Sizes and limits; None for the defaults (the README's main job).
    print_function : callable, default=print
        Receives each line of output.
    figure_path : str or None, default="stochsvm-demo.png"
        Where to write the figure (skipped when None or without matplotlib).
    progress : bool, default=True
        Draw a progress bar on stderr while it runs.

    Returns
    -------
    rows : list of dict
        One per model: ``task``, ``model``, ``origin``, ``status``, ``accuracy``, ``seconds``,
        ``memory_bytes``, ``speed_up`` and the other fields of :func:`run_comparisons`.
    """
    from . import report

    settings = settings or DemoSettings()
    started = time.perf_counter()
    use_dask = settings.use_dask and dask_installed()
    print_function(
        "stochsvm demo: three comparisons where size matters, each model against the peers a "
        f"user would otherwise pick ({settings.workers} fit(s) at a time, each killed after "
        f"{settings.time_limit:.0f} s; `--quick` runs the 10-second version on small data).")
    print_function("note: numba compiles the solvers on their very first run (several seconds, "
                   "then cached on disk); that happens before any timing and is in no row.")
    notes = []
    with ProgressBar(total=5, enabled=progress) as bar:
        bar.step("kernel: generating the data", done=0)
        comparisons = [kernel_comparison(settings.kernel_samples, settings.seed)]
        bar.step("semi-supervised: loading the data")
        comparisons.append(semi_supervised_comparison(
            settings.semi_supervised_samples, settings.n_labeled,
            settings.semi_supervised_test_samples, settings.use_fashion_mnist, settings.seed))
        bar.step("linear: generating the sparse text")
        comparisons.append(linear_comparison(
            settings.text_samples, settings.text_test_samples, settings.text_features,
            settings.tokens_per_document, settings.seed))
        n_fits = sum(len(comparison.methods) for comparison in comparisons)
        bar.set_total(4 + n_fits + use_dask)
        bar.step("loading the compiled solvers")
        warm_up_seconds = warm_up(comparisons)
        bar.step(f"fitting the models, {settings.workers} at a time")
        starter = ClusterStarter(settings.dask_workers) if use_dask else None
        finished = []

        def on_finished(message):
            bar.step()
            finished.append(message)
            # every fit has been forked once fewer than `workers` remain: a core is free
            if starter is not None and len(finished) > n_fits - settings.workers:
                starter.start()

        rows = run_comparisons(comparisons, settings.time_limit, settings.workers,
                               settings.seed, on_finished=on_finished)
        if settings.use_dask and not use_dask:
            notes.append("Dask row skipped: dask is not installed "
                         "(pip install 'stochsvm[dask]').")
        elif use_dask:
            bar.step(f"linear: training on a local Dask cluster of {settings.dask_workers} "
                     "workers", done=0)
            row = dask_row(comparisons[-1], comparisons[-1].methods[0], settings.dask_workers,
                           settings.seed, starter)
            rows.append(row)
            if row["status"] == "ok":
                notes.append(f"Dask row: a local cluster of {settings.dask_workers} worker "
                             "processes of one thread; starting it, moving the training rows "
                             "to its workers and loading the solver there took "
                             f"{row['setup_seconds']:.1f} s, not counted in its seconds.")
            bar.step()
    report.add_speed_ups(rows)
    for row in rows:
        if row.get("unlabeled_term_kept") is False:
            notes.append(f"{row['model']}: its supervised check found no clear gain of the "
                         "unlabeled samples on held-out labels and returned the SVC on the "
                         "labels.")
        elif row.get("unlabeled_term_kept"):
            notes.append(f"{row['model']}: its supervised check kept a model of the unlabeled "
                         "samples (it beat the SVC on held-out labels).")
    print_function("")
    _print_notes((note for comparison in comparisons for note in comparison.notes),
                 report.WIDTH, print_function)
    print_function("")
    for line in report.format_table(rows, settings.time_limit, settings.workers):
        print_function(line)
    print_function("")
    print_function("where stochsvm wins and loses:")
    for line in report.verdicts(rows):
        print_function(f"  {line}")
    _print_notes(notes, report.WIDTH, print_function)
    if figure_path is not None:
        written = report.write_figure(rows, figure_path, settings.time_limit)
        print_function(f"figure: {written}" if written else
                       "figure skipped: install matplotlib (pip install 'stochsvm[bench]')")
    seconds = time.perf_counter() - started
    if figure_path is not None:
        stem = os.path.splitext(figure_path)[0]
        record = write_record(rows, settings, seconds, warm_up_seconds, stem + ".json")
        with open(stem + ".md", "w", encoding="utf-8") as handle:
            handle.write("\n".join(report.markdown_table(rows)) + "\n")
        print_function(f"table: {record} and {stem}.md")
    print_function(f"done in {seconds:.0f} s (of which {warm_up_seconds:.0f}"
                   " s loading or compiling the solvers).")
    return rows


def write_record(rows, settings, seconds, warm_up_seconds, path):
    """Write the demo's rows with its settings and the machine's load to a JSON file.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`run_scale_demo`.
    settings : DemoSettings
    seconds, warm_up_seconds : float
        Wall-clock seconds of the whole demo and of its warm-up.
    path : str

    Returns
    -------
    str
        ``path``.
    """
    import dataclasses
    import json
    import platform

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    record = {"settings": dataclasses.asdict(settings), "seconds": seconds,
              "warm_up_seconds": warm_up_seconds, "load_average_at_end": load,
              "processor_count": os.cpu_count(), "platform": platform.platform(),
              "rows": rows}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, default=float)
    return path
