"""End-to-end CLI: train -> save -> predict -> evaluate, and every error path."""

import subprocess
import sys

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
    assert_one_line_error(run("train", empty), "SADMMClassifier")
    assert_one_line_error(run("train", train, "--param", "alpha=[1"), "SADMMClassifier")
    tampered = tmp_path / "tampered.stochsvm"
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    assert_one_line_error(run("evaluate", tampered, test), "tampered.stochsvm")
    assert_one_line_error(run("predict", tmp_path, test), "not a model file")


def test_progress_line_and_a_model_without_the_callback(files):
    """--progress writes a status line per record on stderr; the saved model holds no
    callable and reloads; S3GD on a LIBSVM file (64-bit CSR indices) trains."""
    tmp_path, train, test = files
    model = tmp_path / "s3gd.stochsvm"
    result = run("train", train, "--solver", "S3GDClassifier", "--param", "n_anchors=10",
                 "--param", "max_iter=3", "--param", "tol=None", "--progress", "--out", model)
    assert result.exit_code == 0, result.output
    status = result.stderr.split("\r")
    assert sum("S3GDClassifier: record" in part for part in status) == 3
    assert "samples_seen" in status[-1]
    reloaded = run("evaluate", model, test)
    assert reloaded.exit_code == 0 and "accuracy:" in reloaded.output
    quiet = run("train", train, "--solver", "SADMMClassifier", "--no-progress")
    assert quiet.exit_code == 0 and quiet.stderr == ""
