"""LabeledKFold: cross-validation of semi-supervised estimators on labeled samples only."""

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.semi_supervised import LabelSpreading

from stochsvm import TSGS3VM
from stochsvm.datasets import make_semi_supervised
from stochsvm.semi.model_selection import LabeledKFold


def _moons(n_labeled=30):
    X, y = make_moons(300, noise=0.1, random_state=0)
    return X, y, make_semi_supervised(y, n_labeled=n_labeled, random_state=0)


def test_folds_partition_the_labeled_samples_and_train_on_every_unlabeled_one():
    _, y, y_semi = _moons()
    labeled = np.flatnonzero(y_semi != -1)
    unlabeled = np.flatnonzero(y_semi == -1)
    seen = []
    for train, test in LabeledKFold(5, random_state=0).split(None, y_semi):
        assert np.all(y_semi[test] != -1)
        assert np.isin(unlabeled, train).all()
        assert not np.intersect1d(train, test).size
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
        # stratified: 30 labels, 15 per class, 3 of each class per fold
        assert np.bincount(y_semi[test]).tolist() == [3, 3]
        seen.append(test)
    assert np.array_equal(np.sort(np.concatenate(seen)), labeled)


def test_same_seed_same_folds_and_string_labels():
    _, y, y_semi = _moons()
    first = [test for _, test in LabeledKFold(3, random_state=1).split(None, y_semi)]
    again = [test for _, test in LabeledKFold(3, random_state=1).split(None, y_semi)]
    other = [test for _, test in LabeledKFold(3, random_state=2).split(None, y_semi)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    named = np.array(["left", "right"], dtype=object)[np.maximum(y_semi, 0)]
    named[y_semi == -1] = -1
    for (_, test), expected in zip(LabeledKFold(3, random_state=1).split(None, named), first):
        np.testing.assert_array_equal(test, expected)


def test_grid_search_scores_only_held_out_labels():
    X, _, y_semi = _moons()
    cv = LabeledKFold(3, random_state=0)
    search = GridSearchCV(TSGS3VM(max_iter=30, random_state=0), {"C": [0.1, 10.0]}, cv=cv)
    search.fit(X, y_semi)
    # the grid search's score for C = 10 is the mean accuracy on the held-out labeled folds
    manual = []
    for train, test in cv.split(X, y_semi):
        model = TSGS3VM(C=10.0, max_iter=30, random_state=0).fit(X[train], y_semi[train])
        manual.append(np.mean(model.predict(X[test]) == y_semi[test]))
    assert search.cv_results_["mean_test_score"][1] == pytest.approx(np.mean(manual))
    # with unlabeled samples in the test folds (plain KFold) every one of them counts as an
    # error, so the score would be below the labeled fraction
    assert search.best_score_ > 0.8 > (y_semi != -1).mean()


def test_works_with_scikit_learn_semi_supervised_estimators():
    X, _, y_semi = _moons()
    scores = cross_val_score(LabelSpreading(kernel="knn", n_neighbors=7), X, y_semi,
                             cv=LabeledKFold(3, random_state=0))
    assert scores.shape == (3,) and scores.min() > 0.8


@pytest.mark.parametrize("n_splits", [1, 0, 2.5, True, "3"])
def test_bad_n_splits(n_splits):
    with pytest.raises(ValueError, match="n_splits"):
        LabeledKFold(n_splits)


def test_bad_labels():
    _, y, y_semi = _moons(n_labeled=8)
    with pytest.raises(ValueError, match="unlabeled"):
        list(LabeledKFold(3).split(None, np.full(10, -1)))
    with pytest.raises(ValueError, match="fewer than n_splits"):
        list(LabeledKFold(5).split(None, y_semi))
    with pytest.raises(ValueError, match="needs y"):
        list(LabeledKFold(3).split(np.zeros((10, 2)), None))
    with pytest.raises(ValueError, match="samples but y has"):
        list(LabeledKFold(3).split(np.zeros((10, 2)), y_semi))
    assert LabeledKFold(4).get_n_splits() == 4
    assert "n_splits=4" in repr(LabeledKFold(4))
