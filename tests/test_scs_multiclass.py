"""SCS's one-vs-rest problems share their sample order and the kernel rows they compute."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from stochsvm._core.sampling import problem_seeds
from stochsvm._core.threads import start_thread_pool
from stochsvm.kernel import SCSKernelSVC


def _digits():
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y % 4


def _budget_for(samples, itemsize):
    return samples * samples * itemsize / 2**20


SETTINGS = {
    "cached": {},
    # past the budget: 300 samples cached in 16-bit, S_k up to 1200, rows computed on the fly
    "past the budget": {"max_samples": 1200, "max_memory_mb": _budget_for(300, 2),
                        "kernel_dtype": "fixed16"},
}


def _coefficients(model, n):
    full = np.zeros((model.dual_coef_.shape[0], n))
    full[:, model.support_] = model.dual_coef_
    return full


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_shared_problems_give_the_models_of_separate_binary_fits(setting):
    # each one-vs-rest problem equals the binary fit of its class against the rest, in the
    # order of the first problem's seed, bit for bit: the shared rows are the same values
    if setting == "past the budget":
        start_thread_pool()
    X, y = _digits()
    parameters = dict(SETTINGS[setting], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(**parameters).fit(X, y)
        _, seeds = problem_seeds(0, 4)
        for index, label in enumerate(model.classes_):
            binary = SCSKernelSVC(**dict(parameters, random_state=seeds[0])).fit(
                X, (y == label).astype(int))
            np.testing.assert_array_equal(_coefficients(model, len(y))[index],
                                          _coefficients(binary, len(y))[0])
            assert binary.sample_size_[0] == model.sample_size_[index]
    if setting == "past the budget":
        assert model.sample_size_.max() > 300  # grown past the cached samples


def test_the_shared_matrix_lives_for_the_fit_only_and_n_jobs_gives_the_same_model():
    X, y = _digits()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sequential = SCSKernelSVC(random_state=0).fit(X, y)
        parallel = SCSKernelSVC(random_state=0, n_jobs=2).fit(X, y)
    assert not [name for name in vars(sequential) if "matrix" in name]
    np.testing.assert_array_equal(sequential.dual_coef_, parallel.dual_coef_)
    np.testing.assert_array_equal(sequential.support_, parallel.support_)
