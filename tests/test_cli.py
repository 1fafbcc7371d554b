"""End-to-end CLI: train -> save -> predict -> evaluate, and every error path."""

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file

from stochsvm import registry
from stochsvm.cli import main

from .reference import binary_breast_cancer


@pytest.fixture
def files(tmp_path):
    X, y = binary_breast_cancer()
    X = X[:, :10].copy()
    X[np.abs(X) < 0.5] = 0.0  # sparse-ish file
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight_file(X[:400], y[:400], str(train))
    dump_svmlight_file(X[400:], y[400:], str(test))
    return tmp_path, train, test


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def assert_one_line_error(result, fragment):
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_train_predict_evaluate(files):
    tmp_path, train, test = files
    model = tmp_path / "model.stochsvm"
    result = run("train", train, "--solver", "SADMMClassifier", "--param", "alpha=0.001",
                 "--param", "penalty=l2", "--param", "random_state=0", "--out", model,
                 "--test", test)
    assert result.exit_code == 0, result.output
    accuracy = float(result.output.split("test accuracy:")[1].split()[0])
    assert accuracy > 0.85
    result = run("evaluate", model, test)
    assert result.exit_code == 0 and f"accuracy: {accuracy:.4f}" in result.output
    predictions = tmp_path / "preds.txt"
    assert run("predict", model, test, "--out", predictions).exit_code == 0
    values = np.loadtxt(predictions)
    assert set(np.unique(values)) <= {-1.0, 1.0} and values.size == 169


def test_semi_supervised_requires_semi_solver(files):
    _, train, _ = files
    result = run("train", train, "--semi-supervised")
    assert_one_line_error(result, "not a semi-supervised solver")


def _semi_supervised_files(tmp_path, unlabeled="9"):
    """Labels 0/1 (a class -1 would collide with the unlabeled mark); two rows in three of the
    training file carry the ``unlabeled`` label."""
    X, y = binary_breast_cancer()
    y = (y > 0).astype(int)
    train, test = tmp_path / "semi_train.svm", tmp_path / "semi_test.svm"
    dump_svmlight_file(X[:400, :10], y[:400], str(train))
    dump_svmlight_file(X[400:, :10], y[400:], str(test))
    lines = train.read_text().splitlines()
    lines = [(unlabeled + line[line.index(" "):]) if i % 3 else line
             for i, line in enumerate(lines)]
    train.write_text("\n".join(lines) + "\n")
    return train, test


@pytest.mark.skipif(not any(e.problem == "semi-supervised" for e in registry.SOLVERS.values()),
                    reason="no semi-supervised solver registered yet")
def test_semi_supervised_training(tmp_path):
    train, test = _semi_supervised_files(tmp_path)
    name = next(e.name for e in registry.SOLVERS.values() if e.problem == "semi-supervised")
    model = tmp_path / "semi.stochsvm"
    result = run("train", train, "--solver", name, "--semi-supervised", "--unlabeled-label", "9",
                 "--param", "random_state=0", "--test", test, "--out", model)
    assert result.exit_code == 0, result.output
    accuracy = float(result.output.split("test accuracy:")[1].split()[0])
    assert accuracy > 0.8
    result = run("evaluate", model, test)
    assert result.exit_code == 0 and f"accuracy: {accuracy:.4f}" in result.output


def test_semi_supervised_label_collision(files):
    _, train, _ = files  # labels -1/+1
    name = next((e.name for e in registry.SOLVERS.values() if e.problem == "semi-supervised"),
                None)
    if name is None:
        assert_one_line_error(run("train", train, "--semi-supervised", "--unlabeled-label", "0"),
                              "not a semi-supervised solver")
        return
    assert_one_line_error(run("train", train, "--solver", name, "--semi-supervised",
                              "--unlabeled-label", "0"), "class label -1")


def test_solvers_and_datasets_tables():
    result = run("solvers")
    assert result.exit_code == 0
    for name in registry.SOLVERS:
        assert name in result.output
    assert "cod-rna" in run("datasets", "list").output
    assert "url:" in run("datasets", "info", "a9a").output


def test_error_paths(files):
    tmp_path, train, _ = files
    assert_one_line_error(run("train", tmp_path / "missing.svm"), "no such file")
    bad = tmp_path / "bad.svm"
    bad.write_text("1 1:1\n1 2:zz\n")
    assert_one_line_error(run("train", bad), "line 2")
    assert_one_line_error(run("train", train, "--solver", "Nope"), "known solvers")
    assert_one_line_error(run("train", train, "--param", "nonsense=1"), "bad parameter")
    assert_one_line_error(run("train", train, "--param", "novalue"), "NAME=VALUE")
    assert_one_line_error(run("train", train, "--param", "alpha=-1"), "SADMMClassifier")
    assert_one_line_error(run("evaluate", tmp_path / "nomodel", train), "no such model")
    junk = tmp_path / "junk.stochsvm"
    junk.write_bytes(b"not a model")
    assert_one_line_error(run("predict", junk, train), "not a stochsvm model")
    assert_one_line_error(run("datasets", "info", "nope"), "known datasets")
    assert_one_line_error(run("datasets", "fetch", "nope"), "known datasets")


def test_module_entry_point(files):
    _, train, _ = files
    completed = subprocess.run([sys.executable, "-m", "stochsvm.cli", "train", "/no/such"],
                               capture_output=True, text=True)
    assert completed.returncode != 0
    assert completed.stderr.strip().startswith("error:") and "Traceback" not in completed.stderr


def test_usage_errors_are_one_line(files):
    _, train, _ = files
    assert_one_line_error(run("train"), "Missing argument")
    assert_one_line_error(run("train", train, "--bogus"), "No such option")
    assert_one_line_error(run("bogus"), "No such command")
    assert_one_line_error(run("train", train, "--solver"), "requires an argument")
    assert_one_line_error(run("train", train, "--unlabeled-label", "abc"), "not a valid float")
    assert_one_line_error(run("datasets", "bogus"), "No such command")
    assert_one_line_error(run("reproduce", "bogus"), "PAPER")
    # a bare group shows its help (not an error)
    result = run("datasets")
    assert result.exit_code == 0 and "fetch" in result.output


def test_data_and_model_error_paths(files):
    tmp_path, train, test = files
    model = tmp_path / "model.stochsvm"
    assert run("train", train, "--param", "random_state=0", "--out", model).exit_code == 0
    missing = tmp_path / "missing.svm"
    assert_one_line_error(run("predict", model, missing), "no such file")
    assert_one_line_error(run("evaluate", model, missing), "no such file")
    assert_one_line_error(run("train", train, "--test", missing), "no such file")
    nowhere = tmp_path / "no" / "such" / "folder"
    assert_one_line_error(run("predict", model, test, "--out", nowhere / "p.txt"),
                          "No such file or directory")
    assert_one_line_error(run("train", train, "--out", nowhere / "m.stochsvm"),
                          "No such file or directory")
    wide = tmp_path / "wide.svm"
    wide.write_text("1 1:1 50:2\n-1 2:1\n")
    assert_one_line_error(run("predict", model, wide), "features")
    one_class = tmp_path / "one.svm"
    one_class.write_text("1 1:1\n1 2:1\n1 3:2\n")
    assert_one_line_error(run("train", one_class), "class")
    empty = tmp_path / "empty.svm"
    empty.write_text("")
    assert_one_line_error(run("train", empty), "no samples")
    assert_one_line_error(run("train", train, "--test", empty), "no samples")
    assert_one_line_error(run("train", train, "--param", "alpha=[1"), "SADMMClassifier")
    tampered = tmp_path / "tampered.stochsvm"
    data = bytearray(model.read_bytes())
    # a byte of the first member's content (past its 30-byte local header and name): the
    # middle of the file could fall on header bytes no reader checks (the file's size varies
    # with the training seconds recorded in history_)
    data[100] ^= 0xFF
    tampered.write_bytes(bytes(data))
    assert_one_line_error(run("evaluate", tampered, test), "tampered.stochsvm")
    assert_one_line_error(run("predict", tmp_path, test), "not a model file")


def test_progress_bar_and_a_model_without_the_callback(files):
    """--progress draws a tqdm bar on stderr (epochs against max_iter, rate, time left); the
    saved model holds no callable and reloads; S3GD on a LIBSVM file (64-bit CSR indices)
    trains."""
    tmp_path, train, test = files
    model = tmp_path / "s3gd.stochsvm"
    result = run("train", train, "--solver", "S3GDClassifier", "--param", "n_anchors=10",
                 "--param", "max_iter=3", "--param", "tol=None", "--progress", "--out", model)
    assert result.exit_code == 0, result.output
    final = result.stderr.split("\r")[-1]
    assert "S3GDClassifier" in final and "3/3" in final and "100%" in final, result.stderr
    assert re.search(r"(epoch/s|s/epoch)", final) and "<00:00" in final  # rate, time left
    from stochsvm import io
    assert io.load(model).callback is None
    reloaded = run("evaluate", model, test)
    assert reloaded.exit_code == 0 and "accuracy:" in reloaded.output
    quiet = run("train", train, "--solver", "SADMMClassifier", "--no-progress")
    assert quiet.exit_code == 0 and "%|" not in quiet.stderr
    assert all(line.startswith("warning: ") for line in quiet.stderr.splitlines())


def test_progress_bar_per_one_vs_rest_problem(tmp_path):
    """A multiclass fit restarts the bar for every binary problem and names it (SADMM's
    one-vs-one default: its pair of classes); the bar is redrawn at most every 0.2 s, not
    once per record."""
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    keep = y < 3
    path = tmp_path / "digits.svm"
    dump_svmlight_file(X[keep] / 16, y[keep], str(path))
    result = run("train", path, "--solver", "sadmm", "--param", "max_iter=4",
                 "--param", "tol=None", "--param", "random_state=0", "--progress")
    assert result.exit_code == 0, result.output
    frames = result.stderr.split("\r")
    for number, label in enumerate(("0 vs 1", "0 vs 2", "1 vs 2"), start=1):
        assert any(f"SADMMClassifier pair {label} ({number}/3)" in frame for frame in frames)
    assert "4/4" in frames[-1]
    # the stall rule off, so that the run goes to its cap of 400 iterations
    scs = run("train", path, "--solver", "scs", "--param", "max_iter=400", "--param", "tol=1e-12",
              "--param", "n_iter_no_change=None", "--param", "random_state=0", "--progress")
    assert scs.exit_code == 0, scs.output
    frames = scs.stderr.split("\r")
    assert "400/400" in frames[-1] and re.search(r"(it/s|s/it)", frames[-1])
    assert len(frames) < 100  # 1200 records, throttled


def test_progress_bar_of_a_converged_fit_ends_at_100_percent(files):
    """A fit that its stopping rule ends before max_iter shows 100% and "converged", not the
    fraction of max_iter it used."""
    tmp_path, train, _ = files
    result = run("train", train, "--solver", "SADMMClassifier", "--param", "random_state=0",
                 "--progress")
    assert result.exit_code == 0, result.output
    final = result.stderr.split("\r")[-1]
    assert "100%" in final and "converged" in final, result.stderr
    epochs = re.search(r"\| (\d+)/(\d+) ", final)
    assert epochs and epochs.group(1) == epochs.group(2) and int(epochs.group(1)) < 1000


def test_progress_bar_totals():
    """The bar's total is each solver's iteration cap."""
    from stochsvm.cli.progress import iteration_total
    y = np.r_[np.zeros(50), np.ones(50)]
    y_semi = np.r_[np.zeros(10), np.ones(10), -np.ones(1000)]
    assert iteration_total(registry.solver_class("sadmm")(max_iter=7), y) == 7
    assert iteration_total(registry.solver_class("scs")(max_iter=30), y) == 30
    assert iteration_total(registry.solver_class("wolfe")(max_iter=11), y) == 11
    assert iteration_total(registry.solver_class("kernel-pegasos")(max_iter=3), y) == 3
    assert iteration_total(registry.solver_class("tsgs3vm")(max_iter=70), y_semi) == 70
    # n_passes of unlabeled batches of max(batch_size, ceil(n_u / 64)), at least 64
    assert iteration_total(registry.solver_class("tsgs3vm")(batch_size=8), y_semi) == 64
    assert iteration_total(registry.solver_class("frs3vm")(batch_size=8, n_passes=3.0),
                            y_semi) == 188  # ceil(3 * 1000 / 16)
    assert iteration_total(registry.solver_class("bgs3vm")(batch_size=10, n_passes=2),
                            y_semi) == 200
    assert iteration_total(registry.solver_class("s3vmlight")(max_iter=9), y_semi) == 9
    assert iteration_total(registry.solver_class("cccp")(max_iter=5), y_semi) == 5


def test_progress_records_without_a_problem_key(capsys):
    """Records without "problem" (estimators that do not add it): an iteration count that
    does not increase starts the next problem's bar."""
    from stochsvm.cli.progress import ProgressBar
    entry = registry.get_solver("sadmm")
    bar = ProgressBar(entry, entry.load()(max_iter=3, multi_class="ovr"),
                      np.array([0, 1, 2, 0, 1, 2]))
    bar.start()
    for record in [{"iteration": 1}, {"iteration": 2}, {"iteration": 1}, {"iteration": 3},
                   {"iteration": 2, "problem": 2}]:
        bar(record)
    assert bar.problem == 2
    bar.close()
    assert "class 1 (2/3)" in capsys.readouterr().err


def test_warnings_shown_once(files):
    """A ConvergenceWarning reaches the user once, as one line, not once per class."""
    tmp_path, train, _ = files
    result = run("train", train, "--solver", "sadmm", "--param", "max_iter=2",
                 "--param", "tol=1e-12", "--no-progress")
    assert result.exit_code == 0, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: ConvergenceWarning: ")
    assert "max_iter=2" in lines[0]


def test_repeated_warnings_are_one_line(capsys):
    """Identical warnings print once; warnings that differ only in their numbers (one per
    epoch or class) print once with a count; deprecation warnings stay hidden."""
    from sklearn.exceptions import ConvergenceWarning
    from stochsvm.cli import _warnings_shown_once
    with _warnings_shown_once():
        for label in (0, 1, 2, 2):
            warnings.warn(f"class {label} did not converge in 10 epochs", ConvergenceWarning)
        warnings.warn("first line\n  second line", UserWarning)
        warnings.warn("old spelling", DeprecationWarning)
    assert capsys.readouterr().err.splitlines() == [
        "warning: ConvergenceWarning: class 0 did not converge in 10 epochs (and 2 more like it)",
        "warning: UserWarning: first line second line"]
    with pytest.raises(ValueError):  # a failing command prints its error line only
        with _warnings_shown_once():
            warnings.warn("lost", UserWarning)
            raise ValueError("failed")
    assert capsys.readouterr().err == ""


def test_solver_aliases(files):
    """Class names and short aliases, in any case, name the same solver."""
    _, train, test = files
    for name in ("sadmm", "SADMM", "SADMMClassifier", "sadmmclassifier"):
        result = run("train", train, "--solver", name, "--param", "random_state=0",
                     "--test", test, "--no-progress")
        assert result.exit_code == 0 and "trained SADMMClassifier" in result.output
    assert registry.get_solver("sgd").name == "MiniBatchSGDClassifier"
    assert registry.get_solver("svrg").name == "ProxSVRGClassifier"
    assert registry.get_solver("Kernel_Pegasos").name == "KernelPegasosSVC"
    assert registry.get_solver("s3vmlight").name == "SelfLabelingTSVM"
    assert registry.get_solver("cccp").name == registry.get_solver("cccp-tsvm").name == "CCCPTSVM"
    for paper in ("sadmm", "s3gd", "scs", "tsgs3vm"):  # the words of `stochsvm reproduce`
        assert registry.get_solver(paper).name.lower().startswith(paper)
    result = run("train", train, "--solver", "sadm")
    assert_one_line_error(result, "did you mean 'sadmm'")
    assert "kernel-pegasos" in result.stderr and "SCSKernelSVC (scs)" in result.stderr
    table = run("solvers").output
    assert "aliases" in table.splitlines()[0]
    assert any(line.startswith("SelfLabelingTSVM") and "self-labeling-tsvm, s3vmlight" in line
               for line in table.splitlines())


def test_aliases_are_unique_and_model_files_keep_class_names(files):
    owners = {}
    for entry in registry.SOLVERS.values():
        for word in (entry.name, *entry.aliases):
            assert owners.setdefault(word.lower(), entry.name) == entry.name, word
    for entry in registry.SOLVERS.values():
        assert all(alias == alias.lower() for alias in entry.aliases)
    from stochsvm.linear import SADMMClassifier
    assert registry.name_of(SADMMClassifier()) == "SADMMClassifier"
    assert registry.solver_class("sadmm") is SADMMClassifier


def test_predict_decision_values(files, tmp_path):
    """--decision-values: one column for a binary model, one per class otherwise."""
    _, train, test = files
    from stochsvm import io
    from stochsvm.datasets import load_libsvm
    model = tmp_path / "binary.stochsvm"
    assert run("train", train, "--param", "random_state=0", "--out", model).exit_code == 0
    out = tmp_path / "scores.txt"
    assert run("predict", model, test, "--decision-values", "--out", out).exit_code == 0
    estimator = io.load(model)
    X_test, _ = load_libsvm(test, n_features=estimator.n_features_in_)
    np.testing.assert_array_equal(np.loadtxt(out), estimator.decision_function(X_test))
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    digits = tmp_path / "digits.svm"
    dump_svmlight_file(X[:400] / 16, y[:400] % 3, str(digits))
    multiclass = tmp_path / "multiclass.stochsvm"
    assert run("train", digits, "--solver", "sgd", "--param", "random_state=0",
               "--out", multiclass).exit_code == 0
    result = run("predict", multiclass, digits, "--decision-values")
    scores = np.loadtxt(result.output.splitlines())
    assert scores.shape == (400, 3)
    labels = np.loadtxt(run("predict", multiclass, digits).output.splitlines())
    np.testing.assert_array_equal(labels, np.argmax(scores, axis=1))
    assert "--decision-values" in run("predict", "--help").output


def test_predicted_labels_are_written_exactly(tmp_path):
    """Labels such as 1000001 are written as they are, not rounded to 1e+06."""
    X, y = binary_breast_cancer()
    path = tmp_path / "big_labels.svm"
    dump_svmlight_file(X[:, :5], np.where(y > 0, 1000001, 1000002), str(path))
    model = tmp_path / "m.stochsvm"
    assert run("train", path, "--param", "random_state=0", "--out", model).exit_code == 0
    written = set(run("predict", model, path).output.split())
    assert written <= {"1000001", "1000002"} and written


def test_train_and_test_files_share_index_base_and_width(tmp_path):
    """A zero-based training file holds feature 0; its test file does not and is wider. Read
    separately (before), the test file was taken as one-based: every feature moved one column
    left and the test accuracy was that of a shifted model. Now both are read zero-based and
    equally wide, and the model file predicts the test file the same way with --zero-based."""
    X, y = binary_breast_cancer()
    X = X[:, :6].copy()
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight_file(X[:400], y[:400], str(train))  # zero-based, feature 0 present
    X_test = np.hstack([X[400:], np.zeros((169, 1))])
    X_test[:, 0] = 0.0   # no feature 0 in the test file...
    X_test[0, 6] = 1.0   # ...and one feature the training file never had
    dump_svmlight_file(X_test, y[400:], str(test))
    model = tmp_path / "m.stochsvm"
    result = run("train", train, "--param", "random_state=0", "--test", test, "--out", model)
    assert result.exit_code == 0, result.output
    assert "7 features (indices counted from 0)" in result.output
    from stochsvm import io
    estimator = io.load(model)
    expected = np.mean(estimator.predict(X_test) == y[400:])
    assert f"test accuracy: {expected:.4f}" in result.output
    evaluated = run("evaluate", model, test, "--zero-based")
    assert f"accuracy: {expected:.4f}" in evaluated.output
    predictions = np.loadtxt(run("predict", model, test, "--zero-based").output.splitlines())
    np.testing.assert_array_equal(predictions, estimator.predict(X_test))


def test_labels_written_differently_are_refused(files, tmp_path):
    """A test file labeled 0/1 against a model of -1/+1 is an error, not an accuracy."""
    _, train, test = files
    relabeled = tmp_path / "zero_one.svm"
    relabeled.write_text(test.read_text().replace("-1 ", "0 "))
    model = tmp_path / "m.stochsvm"
    assert run("train", train, "--out", model, "--param", "random_state=0").exit_code == 0
    assert_one_line_error(run("evaluate", model, relabeled), "labels 0 are not classes")
    assert_one_line_error(run("train", train, "--test", relabeled), "0/1 against -1/+1")


def test_huge_feature_index_refused_before_training(files, tmp_path):
    _, train, _ = files
    wide = tmp_path / "wide.svm"
    wide.write_text(train.read_text() + "1 1000000000:1\n")
    result = run("train", wide)
    assert_one_line_error(result, "--max-features")
    assert "line 401: feature index 1,000,000,000" in result.stderr and "7.5 GiB" in result.stderr
    assert_one_line_error(run("train", wide, "--max-features", "100"), "max_features=100")
    wide.write_text(train.read_text() + "1 4000000000:1\n")  # beyond the reader itself
    result = run("train", wide)
    assert_one_line_error(result, "feature index 4,000,000,000")
    assert "29.8 GiB" in result.stderr
    stray = tmp_path / "stray.svm"
    stray.write_text(train.read_text() + "1 100000000:1\n")
    result = run("train", stray)
    assert_one_line_error(result, "100,000,001 features")  # zero-based file
    assert "762.9 MiB" in result.stderr  # one dense weight vector of that width


def test_folder_and_malformed_data_through_the_cli(files, tmp_path):
    _, train, _ = files
    assert_one_line_error(run("train", tmp_path), "is a folder")
    bad = tmp_path / "bad.svm"
    bad.write_bytes(train.read_bytes() + b"1 3:1 3:2\n")
    assert_one_line_error(run("train", bad), "line 401: feature index 3 repeated")
    bad.write_bytes(train.read_bytes() + b"1,2 3:1\n")
    assert_one_line_error(run("train", bad), "multilabel")


def test_semi_supervised_label_conventions(tmp_path):
    """Labels -1, 0 and 1: scikit-learn marks the unlabeled rows -1 (classes 0/1), SVMlight's
    transductive files mark them 0 (classes -1/+1). Guessing trained the wrong rows as a
    class; now the marker must be given."""
    train, test = _semi_supervised_files(tmp_path, unlabeled="-1")
    result = run("train", train, "--solver", "tsgs3vm", "--semi-supervised")
    assert_one_line_error(result, "--unlabeled-label -1 or --unlabeled-label 0")
    result = run("train", train, "--solver", "tsgs3vm", "--semi-supervised",
                 "--unlabeled-label", "-1", "--param", "random_state=0", "--test", test)
    assert result.exit_code == 0, result.output
    labeled_only = tmp_path / "labeled.svm"
    labeled_only.write_text(test.read_text())
    result = run("train", labeled_only, "--solver", "tsgs3vm", "--semi-supervised",
                 "--param", "random_state=0")
    assert result.exit_code == 0 and "no row has the unlabeled label -1" in result.stderr
