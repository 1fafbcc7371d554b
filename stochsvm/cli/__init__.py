"""Command line interface: ``stochsvm train|predict|evaluate|solvers|datasets|bench|reproduce|demo``.

Every error prints one line ``error: ...`` to stderr and exits with status 1 (2 for usage
errors such as a missing argument or an unknown option); no traceback is ever shown. Warnings
raised while a command runs (a solver stopping at ``max_iter``, say) are printed once each, as
``warning: Category: message`` lines on stderr, when the command succeeds.
"""

import ast
import contextlib
import importlib
import inspect
import logging
import os
import re
import sys
import time
import warnings

import click
import numpy as np

from .. import io as model_io
from .. import registry
from .progress import ProgressBar, format_label


class _Failure(click.ClickException):
    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def _data_path(source):
    """Path of a LIBSVM file, or of a registered dataset (downloaded once into the cache)."""
    from ..datasets.registry import DATASETS, fetch
    if os.path.exists(source):
        return source
    if source in DATASETS:
        entry = DATASETS[source]
        if entry.format != "libsvm":
            raise _Failure(f"dataset {source!r} is in {entry.format!r} format, not LIBSVM")
        return str(fetch(source))
    raise _Failure(f"{source}: no such file and not a registered dataset "
                   f"(see `stochsvm datasets list`)")


def _load_sources(sources, n_features=None, zero_based="auto", max_features=None):
    """Read LIBSVM files or registered datasets with one index base and one width.

    Returns ``([(X, y), ...], zero_based)``; a source without samples is an error.
    """
    from ..datasets.libsvm import MAX_FEATURES, load_libsvm_files
    paths = [_data_path(source) for source in sources]
    pairs, used_zero_based = load_libsvm_files(
        paths, n_features=n_features, zero_based=zero_based,
        max_features=MAX_FEATURES if max_features is None else max_features,
        return_zero_based=True)
    for source, (X, _) in zip(sources, pairs):
        if X.shape[0] == 0:
            raise _Failure(f"{source}: no samples (the file is empty or holds only comments)")
    return pairs, used_zero_based


def _load_data(source, n_features=None, zero_based="auto"):
    """LIBSVM file path or dataset registry name -> (X, y)."""
    [(X, y)], _ = _load_sources([source], n_features=n_features, zero_based=zero_based)
    return X, y


def _index_base(zero_based):
    """``--zero-based/--one-based`` (None when neither is given) -> ``zero_based`` argument."""
    return "auto" if zero_based is None else zero_based


def _zero_based_option(function):
    return click.option(
        "--zero-based/--one-based", "zero_based", default=None,
        help="Feature indices of the LIBSVM files count from 0 / from 1. Default: zero-based "
             "when a file holds index 0, else one-based (LIBSVM's convention); give "
             "--zero-based for zero-based files that may lack feature 0 (scikit-learn's "
             "dump_svmlight_file writes zero-based files by default).")(function)


def _warn(text):
    click.echo(f"warning: {text}", err=True)


@contextlib.contextmanager
def _warnings_shown_once():
    """Collect the warnings raised inside the block; when it succeeds, print each distinct
    one once as a ``warning: Category: message`` line on stderr.

    Messages that differ only in their numbers (one per epoch, per class...) count as one and
    the line says how many more there were. Deprecation, import and resource warnings stay
    hidden, as they are by Python's default filters.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                         ResourceWarning):
            warnings.simplefilter("ignore", category)
        yield
    groups = {}
    for warning in caught:
        text = " ".join(str(warning.message).split()) or warning.category.__name__
        key = (warning.category.__name__, re.sub(r"\d+(?:[.,]\d+)*(?:e[-+]?\d+)?", "#", text))
        groups.setdefault(key, []).append(text)
    for (category, _), texts in groups.items():
        others = len(set(texts)) - 1
        more = f" (and {others} more like it)" if others else ""
        _warn(f"{category}: {texts[0]}{more}")


def _parse_params(items):
    parameters = {}
    for item in items:
        key, separator, text = item.partition("=")
        if not separator or not key.isidentifier():
            raise _Failure(f"bad --param {item!r}: expected NAME=VALUE")
        try:
            parameters[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            parameters[key] = text  # a bare word is a string (e.g. penalty=l2)
    return parameters


def _guard(function):
    """Turn every exception of ``function`` into a one-line error."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyError as error:
            raise _Failure(str(error.args[0]) if error.args else "unknown key") from None
        except Exception as error:  # noqa: BLE001 - the CLI never shows a traceback
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise _Failure(message) from None
    return wrapper


def _last_line(text):
    """The last non-empty line of a traceback: the exception and its message."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"


def _one_line(text):
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


class _OneLineErrorGroup(click.Group):
    """A click group whose every failure -- usage errors included -- is one stderr line."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        if not standalone_mode:
            return super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                standalone_mode=False, **extra)
        try:
            result = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
        except click.UsageError as error:
            if type(error).__name__ == "NoArgsIsHelpError" and error.ctx is not None:
                # a bare group (``stochsvm``, ``stochsvm datasets``) asks for its help
                click.echo(error.ctx.get_help())
                sys.exit(0)
            where = f" (see `{error.ctx.command_path} --help`)" if error.ctx else ""
            click.echo(f"error: {_one_line(error.format_message())}{where}", err=True)
            sys.exit(error.exit_code)
        except click.ClickException as error:
            click.echo(f"error: {_one_line(error.format_message())}", err=True)
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("error: aborted", err=True)
            sys.exit(1)
        except Exception as error:  # noqa: BLE001 - the CLI never shows a traceback
            click.echo(f"error: {_one_line(error) or type(error).__name__}", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=_OneLineErrorGroup,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stochsvm", message="%(version)s")
def main():
    """Stochastic SVM solvers: train, predict, evaluate, list solvers and datasets, reproduce
    the papers' experiments."""


@main.command()
@click.argument("data")
@click.option("--solver", default="SADMMClassifier", show_default=True,
              help="Solver class name or alias, in any case (see `stochsvm solvers`).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Estimator parameter (repeatable), value parsed as a Python literal.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the model file here.")
@click.option("--test", "test_data",
              help="Test data (file or dataset name), read with DATA's index base and width: "
                   "print accuracy.")
@click.option("--semi-supervised", is_flag=True,
              help="Rows labeled UNLABELED_LABEL are unlabeled.")
@click.option("--unlabeled-label", type=float, default=None,
              help="Label of the unlabeled rows with --semi-supervised  [default: -1; labels "
                   "-1, 0 and 1 together need it given, as either -1 or 0 may mark them]")
@_zero_based_option
@click.option("--max-features", type=click.IntRange(min=1), default=None,
              help="Refuse data with more features than this (a stray huge index would "
                   "otherwise ask for gigabytes of weights)  [default: 2**26 = 67108864]")
@click.option("--progress/--no-progress", default=None,
              help="A progress bar on stderr: iterations or epochs against the solver's cap, "
                   "rate and time left, per one-vs-rest problem (default: when stderr is a "
                   "terminal).")
@click.option("--scheduler", metavar="ADDRESS", default=None,
              help="Train on a Dask cluster: DATA is then LIBSVM files, a glob pattern in "
                   "quotes ('shards/*.svm') read as one data set, each file by a worker at "
                   "the same path; ADDRESS is the scheduler's (tcp://host:8786), or local[:N] "
                   "for a cluster of N single-threaded worker processes on this machine "
                   "(default N: one per core). Needs the dask extra.")
@_guard
def train(data, solver, params, out, test_data, semi_supervised, unlabeled_label, zero_based,
          max_features, progress, scheduler):
    """Fit SOLVER on DATA (a LIBSVM file or a registered dataset name)."""
    entry = registry.get_solver(solver)
    cls = entry.load()
    parameters = _parse_params(params)
    try:
        estimator = cls(**parameters)
    except TypeError as error:
        raise _Failure(f"bad parameter for {entry.name}: {error}") from None
    if semi_supervised and entry.problem != "semi-supervised":
        raise _Failure(f"{entry.name} is not a semi-supervised solver")
    if not semi_supervised and entry.problem == "semi-supervised":
        raise _Failure(f"{entry.name} needs --semi-supervised")
    if scheduler is not None:
        return _train_on_cluster(entry, estimator, data, scheduler, out, test_data,
                                 semi_supervised, unlabeled_label, zero_based, max_features)
    with _warnings_shown_once():
        sources = [data] + ([test_data] if test_data else [])
        pairs, used_zero_based = _load_sources(sources, zero_based=_index_base(zero_based),
                                               max_features=max_features)
        X, y = pairs[0]
        if semi_supervised:
            y = _semi_supervised_labels(y, unlabeled_label, data)
        if progress is None:
            progress = click.get_text_stream("stderr").isatty()
        bar = None
        if progress and "callback" in estimator.get_params() \
                and estimator.get_params()["callback"] is None:
            bar = ProgressBar(entry, estimator, y)
            estimator.set_params(callback=bar)
            bar.start()
        try:
            estimator.fit(X, y)
            if bar is not None:
                bar.finish()
        except (ValueError, TypeError) as error:
            raise _Failure(f"{entry.name}: {str(error).splitlines()[0]}") from None
        finally:
            if bar is not None:
                bar.close()
                estimator.set_params(callback=None)  # the saved model holds no callable
        base = 0 if used_zero_based else 1
        click.echo(f"trained {entry.name} on {X.shape[0]} samples, {X.shape[1]} features "
                   f"(indices counted from {base})")
        if test_data:
            X_test, y_test = pairs[1]
            accuracy = _accuracy(estimator, X_test, y_test, test_data)
            click.echo(f"test accuracy: {accuracy:.4f}")
        if out:
            model_io.save(estimator, out)
            click.echo(f"model written to {out}")


def _semi_supervised_labels(y, unlabeled_label, source):
    """Labels with the unlabeled rows marked -1 (scikit-learn's convention)."""
    unlabeled_label = _unlabeled_label(set(np.unique(y).tolist()), unlabeled_label, source)
    return np.where(y != unlabeled_label, y, -1)


def _unlabeled_label(present, unlabeled_label, source):
    """The label that marks unlabeled rows, checked against the ``present`` labels."""
    if unlabeled_label is None:
        if present == {-1.0, 0.0, 1.0}:
            # scikit-learn marks unlabeled rows -1 (classes 0/1); SVMlight's transductive
            # files mark them 0 (classes -1/+1): guessing would train on the wrong rows
            raise _Failure(f"{source}: labels -1, 0 and 1 leave the unlabeled rows ambiguous: "
                           f"-1 marks them in scikit-learn's convention (classes 0 and 1), 0 "
                           f"in SVMlight's transductive files (classes -1 and +1); say which "
                           f"with --unlabeled-label -1 or --unlabeled-label 0")
        unlabeled_label = -1.0
    if unlabeled_label != -1 and -1 in present:
        # scikit-learn marks unlabeled samples with -1: a class -1 would silently vanish
        raise _Failure(f"class label -1 is the mark of unlabeled samples in semi-supervised "
                       f"training, so it cannot also be a class; relabel that class (to a "
                       f"value other than -1 and {format_label(unlabeled_label)}) or, if -1 "
                       f"marks the unlabeled rows, use --unlabeled-label -1")
    if unlabeled_label not in present:
        _warn(f"{source}: no row has the unlabeled label {format_label(unlabeled_label)}, so "
              f"every row is used as labeled (see --unlabeled-label)")
    return unlabeled_label


@contextlib.contextmanager
def _dask_client(scheduler):
    """A ``dask.distributed`` client of the cluster at ``scheduler`` (``local[:N]``: a new
    local cluster of N single-threaded worker processes, closed on exit)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise _Failure("--scheduler needs dask.distributed: pip install 'stochsvm[dask]'") \
            from None
    match = re.fullmatch(r"local(?::(\d+))?", scheduler)
    if match is None:
        try:
            client = Client(scheduler, timeout="30s")
        except OSError as error:
            raise _Failure(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
        with client:
            yield client
        return
    n_workers = int(match.group(1)) if match.group(1) else (os.cpu_count() or 1)
    if n_workers < 1:
        raise _Failure("--scheduler local:N needs N >= 1 workers")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "port in use, using another" and the like
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


def _train_on_cluster(entry, estimator, data, scheduler, out, test_data, semi_supervised,
                      unlabeled_label, zero_based, max_features):
    """``stochsvm train --scheduler``: the files of DATA read and trained on by the workers
    (see :mod:`stochsvm.distributed`); the model, an ordinary in-memory one, is saved here."""
    from ..datasets.libsvm import MAX_FEATURES
    from ..distributed import TRAINERS
    from ..distributed.files import expand_paths, read_libsvm_files

    if estimator._distributed_training is None:
        trainers = ", ".join(name for names in TRAINERS.values() for name in names)
        raise _Failure(f"{entry.name} does not train on a Dask cluster; solvers that do: "
                       f"{trainers}")
    paths = expand_paths(data)
    with _warnings_shown_once(), _dask_client(scheduler) as client:
        X, y, used_zero_based = read_libsvm_files(
            paths, zero_based=_index_base(zero_based),
            max_features=MAX_FEATURES if max_features is None else max_features,
            return_zero_based=True)
        if semi_supervised:
            import dask.array as da

            present = set(da.unique(y).compute().tolist())
            label = _unlabeled_label(present, unlabeled_label, data)
            y = da.where(y != label, y, -1)
        try:
            estimator.fit(X, y)
        except (ValueError, TypeError) as error:
            raise _Failure(f"{entry.name}: {str(error).splitlines()[0]}") from None
        n_workers = len(client.scheduler_info().get("workers", {}))
        base = 0 if used_zero_based else 1
        click.echo(f"trained {entry.name} on {X.shape[0]} samples, {X.shape[1]} features "
                   f"(indices counted from {base}) in {len(paths)} file(s), on a Dask cluster "
                   f"of {n_workers} worker(s)")
        if test_data:
            [(X_test, y_test)], _ = _load_sources([test_data], n_features=X.shape[1],
                                                  zero_based=used_zero_based)
            accuracy = _accuracy(estimator, X_test, y_test, test_data)
            click.echo(f"test accuracy: {accuracy:.4f}")
    if out:
        model_io.save(estimator, out)
        click.echo(f"model written to {out}")


def _accuracy(estimator, X, y, source="the test data"):
    """Accuracy on the rows of ``y``; semi-supervised solvers ignore unlabeled (-1) rows.

    A label the model has no class for (labels written 0/1 in one file and -1/+1 in the
    other, say) is an error, not a silently wrong accuracy.
    """
    keep = np.ones(y.shape[0], dtype=bool)
    if registry.SOLVERS[registry.name_of(estimator)].problem == "semi-supervised":
        keep = y != -1
    classes = np.asarray(estimator.classes_)
    unknown = np.setdiff1d(np.unique(y[keep]), classes)
    if unknown.size:
        def listing(values):
            shown = ", ".join(format_label(value) for value in values[:6])
            return shown + (", ..." if len(values) > 6 else "")
        raise _Failure(f"{source}: labels {listing(unknown)} are not classes of the model "
                       f"({listing(classes)}); were the labels written differently (for "
                       f"example 0/1 against -1/+1)? Relabel the data to the model's classes")
    if not keep.any():
        raise _Failure(f"{source}: no labeled row to score")
    return float(np.mean(estimator.predict(X[keep]) == y[keep]))


def _load_model(path):
    if not os.path.exists(path):
        raise _Failure(f"{path}: no such model file")
    if os.path.isdir(path):
        raise _Failure(f"{path}: is a folder, not a model file")
    return model_io.load(path)


def _features_of(model):
    return getattr(model, "n_features_in_", None)


@main.command()
@click.argument("model")
@click.argument("data")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the output to this file.")
@click.option("--decision-values", is_flag=True,
              help="Write decision values instead of labels: one column for a binary model "
                   "(positive for the larger of its two classes), one column per class "
                   "otherwise, classes in increasing order.")
@_zero_based_option
@_guard
def predict(model, data, out, decision_values, zero_based):
    """Predict DATA with a saved MODEL: one label per line, or with --decision-values one line
    of decision values per sample."""
    estimator = _load_model(model)
    with _warnings_shown_once():
        X, _ = _load_data(data, n_features=_features_of(estimator),
                          zero_based=_index_base(zero_based))
        if decision_values:
            values = np.asarray(estimator.decision_function(X), dtype=np.float64)
            rows = values.reshape(values.shape[0], -1).tolist()
            text = "".join(" ".join(repr(value) for value in row) + "\n" for row in rows)
        else:
            text = "".join(format_label(value) + "\n" for value in estimator.predict(X))
        if out:
            with open(out, "w") as handle:
                handle.write(text)
        else:
            click.echo(text, nl=False)


@main.command()
@click.argument("model")
@click.argument("data")
@_zero_based_option
@_guard
def evaluate(model, data, zero_based):
    """Print the accuracy of a saved MODEL on labeled DATA."""
    estimator = _load_model(model)
    with _warnings_shown_once():
        X, y = _load_data(data, n_features=_features_of(estimator),
                          zero_based=_index_base(zero_based))
        accuracy = _accuracy(estimator, X, y, data)
    click.echo(f"accuracy: {accuracy:.4f}  ({X.shape[0]} samples)")


@main.command()
def solvers():
    """Table of registered solvers; --solver takes the name or an alias, in any case."""
    rows = [("name", "aliases", "problem", "losses", "penalties", "paper")]
    rows += [(entry.name, ", ".join(entry.aliases), entry.problem, ", ".join(entry.losses),
              ", ".join(entry.penalties), entry.paper) for entry in registry.SOLVERS.values()]
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:5], widths)]
        click.echo("  ".join(cells + [row[5]]))


@main.group()
def datasets():
    """Public datasets of the papers: list, fetch, info."""


@datasets.command("list")
def datasets_list():
    """List registered datasets."""
    from ..datasets.registry import DATASETS
    for entry in DATASETS.values():
        click.echo(f"{entry.name:<14} {entry.task:<11} {entry.url}")


@datasets.command("fetch")
@click.argument("name")
@click.option("--data-home", type=click.Path(file_okay=False), default=None)
@_guard
def datasets_fetch(name, data_home):
    """Download NAME into the cache (once) and print its path; a bar on stderr shows the bytes
    received, the rate and the time left."""
    from tqdm import tqdm

    from ..datasets.registry import fetch

    bar = None

    def progress(received, total):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                       desc=name, file=sys.stderr, mininterval=0.2, leave=True)
        if total is not None and received > bar.total:
            bar.total = received  # the entry's size was approximate
        bar.update(received - bar.n)

    try:
        path = fetch(name, data_home=data_home, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    click.echo(str(path))


@datasets.command("info")
@click.argument("name")
@_guard
def datasets_info(name):
    """Show a dataset's registry entry."""
    from ..datasets.registry import get_dataset
    entry = get_dataset(name)
    for field in ("name", "task", "format", "url", "sha256", "size", "description"):
        value = getattr(entry, field)
        if field == "sha256" and value is None:
            value = ("not pinned: trust on first use (the first download's sha256 is recorded "
                     "in the cache and every later fetch is checked against it)")
        click.echo(f"{field}: {value}")


@main.command()
@click.argument("data")
@click.option("--test", "test_data",
              help="Test data (file or dataset name); default: a stratified 25% split of DATA.")
@click.option("--solver", "solver_names", multiple=True, default=("SADMMClassifier",),
              show_default=True, help="Registered solver (repeatable).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Parameter given to every --solver that has it (repeatable).")
@click.option("--peer", "peer_names", multiple=True,
              help="scikit-learn peer run side by side (repeatable): SGDClassifier, LinearSVC, "
                   "LogisticRegression, SVC.")
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs per method, with random_state 0, 1, ...")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per run (a run past it is stopped or killed).")
@click.option("--memory-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              help="MiB of memory a run may add.")
@click.option("--out", type=click.Path(file_okay=False), default="bench-results",
              show_default=True, help="Folder of bench.json, bench.csv and the figures.")
@_guard
def bench(data, test_data, solver_names, params, peer_names, seeds, time_limit, memory_limit,
          out):
    """Compare solvers and scikit-learn peers on DATA: accuracy, seconds, memory per seed."""
    from ..bench.compare import compare, peer_method, solver_method, summary_lines

    parameters = _parse_params(params)
    methods, accepted = [], set()
    for name in solver_names:
        entry = registry.get_solver(name)
        known = set(entry.load()().get_params())
        own = {key: value for key, value in parameters.items() if key in known}
        accepted |= set(own)
        try:
            methods.append(solver_method(name, own))
        except ValueError as error:
            raise _Failure(str(error)) from None
    unused = sorted(set(parameters) - accepted)
    if unused:
        raise _Failure(f"bad parameter: no --solver has {', '.join(unused)}")
    methods += [peer_method(name) for name in peer_names]
    X, y = _load_data(data)
    if test_data:
        X_test, y_test = _load_data(test_data, n_features=X.shape[1])
    else:
        from sklearn.model_selection import train_test_split
        try:
            X, X_test, y, y_test = train_test_split(X, y, test_size=0.25, random_state=0,
                                                    stratify=y)
        except ValueError as error:
            raise _Failure(f"cannot split {data} into train and test: {error}") from None
    records = compare(X, y, X_test, y_test, methods, seeds=range(seeds), time_limit=time_limit,
                      memory_limit=None if memory_limit is None else int(memory_limit * 2**20),
                      out_dir=out, dataset_name=os.path.basename(str(data)))
    for line in summary_lines(records):
        click.echo(line)
    click.echo(f"wrote {os.path.join(out, 'bench.json')}, bench.csv and figures")
    failed = {}
    for record in records:
        if record.get("status") == "failed":
            failed.setdefault(record["method"], _last_line(record.get("error", "")))
    for method, reason in failed.items():
        click.echo(f"{method} failed: {reason}", err=True)
    if failed:
        raise _Failure(f"{len(failed)} of {len(methods)} method(s) failed: "
                       f"{', '.join(failed)}")


def _bench_module(paper):
    """Import ``stochsvm.bench.<paper>``; a missing module is one clear error."""
    name = f"stochsvm.bench.{paper}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name in (name, "stochsvm.bench"):
            raise _Failure(f"reproduce {paper}: the benchmark module {name} is not part of "
                           f"this installation") from None
        raise _Failure(f"reproduce {paper}: {name} cannot be imported: {error}") from None
    except ImportError as error:
        raise _Failure(f"reproduce {paper}: {name} cannot be imported: {error}") from None
    if not callable(getattr(module, "run", None)):
        raise _Failure(f"reproduce {paper}: {name} has no run(quick, out_dir) function")
    return module


@main.command()
@click.argument("paper", metavar="PAPER",
                type=click.Choice(["sadmm", "s3gd", "scs", "tsgs3vm"]))
@click.option("--quick", is_flag=True, help="Small data, a few minutes (*_quick outputs).")
@click.option("--out", type=click.Path(file_okay=False), default="results", show_default=True,
              help="Folder of the JSON/CSV tables and PNG figures.")
@click.option("--smoke", is_flag=True, hidden=True,
              help="Seconds-long check of the pipeline on tiny data (tests).")
@_guard
def reproduce(paper, quick, out, smoke):
    """Re-run PAPER's experiments: tables (JSON/CSV/markdown) and figures (PNG) in --out."""
    module = _bench_module(paper)
    keywords = {}
    if smoke:
        if "smoke" not in inspect.signature(module.run).parameters:
            raise _Failure(f"reproduce {paper}: this benchmark has no smoke mode")
        keywords["smoke"] = True
    if "command" in inspect.signature(module.run).parameters:
        keywords["command"] = f"stochsvm reproduce {paper}" + (" --quick" if quick else "")
    began = time.time()
    os.makedirs(out, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module.run(quick, out, **keywords)
    written = sorted(name for name in os.listdir(out)
                     if os.path.getmtime(os.path.join(out, name)) >= began - 1.0)
    click.echo(f"reproduce {paper}: wrote {len(written)} files to {out}: {', '.join(written)}")


@main.command()
@click.option("--quick", is_flag=True,
              help="The 10-second version on scikit-learn's bundled breast-cancer and digits "
                   "data instead of the comparisons where size matters (about a minute).")
@click.option("--figure", "figure_path", default="stochsvm-demo.png", show_default=True,
              type=click.Path(dir_okay=False),
              help="Where to write the figure; the table goes beside it as JSON (same name, "
                   ".json).")
@click.option("--time-limit", type=click.FloatRange(min=1.0), default=None,
              help="Seconds after which a fit is killed and reported as such "
                   "[default: 25; not with --quick].")
@_guard
def demo(quick, figure_path, time_limit):
    """Train the headline solvers and the peers a user would otherwise pick; print a table
    and write a figure (see `python -m stochsvm`)."""
    from ..demo import DemoSettings, run_demo

    if quick and time_limit is not None:
        raise click.UsageError("--time-limit applies to the default demo, not to --quick")
    settings = None if time_limit is None else DemoSettings(time_limit=time_limit)
    run_demo(quick=quick, print_function=click.echo, figure_path=figure_path,
             settings=settings)

