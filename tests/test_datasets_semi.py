"""make_semi_supervised: counts, stratification, reproducibility, errors."""

import numpy as np
import pytest

from stochsvm.datasets import make_semi_supervised


def test_stratified_counts():
    y = np.array([0] * 700 + [1] * 200 + [2] * 100)
    out = make_semi_supervised(y, n_labeled=200, random_state=0)
    assert np.sum(out != -1) == 200
    assert [np.sum(out == k) for k in range(3)] == [140, 40, 20]
    kept = out != -1
    np.testing.assert_array_equal(out[kept], y[kept])


def test_unstratified_and_reproducible():
    y = np.repeat([1, 2], 50)
    first = make_semi_supervised(y, n_labeled=10, stratify=False, random_state=3)
    second = make_semi_supervised(y, n_labeled=10, stratify=False, random_state=3)
    np.testing.assert_array_equal(first, second)
    assert np.sum(first != -1) == 10


def test_every_class_kept():
    y = np.array([0] * 98 + [1] * 2)
    out = make_semi_supervised(y, n_labeled=5, random_state=0)
    assert np.sum(out == 1) >= 1 and np.sum(out != -1) == 5


@pytest.mark.parametrize("y, n", [(np.array([-1, 1, 1]), 1), (np.array([0, 1]), 3),
                                  (np.array([0, 1, 2]), 2), (np.array(["a", "b"]), 2)])
def test_errors(y, n):
    with pytest.raises(ValueError):
        make_semi_supervised(y, n_labeled=n)
