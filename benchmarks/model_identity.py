"""Every fitted model of two trees side by side: the same numbers bit for bit?

A refactoring of the package's internals meant to keep every model is checked against the
revision before it. Each estimator class of ``stochsvm.__all__`` (defaults, ``random_state=0``
where it has one) is fitted by both trees, each in its own process, in the settings it accepts
(the others are recorded as skipped): dense float64, CSR, float32 input, sample weights, 3+
classes; TSGS3VM also with ``feature_dtype="float64"``, without its manifold term, with a
smaller anchor graph, on 10 classes of digits with 10 labels each (the multiclass check), on
two circles (where its supervised check keeps a trained candidate, not the ``SVC`` or the
anchor graph labels) and with ``safe_folds=None`` (the trained S3VM itself); TSGS3VM, FRS3VM,
SCSKernelSVC and RandomFourierFeatures also on ``array_api_strict`` arrays of its second
device under ``sklearn.config_context(array_api_dispatch=True)`` and on NumPy arrays through
the array-API path (``stochsvm._core.array_api.numpy_through_array_api``). Data of a few
hundred to 2000 rows (breast cancer, digits, generated; labels hidden by
``stochsvm.datasets.make_semi_supervised``). Compared exactly (equal type, dtype and shape,
NaN equal to NaN): the decision values (``transform`` for RandomFourierFeatures) and
predictions on held-out rows, and every fitted attribute (a public name ending in ``_``) that
is an array, a sparse matrix, a number, a string or a list, tuple or dict of those, less the
wall-clock ``seconds`` of ``history_``; other objects by their type name. A fit that fails
is recorded by its error; the same error in both trees counts as identical.

Command: ``python benchmarks/model_identity.py --before REV`` (a git worktree of ``REV`` in a
temporary folder, removed at the end, against the working tree or the tree ``--after PATH``;
``--only TSGS3VM,FRS3VM`` restricts the estimators). Results:
``benchmarks/results/model_identity.{json,md}`` (or ``--output DIR``); exit status 1 when a
model differs.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]

#: the estimators fitted on partly labeled data, and those that solve their problem exactly
SEMI_SUPERVISED = ("TSGS3VM", "FRS3VM", "BGS3VM", "CCCPTSVM", "LapSVM", "SelfLabelingTSVM")
EXACT = ("CCCPTSVM", "LapSVM", "SelfLabelingTSVM", "WolfeKernelSVC")
ARRAY_API = ("TSGS3VM", "FRS3VM", "SCSKernelSVC", "RandomFourierFeatures")
#: the keys of ``history_`` records that hold wall-clock times, not model numbers
TIMINGS = ("seconds",)


def _data():
    """The problems: name -> (X_train, y_train, X_test), every X dense float64."""
    from sklearn.datasets import (load_breast_cancer, load_digits, make_circles,
                                  make_classification, make_moons)
    from sklearn.preprocessing import StandardScaler

    from stochsvm.datasets import make_semi_supervised

    def hide(y, n_labeled):
        return make_semi_supervised(y, n_labeled=n_labeled, random_state=0)

    X, y = load_breast_cancer(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))
    X, y = StandardScaler().fit_transform(X)[order], y[order]
    X_digits, y_digits = load_digits(return_X_y=True)
    X_digits, X_four, y_four = X_digits / 16.0, X_digits[:800] / 16.0, y_digits[:800] % 4
    X_semi, y_semi = make_classification(2500, n_features=10, n_informative=4, random_state=0)
    X_moons, y_moons = make_moons(2500, noise=0.1, random_state=0)
    X_circles, y_circles = make_circles(800, factor=0.5, noise=0.05, random_state=0)
    return {
        "binary": (X[:400], y[:400], X[400:]),
        "binary small": (X[:250], y[:250], X[400:]),
        "multiclass": (X_four[:600], y_four[:600], X_four[600:]),
        "multiclass small": (X_four[:300], y_four[:300], X_four[600:]),
        "semi binary": (X_semi[:2000], hide(y_semi[:2000], 100), X_semi[2000:]),
        "semi binary small": (X_semi[:300], hide(y_semi[:300], 40), X_semi[2000:]),
        "semi multiclass": (X_four[:600], hide(y_four[:600], 100), X_four[600:]),
        "semi multiclass small": (X_four[:300], hide(y_four[:300], 40), X_four[600:]),
        "semi moons": (X_moons[:2000], hide(y_moons[:2000], 100), X_moons[2000:]),
        "semi circles": (X_circles[:600], hide(y_circles[:600], 60), X_circles[600:]),
        "semi digits": (X_digits[:1500], hide(y_digits[:1500], 100), X_digits[1500:]),
    }


def _stored(value):
    """``value`` as stored: an array (of any namespace) as a NumPy array, a sparse matrix as its
    arrays, numbers and strings as they are, lists, tuples and dicts item by item (less the
    wall-clock times of ``history_`` records), anything else by its type name."""
    import array_api_compat
    import scipy.sparse as sp

    if isinstance(value, np.ndarray):
        return value.copy()
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        return value
    if isinstance(value, (list, tuple)):
        return (list if isinstance(value, list) else tuple)(map(_stored, value))
    if isinstance(value, dict):
        return {key: _stored(item) for key, item in value.items() if key not in TIMINGS}
    if sp.issparse(value):
        value = value if value.format in ("csr", "csc") else value.tocsr()
        return {"format": value.format, "shape": value.shape, "data": value.data.copy(),
                "indices": value.indices.copy(), "indptr": value.indptr.copy()}
    if array_api_compat.is_array_api_obj(value):  # an array of another namespace
        namespace = array_api_compat.array_namespace(value)
        if array_api_compat.is_array_api_strict_namespace(namespace):
            value = namespace.asarray(value, device=namespace.Device("CPU_DEVICE"))
        return np.asarray(value)
    return f"<not stored: {type(value).__name__}>"


def _fitted_numbers(model, X_test):
    """The outputs on ``X_test`` and every public fitted attribute of ``model``."""
    methods = ("decision_function", "predict") if hasattr(model, "predict") else ("transform",)
    numbers = {f"{method}(X_test)": _stored(getattr(model, method)(X_test)) for method in methods}
    for name in dir(model):
        if name.endswith("_") and not name.startswith("_"):
            try:
                value = getattr(model, name)
            except Exception:  # a property of another kind of fit
                continue
            if not callable(value):
                numbers[name] = _stored(value)
    return numbers


def _settings(name, estimator):
    """The settings of ``estimator``: setting -> (problem, options) or a skip reason."""
    tags = estimator().__sklearn_tags__()
    problem = ("semi " if name in SEMI_SUPERVISED else "") + "binary" + (
        " small" if name in EXACT else "")
    # weights on the labeled rows only for SelfLabelingTSVM (it refuses unlabeled ones)
    plans = {"dense float64": {},
             "CSR": {"sparse": True} if tags.input_tags.sparse else "no sparse input",
             "float32": {"dtype": np.float32},
             "sample_weight": {"sample_weight": ("all", "labeled")[name == "SelfLabelingTSVM"]}
             if "sample_weight" in inspect.signature(estimator.fit).parameters
             else "fit takes no sample_weight",
             "multiclass": {"problem": problem.replace("binary", "multiclass")}
             if tags.classifier_tags is not None and tags.classifier_tags.multi_class
             else "not a multiclass classifier"}
    if name == "TSGS3VM":
        circles = {"problem": "semi circles", "parameters": {"gamma": 0.2}}
        plans.update({
            'feature_dtype="float64"': {"parameters": {"feature_dtype": "float64"}},
            "manifold_weight=0": {"parameters": {"manifold_weight": 0.0}},
            "manifold on moons, n_anchors=64, n_neighbors=3": {
                "problem": "semi moons", "parameters": {"n_anchors": 64, "n_neighbors": 3}},
            "10 classes of digits, 10 labels each": {"problem": "semi digits"},
            "circles, gamma=0.2": circles,
            "circles, gamma=0.2, manifold_weight=0": {
                **circles, "parameters": {"gamma": 0.2, "manifold_weight": 0.0}},
            "circles, gamma=0.2, array_api_strict device1": {**circles, "array_api": "device"}})
    if name in ARRAY_API:
        plans.update({"array_api_strict device1": {"array_api": "device"},
                      "NumPy through the array API": {"array_api": "numpy"}})
    if name == "TSGS3VM":
        # without the supervised check the model is the trained S3VM itself, never the SVC
        plans.update({f"safe_folds=None, {setting}": {
            **plan, "parameters": {**plan.get("parameters", {}), "safe_folds": None}}
            for setting, plan in plans.items() if not isinstance(plan, str)
            and "problem" not in plan or setting == "multiclass"})
    return {setting: f"skipped: {plan}" if isinstance(plan, str) else
            (plan.get("problem", problem), plan) for setting, plan in plans.items()}


def _fit_one(estimator, problem, options):
    """Fit ``estimator`` on ``problem`` with the setting's ``options``; its numbers."""
    import scipy.sparse as sp
    import sklearn

    X, y, X_test = problem
    parameters = dict(options.get("parameters", {}))
    if "random_state" in inspect.signature(estimator.__init__).parameters:
        parameters["random_state"] = 0
    model = estimator(**parameters)
    convert = sp.csr_matrix if options.get("sparse") else np.asarray
    X, X_test = (convert(part.astype(options.get("dtype", np.float64))) for part in (X, X_test))
    fit_options = {}
    if "sample_weight" in options:
        weights = np.linspace(0.5, 2.0, len(y))
        fit_options["sample_weight"] = weights if options["sample_weight"] == "all" \
            else np.where(y == -1, 1.0, weights)
    context = contextlib.nullcontext()
    if options.get("array_api") == "device":
        import array_api_strict

        device = array_api_strict.Device("device1")
        X, y, X_test = (array_api_strict.asarray(values, device=device)
                        for values in (X, y, X_test))
        context = sklearn.config_context(array_api_dispatch=True)
    elif options.get("array_api") == "numpy":
        from stochsvm._core.array_api import numpy_through_array_api

        context = numpy_through_array_api()
    with context:
        model.fit(X, y, **fit_options)
        return _fitted_numbers(model, X_test)


def fit_all(out_path, only):
    """Fit every (estimator, setting) with the ``stochsvm`` of ``PYTHONPATH``; pickle the
    numbers, and the seconds of each fit, to ``out_path`` (a file this script writes)."""
    from sklearn.base import BaseEstimator

    import stochsvm

    tree = Path(os.environ["PYTHONPATH"]).resolve()
    assert Path(stochsvm.__file__).resolve().is_relative_to(tree), (stochsvm.__file__, tree)
    warnings.simplefilter("ignore")
    problems = _data()
    fitted, seconds = {}, {}
    for name in stochsvm.__all__:
        estimator = getattr(stochsvm, name)
        if not (inspect.isclass(estimator) and issubclass(estimator, BaseEstimator)) \
                or (only and name not in only):
            continue
        for setting, plan in _settings(name, estimator).items():
            start = time.perf_counter()
            try:
                fitted[name, setting] = plan if isinstance(plan, str) else \
                    _fit_one(estimator, problems[plan[0]], plan[1])
            except Exception as error:
                fitted[name, setting] = f"failed: {type(error).__name__}: {error}"
            seconds[name, setting] = time.perf_counter() - start
            print(f"  {name:24} {setting:48} {seconds[name, setting]:7.2f} s", flush=True)
    with open(out_path, "wb") as handle:
        pickle.dump({"fitted": fitted, "seconds": seconds}, handle)


def _equal(first, second):
    """Exact equality of two stored values: types, dtypes, shapes, numbers (NaN == NaN)."""
    if type(first) is not type(second):
        return False
    if isinstance(first, np.ndarray):
        return first.dtype == second.dtype and first.shape == second.shape and \
            np.array_equal(first, second, equal_nan=first.dtype.kind in "fc")
    if isinstance(first, (list, tuple)):
        return len(first) == len(second) and all(map(_equal, first, second))
    if isinstance(first, dict):
        return list(first) == list(second) and all(map(_equal, first.values(), second.values()))
    return bool(first == second) or (first != first and second != second)  # NaN == NaN


def _pairs(first, second, path=""):
    """The numeric leaves of two stored values that line up: (path, float array, float array)."""
    if isinstance(first, dict) and isinstance(second, dict):
        for key in [key for key in first if key in second]:
            yield from _pairs(first[key], second[key], f"{path}[{key!r}]")
    elif isinstance(first, (list, tuple)) and isinstance(second, (list, tuple)):
        for index, items in enumerate(zip(first, second)):
            yield from _pairs(*items, f"{path}[{index}]")
    else:
        first, second = np.asarray(first), np.asarray(second)
        if first.shape == second.shape and first.dtype.kind in "biuf" \
                and second.dtype.kind in "biuf":
            yield path, first.astype(np.float64), second.astype(np.float64)


def _difference(first, second):
    """The largest absolute and relative difference of two stored values; what else differs."""
    absolute, relative, where = None, None, []
    for path, one, other in _pairs(first, second):
        same = (one == other) | (np.isnan(one) & np.isnan(other))
        where += [path] * (not same.all())
        gap = np.nan_to_num(np.where(same, 0.0, np.abs(one - other)), nan=np.inf, posinf=np.inf)
        if gap.size:  # a NaN against a number: an infinite difference
            ratio = np.divide(gap, np.maximum(np.abs(one), np.abs(other)), out=np.full_like(
                gap, np.inf), where=~same & (np.abs(one) + np.abs(other) < np.inf))
            absolute, relative = (max(value or 0.0, float(np.where(same, 0.0, array).max()))
                                  for value, array in ((absolute, gap), (relative, ratio)))
    kinds = {"type": type(first) is not type(second),
             "dtype": getattr(first, "dtype", None) != getattr(second, "dtype", None),
             "shape": getattr(first, "shape", None) != getattr(second, "shape", None),
             "no number differs": not absolute}
    return {"max_abs": absolute, "max_rel": relative, "where": where[:10],
            "also": [kind for kind, differs in kinds.items() if differs]}


def compare(before, after):
    """Per (estimator, setting): ``"identical"``, the skip reason, or the differing names."""
    results = {}
    for key in list(before) + [key for key in after if key not in before]:
        first, second = before.get(key, "missing"), after.get(key, "missing")
        if isinstance(first, str) or isinstance(second, str):
            same = first == second
            results[key] = {"result": first if same and first.startswith("skipped") else
                            "identical" if same else "different",
                            "before": first if isinstance(first, str) else "fitted",
                            "after": second if isinstance(second, str) else "fitted"}
            continue
        names = list(first) + [name for name in second if name not in first]
        different = {name: _difference(first.get(name), second.get(name)) for name in names
                     if name not in first or name not in second
                     or not _equal(first[name], second[name])}
        results[key] = {"result": "different" if different else "identical",
                        "differences": different}
    return results


def _fit_in(package_root, out_path, only):
    environment = dict(os.environ, PYTHONPATH=str(package_root), NUMBA_NUM_THREADS="2",
                       SCIPY_ARRAY_API="1")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(out_path),
               "--only", only]
    start = time.perf_counter()
    subprocess.run(command, check=True, env=environment, cwd=package_root)
    with open(out_path, "rb") as handle:
        return pickle.load(handle), time.perf_counter() - start


def _revision(tree, revision="HEAD"):
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", revision],
                          capture_output=True, text=True).stdout.strip()


def _describe(entry, width=300):
    """One line of the table: the result, the differing names and their differences."""
    if entry["result"] != "different":
        text = entry["result"] + (f" (fails in both: {entry['before'][8:]})" if
                                  entry.get("before", "").startswith("failed") else "")
    elif "differences" not in entry:
        text = f"different: before {entry['before']}, after {entry['after']}"
    else:
        parts = []
        for name, change in entry["differences"].items():
            where = change["where"][:1] + ["..."] * (len(change["where"]) > 1)
            parts.append(" ".join([name + ", ".join(where)] + [
                f"{label} {change[label]:.3g}" for label in ("max_abs", "max_rel")
                if change[label] is not None] + [f"({kind})" for kind in change["also"]]))
        text = "different: " + "; ".join(parts)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= width else text[:width - 3] + "..."


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="the revision before the change")
    parser.add_argument("--after", default=None, help="the tree after (the working tree)")
    parser.add_argument("--only", default="", help="estimators, comma-separated")
    parser.add_argument("--output", default=str(REPOSITORY / "benchmarks" / "results"))
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    only = arguments.only
    if arguments.worker:
        fit_all(arguments.worker, [name for name in only.split(",") if name])
        return 0
    start = time.perf_counter()
    after_tree = Path(arguments.after).resolve() if arguments.after else REPOSITORY
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "before"
        subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "add", "--detach",
                        str(tree), arguments.before], check=True, capture_output=True)
        try:
            print(f"before: {arguments.before} in {tree}", flush=True)
            before, before_seconds = _fit_in(tree, Path(folder) / "before.pickle", only)
        finally:
            subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force",
                            str(tree)], check=False, capture_output=True)
        print(f"after: {after_tree}", flush=True)
        after, after_seconds = _fit_in(after_tree, Path(folder) / "after.pickle", only)
    with np.errstate(invalid="ignore"):  # inf - inf in the differences
        results = compare(before["fitted"], after["fitted"])
    after_name = f"{after_tree if arguments.after else 'the working tree'} at " \
        f"{_revision(after_tree)}"
    different = [key for key, entry in results.items() if entry["result"] == "different"]
    command = " ".join(["python benchmarks/model_identity.py", "--before", arguments.before]
                       + ["--after", arguments.after] * bool(arguments.after)
                       + ["--only", arguments.only] * bool(arguments.only))
    before_name = f"{arguments.before} ({_revision(REPOSITORY, arguments.before)})"
    report = {"before": before_name, "after": after_name, "command": command,
              "seconds": {"before": round(before_seconds, 1), "after": round(after_seconds, 1),
                          "total": round(time.perf_counter() - start, 1)},
              "fits": len(results), "different": len(different),
              "results": [{"estimator": key[0], "setting": key[1], **entry,
                           "fit_seconds": round(after["seconds"].get(key, 0.0), 2)}
                          for key, entry in results.items()]}
    rows = [f"| {key[0]} | {key[1]} | {_describe(entry)} |" for key, entry in results.items()]
    text = (f"Models of `{before_name}` against {after_name} (`{command}`; each tree in "
            f"its own process, {report['seconds']['total']:.0f} s): {len(results)} "
            f"(estimator, setting) pairs, {len(different)} different.\n\n"
            "| estimator | setting | result |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    (out := Path(arguments.output)).mkdir(parents=True, exist_ok=True)
    (out / "model_identity.json").write_text(json.dumps(report, indent=1))
    (out / "model_identity.md").write_text(text)
    print(text)
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
