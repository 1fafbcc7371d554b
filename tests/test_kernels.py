"""Kernel blocks against scikit-learn's pairwise kernels, dense and CSR, and the budget error."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from stochsvm._core.kernels import check_kernel_budget, kernel_block, resolve_gamma


@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_blocks_match_sklearn(sparse):
    rng = np.random.RandomState(0)
    A, B = rng.randn(7, 4), rng.randn(5, 4)
    A[A < 0.3] = 0.0
    a, b = (sp.csr_matrix(A), sp.csr_matrix(B)) if sparse else (A, B)
    np.testing.assert_allclose(kernel_block(a, b, "linear"), linear_kernel(A, B), atol=1e-12)
    np.testing.assert_allclose(kernel_block(a, b, "rbf", 0.3), rbf_kernel(A, B, gamma=0.3),
                               atol=1e-12)
    np.testing.assert_allclose(kernel_block(a, b, "poly", 0.5, 2, 1.0),
                               polynomial_kernel(A, B, degree=2, gamma=0.5, coef0=1.0),
                               atol=1e-12)
    assert resolve_gamma(None, a) == pytest.approx(1.0 / (4 * A.var()))


def test_budget_error_names_budget_and_way_out():
    with pytest.raises(MemoryError, match="memory_budget.*subsample"):
        check_kernel_budget(1000, 1000, 1e6, "Train on a subsample.")
    check_kernel_budget(10, 10, 1e6, "unused")
