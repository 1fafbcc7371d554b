"""scikit-learn's estimator contract for the S3GD family."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm.linear.s3gd import S3GDClassifier
from stochsvm.linear.scv import SCVClassifier
from stochsvm.linear.sgd import MiniBatchSGDClassifier
from stochsvm.linear.ssgd import StratifiedSGDClassifier
from stochsvm.linear.svrg import ProxSVRGClassifier

from .test_estimator_checks import EXPECTED_FAILURES

ESTIMATORS = [
    MiniBatchSGDClassifier(random_state=0),
    MiniBatchSGDClassifier(penalty="l1", sampling="weighted", average=True, random_state=0),
    StratifiedSGDClassifier(batch_size=2, random_state=0),
    ProxSVRGClassifier(penalty="elasticnet", loss="smoothed_hinge", random_state=0),
    SCVClassifier(loss="squared_hinge", random_state=0),
    S3GDClassifier(n_anchors=5, n_neighbors=2, random_state=0),
    S3GDClassifier(n_anchors=3, n_neighbors=1, penalty="l1", bandwidth="nearest_distance",
                   average=True, random_state=0),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_contract(estimator, check):
    check(estimator)
