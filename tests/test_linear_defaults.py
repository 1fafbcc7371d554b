"""The defaults benchmark of the linear family (benchmarks/linear_defaults.py) and the
sparsity pattern of its l1 solvers on a small problem: dense == CSR, same seed == same model."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from stochsvm import RDAClassifier, SADMMClassifier

from .benchmark_scripts import load_script
from .reference import binary_breast_cancer


@pytest.mark.parametrize("make", [
    lambda: SADMMClassifier(penalty="l1", alpha=1e-2, average=False, max_iter=5, tol=None,
                            random_state=0),
    lambda: RDAClassifier(penalty="l1", alpha=1e-2, max_iter=5, tol=None, random_state=0),
], ids=["SADMM", "RDA"])
def test_l1_sparsity_pattern_dense_equals_csr_and_seeded(make):
    X, y = binary_breast_cancer()
    dense, again, csr = make().fit(X, y), make().fit(X, y), make().fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.coef_, again.coef_)
    np.testing.assert_array_equal(dense.coef_ != 0, csr.coef_ != 0)
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=1e-9, atol=1e-12)
    assert 0 < np.count_nonzero(dense.coef_) < X.shape[1]


def test_benchmark_script_writes_both_tables(tmp_path):
    script = load_script("linear_defaults")
    stem = str(tmp_path / "linear_defaults")
    script.main(["--quick", "--sets", "breast cancer", "--output", stem])
    results = json.loads((tmp_path / "linear_defaults.json").read_text())
    rows = results["breast cancer"]
    for label, *_ in script.ESTIMATORS:
        assert rows[label]["alpha"] in script.ALPHAS
        assert 0.0 <= rows[label]["accuracy"] <= 1.0
        assert rows[label]["peer"] in ("LinearSVC", "LogisticRegression")
    assert rows["SGDClassifier l1"]["nonzeros"] <= rows["n_features"]
    text = (tmp_path / "linear_defaults.md").read_text()
    assert "Defaults converge" in text and "l1 sparsity" in text
