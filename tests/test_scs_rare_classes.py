"""SCS on a rare class: the balanced growth test and the class-weighted order of S_k."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import balanced_accuracy_score

from stochsvm._core.sampling import class_weighted_order
from stochsvm.kernel import SCSKernelSVC
from stochsvm.kernel.scs_adaptive import growth_bounds


def _rare_problem(n, seed, share=0.01):
    # a rare class in a small ball of the plane, the other class around it
    rng = np.random.RandomState(seed)
    positives = rng.rand(n) < share
    X = rng.uniform(-3.0, 3.0, size=(n, 2))
    X[positives] = 0.35 * rng.randn(np.count_nonzero(positives), 2) + 1.0
    X[~positives & (np.linalg.norm(X - 1.0, axis=1) < 1.0)] += 2.0
    return X, positives.astype(int)


def test_growth_bounds_on_one_class_are_the_plain_bounds():
    counts = np.array([0.0, 800.0])
    error_bound, gain = growth_bounds(counts, np.array([0.0, 12.0]), np.array([0.0, 20.0]),
                                      np.array([0.0, 10.0]))
    assert error_bound == pytest.approx((12 + 3) / 800)
    assert gain == pytest.approx((20 - 12 + 2 * np.sqrt(10) + 3) / 800)
    assert growth_bounds(counts, np.array([0.0, 12.0]))[1] == np.inf


def test_growth_bounds_on_equal_classes_are_the_plain_bounds():
    counts = np.array([400.0, 400.0])
    errors, before, disagreements = np.array([5.0, 7.0]), np.array([9.0, 8.0]), np.array([6.0, 6.0])
    error_bound, gain = growth_bounds(counts, errors, before, disagreements)
    assert error_bound == pytest.approx((12 + 3) / 800)
    assert gain == pytest.approx((17 - 12 + 2 * np.sqrt(12) + 3) / 800)


def test_growth_bounds_keep_a_constant_classifier_of_a_rare_class_growing():
    # 7 points of the rare class among 800, all misclassified by two constant incumbents
    counts, errors = np.array([793.0, 7.0]), np.array([0.0, 7.0])
    error_bound, gain = growth_bounds(counts, errors, errors, np.zeros(2))
    # on the rate of all points the gain bound is 3 / 800 = 0.00375, below error_tol's
    # 0.005: the plain test stops the growth of a constant classifier
    assert error_bound >= 0.5
    assert gain == pytest.approx(1.5 * np.sqrt(1 / (793 * 800) + 1 / (7 * 800)))
    assert gain > 4 * SCSKernelSVC().error_tol


@pytest.mark.parametrize("positive_weight", [1.0, 10.0, 1000.0])
def test_class_weighted_order_takes_each_class_at_its_weights_rate(positive_weight):
    rng = np.random.RandomState(0)
    n, length = 2000, 600
    signs = np.where(rng.rand(n) < 0.05, 1.0, -1.0)
    weights = np.where(signs > 0, positive_weight, 1.0) * rng.uniform(0.5, 1.5, n)
    order, factors = class_weighted_order(signs, weights, length, np.random.RandomState(1))
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    head = order[:length]
    positives = np.count_nonzero(signs > 0)
    share = weights[signs > 0].sum() / weights.sum()
    expected = min(share * length, positives)  # capped by the rows there are
    assert abs(np.count_nonzero(signs[head] > 0) - expected) <= 1.0
    # every prefix holds the classes at that rate, within a row
    for prefix in (50, 100, 333):
        taken = np.count_nonzero(signs[head[:prefix]] > 0)
        assert abs(taken - expected * prefix / length) <= 1.5
    # each sampled row of class c stands for n_c / (length pi_c) rows of it: the sample's
    # estimate of a sum over the rows is unbiased
    for c in (-1.0, 1.0):
        in_class = signs[head] == c
        assert n / length * np.sum(factors[head][in_class]) == pytest.approx(
            np.count_nonzero(signs == c))
    assert np.all(factors[order[length:]] == 1.0)


def test_class_weighted_order_of_class_weights_is_an_unweighted_sample():
    # class-constant weights with no class capped: every sampled row weighs W / n
    signs = np.repeat([-1.0, 1.0], [700, 300])
    weights = np.where(signs > 0, 2.0, 1.0)
    order, factors = class_weighted_order(signs, weights, 400, np.random.RandomState(0))
    head = order[:400]
    # (to the rounding of the class counts to whole rows)
    np.testing.assert_allclose((weights * factors)[head], weights.sum() / 1000, rtol=0.01)
    assert abs(np.count_nonzero(signs[head] > 0) - 400 * 600 / 1300) <= 1.0


def _fit(X, y, **parameters):
    seen = []

    def record_positions(record):
        seen.append((record["samples"], record["indices"]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(random_state=0, **parameters).fit(X, y)
        SCSKernelSVC(random_state=0, callback=record_positions, **parameters).fit(X, y)
    return model, seen


def test_a_rare_class_is_learned_with_the_defaults_and_balanced():
    X, y = _rare_problem(8000, 0)
    X_test, y_test = _rare_problem(8000, 1)
    default, seen = _fit(X, y)
    # the balanced test grows S_k past |S_0| while the rare class is misclassified
    assert default.sample_size_[0] > seen[0][0]
    assert balanced_accuracy_score(y_test, default.predict(X_test)) > 0.8
    balanced, seen = _fit(X, y, class_weight="balanced")
    assert balanced_accuracy_score(y_test, balanced.predict(X_test)) > 0.9


def test_balanced_sample_takes_the_rare_class_at_its_weights_rate():
    # 1% of 20000 rows, at most 1000 samples: the rare class's half of the weights would ask
    # 500 of them, its 200 rows are all taken, at 20% of every S_k
    X, y = _rare_problem(20000, 0)
    model, seen = _fit(X, y, class_weight="balanced", max_samples=1000)
    for size, positions in (seen[0], seen[-1]):
        assert abs(np.count_nonzero(y[positions]) - size * np.count_nonzero(y) / 1000) <= 1.5
    assert model.sample_size_[0] == seen[-1][0]


def test_balanced_probabilities_are_calibrated_on_the_data_rates():
    # held-out points come in the class-weighted order; their weights restore the data's
    # class rates, so the mean probability of the rare class stays near its rate
    X, y = _rare_problem(8000, 0)
    X_test, _ = _rare_problem(8000, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SCSKernelSVC(class_weight="balanced", probability=True, random_state=0,
                             max_samples=2000).fit(X, y)
    assert np.mean(model.predict_proba(X_test)[:, 1]) == pytest.approx(np.mean(y), abs=0.01)
