"""Command line interface: ``stochsvm train|predict|evaluate|solvers|datasets|bench|reproduce|demo``.

Every error prints one line ``error: ...`` to stderr and exits with status 1 (2 for usage
errors such as a missing argument or an unknown option); no traceback is ever shown.
"""

import ast
import importlib
import inspect
import os
import sys
import time
import warnings

import click
import numpy as np

from . import io as model_io
from . import registry


class _Failure(click.ClickException):
    def show(self, file=None):
        click.echo(f"error: {self.format_message()}", err=True)


def _load_data(source, n_features=None):
    """LIBSVM file path or dataset registry name -> (X, y)."""
    from .datasets import load_libsvm
    from .datasets.registry import DATASETS, load_dataset
    if os.path.exists(source):
        return load_libsvm(source, n_features=n_features)
    if source in DATASETS:
        return load_dataset(source)
    raise _Failure(f"{source}: no such file and not a registered dataset "
                   f"(see `stochsvm datasets list`)")


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
@click.option("--solver", default="SADMMClassifier", show_default=True, help="Registry name.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Estimator parameter (repeatable), value parsed as a Python literal.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the model file here.")
@click.option("--test", "test_data", help="Test data (file or dataset name): print accuracy.")
@click.option("--semi-supervised", is_flag=True, help="Rows labeled UNLABELED_LABEL are unlabeled.")
@click.option("--unlabeled-label", type=float, default=-1.0, show_default=True)
@click.option("--progress/--no-progress", default=None,
              help="A status line per epoch/iteration on stderr (default: when it is a "
                   "terminal).")
@_guard
def train(data, solver, params, out, test_data, semi_supervised, unlabeled_label, progress):
    """Fit SOLVER on DATA (a LIBSVM file or a registered dataset name)."""
    entry = registry.get_solver(solver)
    cls = entry.load()
    parameters = _parse_params(params)
    try:
        estimator = cls(**parameters)
    except TypeError as error:
        raise _Failure(f"bad parameter for {entry.name}: {error}") from None
    X, y = _load_data(data)
    if semi_supervised:
        if entry.problem != "semi-supervised":
            raise _Failure(f"{entry.name} is not a semi-supervised solver")
        labeled = y != unlabeled_label
        if unlabeled_label != -1 and np.any(y[labeled] == -1):
            # scikit-learn marks unlabeled samples with -1: a class -1 would silently vanish
            raise _Failure("class label -1 is the mark of unlabeled samples in semi-supervised "
                           "training; relabel that class (for example to 0) or, if -1 marks "
                           "the unlabeled rows, use --unlabeled-label -1")
        y = np.where(labeled, y, -1)
    elif entry.problem == "semi-supervised":
        raise _Failure(f"{entry.name} needs --semi-supervised")
    if progress is None:
        progress = click.get_text_stream("stderr").isatty()
    status = _ProgressLine(entry.name) if progress else None
    if status is not None and "callback" in estimator.get_params() \
            and estimator.get_params()["callback"] is None:
        estimator.set_params(callback=status)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            estimator.fit(X, y)
        except (ValueError, TypeError) as error:
            raise _Failure(f"{entry.name}: {str(error).splitlines()[0]}") from None
        finally:
            if status is not None:
                status.close()
    if status is not None:
        estimator.set_params(callback=None)  # the saved model holds no callable
    click.echo(f"trained {entry.name} on {X.shape[0]} samples, {X.shape[1]} features")
    if test_data:
        X_test, y_test = _load_data(test_data, n_features=X.shape[1])
        click.echo(f"test accuracy: {_accuracy(estimator, X_test, y_test):.4f}")
    if out:
        model_io.save(estimator, out)
        click.echo(f"model written to {out}")


class _ProgressLine:
    """Training callback that rewrites one status line on stderr per history record."""

    def __init__(self, name):
        self.name, self.count = name, 0

    def __call__(self, record):
        self.count += 1
        parts = [f"{self.name}: record {self.count}"]
        for key in ("iteration", "samples_seen", "objective", "running_objective", "seconds"):
            value = record.get(key) if isinstance(record, dict) else None
            if isinstance(value, (int, float, np.integer, np.floating)):
                parts.append(f"{key} {value:.4g}" if isinstance(value, (float, np.floating))
                             else f"{key} {value}")
        click.echo("\r" + ", ".join(parts) + "   ", err=True, nl=False)
        return None

    def close(self):
        if self.count:
            click.echo("", err=True)


def _accuracy(estimator, X, y):
    """Accuracy on the rows of ``y``; semi-supervised solvers ignore unlabeled (-1) rows."""
    keep = np.ones(y.shape[0], dtype=bool)
    if registry.SOLVERS[registry.name_of(estimator)].problem == "semi-supervised":
        keep = y != -1
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
@click.option("--out", type=click.Path(dir_okay=False), help="Write one prediction per line.")
@_guard
def predict(model, data, out):
    """Predict DATA with a saved MODEL."""
    estimator = _load_model(model)
    X, _ = _load_data(data, n_features=_features_of(estimator))
    predictions = estimator.predict(X)
    text = "\n".join(f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)
                     for value in predictions) + "\n"
    if out:
        with open(out, "w") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("model")
@click.argument("data")
@_guard
def evaluate(model, data):
    """Print the accuracy of a saved MODEL on labeled DATA."""
    estimator = _load_model(model)
    X, y = _load_data(data, n_features=_features_of(estimator))
    click.echo(f"accuracy: {_accuracy(estimator, X, y):.4f}  ({X.shape[0]} samples)")


@main.command()
def solvers():
    """Table of registered solvers."""
    rows = [("name", "problem", "losses", "penalties", "paper")]
    rows += [(entry.name, entry.problem, ", ".join(entry.losses), ", ".join(entry.penalties),
              entry.paper) for entry in registry.SOLVERS.values()]
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths)]
        click.echo("  ".join(cells + [row[4]]))


@main.group()
def datasets():
    """Public datasets of the papers: list, fetch, info."""


@datasets.command("list")
def datasets_list():
    """List registered datasets."""
    from .datasets.registry import DATASETS
    for entry in DATASETS.values():
        click.echo(f"{entry.name:<14} {entry.task:<11} {entry.url}")


@datasets.command("fetch")
@click.argument("name")
@click.option("--data-home", type=click.Path(file_okay=False), default=None)
@_guard
def datasets_fetch(name, data_home):
    """Download NAME into the cache (once) and print its path."""
    from .datasets.registry import fetch
    click.echo(str(fetch(name, data_home=data_home)))


@datasets.command("info")
@click.argument("name")
@_guard
def datasets_info(name):
    """Show a dataset's registry entry."""
    from .datasets.registry import get_dataset
    entry = get_dataset(name)
    for field in ("name", "task", "format", "url", "sha256", "size", "description"):
        click.echo(f"{field}: {getattr(entry, field)}")


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
    from .bench.compare import compare, peer_method, solver_method, summary_lines

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
@_guard
def demo():
    """Train the headline solvers and scikit-learn peers on bundled data; print a table."""
    from .demo import run_demo
    run_demo(print_function=click.echo)


if __name__ == "__main__":  # pragma: no cover
    main()
