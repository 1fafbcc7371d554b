"""Command line interface: ``stochsvm train|predict|evaluate|solvers|datasets|demo``.

Every error prints one line ``error: ...`` to stderr and exits with status 1 (2 for usage
errors reported by click); no traceback is ever shown.
"""

import ast
import os
import sys
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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stochsvm", message="%(version)s")
def main():
    """Stochastic SVM solvers: train, predict, evaluate, list solvers and datasets."""


@main.command()
@click.argument("data")
@click.option("--solver", default="SADMMClassifier", show_default=True, help="Registry name.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Estimator parameter (repeatable), value parsed as a Python literal.")
@click.option("--out", type=click.Path(dir_okay=False), help="Write the model file here.")
@click.option("--test", "test_data", help="Test data (file or dataset name): print accuracy.")
@click.option("--semi-supervised", is_flag=True, help="Rows labeled UNLABELED_LABEL are unlabeled.")
@click.option("--unlabeled-label", type=float, default=-1.0, show_default=True)
@_guard
def train(data, solver, params, out, test_data, semi_supervised, unlabeled_label):
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
        y = np.where(y == unlabeled_label, -1, y)
    elif entry.problem == "semi-supervised":
        raise _Failure(f"{entry.name} needs --semi-supervised")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            estimator.fit(X, y)
        except (ValueError, TypeError) as error:
            raise _Failure(f"{entry.name}: {str(error).splitlines()[0]}") from None
    click.echo(f"trained {entry.name} on {X.shape[0]} samples, {X.shape[1]} features")
    if test_data:
        X_test, y_test = _load_data(test_data, n_features=X.shape[1])
        click.echo(f"test accuracy: {_accuracy(estimator, X_test, y_test):.4f}")
    if out:
        model_io.save(estimator, out)
        click.echo(f"model written to {out}")


def _accuracy(estimator, X, y):
    """Accuracy on the rows of ``y``; semi-supervised solvers ignore unlabeled (-1) rows."""
    keep = np.ones(y.shape[0], dtype=bool)
    if registry.SOLVERS[registry.name_of(estimator)].problem == "semi-supervised":
        keep = y != -1
    return float(np.mean(estimator.predict(X[keep]) == y[keep]))


def _load_model(path):
    if not os.path.exists(path):
        raise _Failure(f"{path}: no such model file")
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
    header = f"{'name':<26} {'problem':<16} {'losses':<20} {'penalties':<22} paper"
    click.echo(header)
    for entry in registry.SOLVERS.values():
        click.echo(f"{entry.name:<26} {entry.problem:<16} {','.join(entry.losses):<20} "
                   f"{','.join(entry.penalties):<22} {entry.paper}")


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
@_guard
def demo():
    """Train the headline solvers and scikit-learn peers on bundled data; print a table."""
    from .demo import run_demo
    run_demo(print_function=click.echo)


if __name__ == "__main__":  # pragma: no cover
    main()
