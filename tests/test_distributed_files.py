"""LIBSVM files as one distributed data set, and ``stochsvm train --scheduler``."""

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file, make_classification

from stochsvm import io
from stochsvm.cli import main
from stochsvm.datasets.libsvm import load_libsvm_files

da = pytest.importorskip("dask.array")
pytest.importorskip("dask.distributed")

from stochsvm.distributed.files import expand_paths, read_libsvm_files  # noqa: E402


def _shards(folder, n_files=3, rows=200, zero_based=False, seed=0):
    """Sparse classification data written as ``n_files`` LIBSVM files; returns (paths, X, y)."""
    X, y = make_classification(n_files * rows, 12, n_informative=6, random_state=seed)
    X[np.abs(X) < 0.8] = 0.0
    X = sp.csr_matrix(X)
    paths = []
    for index in range(n_files):
        path = folder / f"part-{index:02d}.svm"
        dump_svmlight_file(X[index * rows:(index + 1) * rows], y[index * rows:(index + 1) * rows],
                           str(path), zero_based=zero_based)
        paths.append(str(path))
    return paths, X, y


@pytest.mark.parametrize("zero_based", [True, False])
def test_files_read_as_one_data_set_equal_the_in_memory_reader(tmp_path, zero_based):
    paths, X, y = _shards(tmp_path, zero_based=zero_based)
    # one file without the last feature: the blocks still get one common width
    X_dask, y_dask, used = read_libsvm_files(str(tmp_path / "part-*.svm"),
                                             return_zero_based=True)
    pairs, expected_base = load_libsvm_files(paths, return_zero_based=True)
    assert used == expected_base
    assert X_dask.chunks[0] == (200, 200, 200)
    X_read, y_read = X_dask.compute(), y_dask.compute()
    assert sp.issparse(X_read)
    expected = sp.vstack([pair[0] for pair in pairs])
    assert X_read.shape == expected.shape
    np.testing.assert_array_equal(X_read.toarray(), expected.toarray())
    np.testing.assert_array_equal(y_read, np.concatenate([pair[1] for pair in pairs]))


def test_width_and_index_base_are_checked_across_files(tmp_path):
    paths, _, _ = _shards(tmp_path, n_files=2, zero_based=True)
    with pytest.raises(ValueError, match="beyond n_features=5"):
        read_libsvm_files(paths, n_features=5)
    with pytest.raises(ValueError, match="feature index 0 in a file read as one-based"):
        read_libsvm_files(paths, zero_based=False)
    with pytest.raises(ValueError, match="more than max_features=4"):
        read_libsvm_files(paths, max_features=4)
    X, _ = read_libsvm_files(paths, n_features=40)
    assert X.shape == (400, 40)
    empty = tmp_path / "empty.svm"
    empty.write_text("# nothing here\n")
    with pytest.raises(ValueError, match="empty.svm: no samples"):
        read_libsvm_files([*paths, str(empty)])
    with pytest.raises(FileNotFoundError, match="no file matches"):
        expand_paths(str(tmp_path / "missing-*.svm"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        expand_paths([paths[0], str(tmp_path / "missing.svm")])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_train_on_a_local_cluster_from_a_glob_writes_an_ordinary_model(tmp_path):
    _, X, y = _shards(tmp_path, n_files=4, rows=300)
    model_path = tmp_path / "model.stochsvm"
    runner = CliRunner()
    result = runner.invoke(main, ["train", str(tmp_path / "part-*.svm"), "--scheduler",
                                  "local:2", "--param", "random_state=0", "--out",
                                  str(model_path), "--test", str(tmp_path / "part-00.svm")],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "on 1200 samples, 12 features (indices counted from 1) in 4 file(s), on a Dask " \
           "cluster of 2 worker(s)" in result.output
    assert "test accuracy:" in result.output
    model = io.load(model_path)
    assert isinstance(model.coef_, np.ndarray) and model.coef_.shape == (1, 12)
    # the same objective as an in-memory fit of the same solver (model averaging over
    # partitions: other sample orders, so not the same iterates); Dask trains eq. (12)
    from stochsvm import SADMMClassifier

    in_memory = SADMMClassifier(random_state=0, solver="stochastic").fit(X, y)
    assert model.objective(X, y) <= in_memory.objective(X, y) * 1.05
    assert model.score(X, y) >= in_memory.score(X, y) - 0.03


def test_train_on_a_cluster_refuses_a_solver_without_a_distributed_form(tmp_path):
    _shards(tmp_path, n_files=2)
    runner = CliRunner()
    result = runner.invoke(main, ["train", str(tmp_path / "*.svm"), "--scheduler", "local:1",
                                  "--solver", "KernelPegasosSVC"])
    assert result.exit_code == 1
    assert "KernelPegasosSVC does not train on a Dask cluster; solvers that do: " \
        in result.output
    assert "SADMMClassifier" in result.output and "SCSKernelSVC" in result.output
    result = runner.invoke(main, ["train", str(tmp_path / "none-*.svm"), "--scheduler",
                                  "local:1"])
    assert result.exit_code == 1 and "no file matches" in result.output


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scs_trains_on_a_cluster_from_files_as_in_memory(tmp_path):
    """SCSKernelSVC on the CSR blocks of LIBSVM files: the sampled rows are fetched from the
    files' blocks, and the model is the in-memory model of the same rows."""
    paths, _, _ = _shards(tmp_path, n_files=3, rows=200)
    model_path = tmp_path / "scs.stochsvm"
    params = ["--param", "random_state=0", "--param", "gamma=0.1", "--param",
              "initial_samples=50", "--param", "max_iter=100"]
    result = CliRunner().invoke(main, ["train", str(tmp_path / "part-*.svm"), "--scheduler",
                                       "local:1", "--solver", "SCSKernelSVC", *params,
                                       "--out", str(model_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    model = io.load(model_path)
    pairs = load_libsvm_files(paths)
    X = sp.vstack([pair[0] for pair in pairs], format="csr")
    y = np.concatenate([pair[1] for pair in pairs])
    from stochsvm import SCSKernelSVC

    in_memory = SCSKernelSVC(random_state=0, gamma=0.1, initial_samples=50,
                             max_iter=100).fit(X, y)
    np.testing.assert_array_equal(model.support_, in_memory.support_)
    np.testing.assert_array_equal(model.dual_coef_, in_memory.dual_coef_)
    np.testing.assert_array_equal(model.decision_function(X), in_memory.decision_function(X))
