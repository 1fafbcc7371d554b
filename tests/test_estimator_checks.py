"""scikit-learn's estimator contract, for every estimator of the package."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from stochsvm import ComidClassifier, PegasosClassifier, RDAClassifier, SADMMClassifier

ESTIMATORS = [
    SADMMClassifier(random_state=0),
    SADMMClassifier(penalty="l2", average=False, random_state=0),
    RDAClassifier(random_state=0),
    RDAClassifier(penalty="elasticnet", loss="log_loss", average=True, sparsity_boost=0.5,
                  random_state=0),
    ComidClassifier(random_state=0),
    ComidClassifier(penalty="elasticnet", average=True, loss="log_loss", random_state=0),
    PegasosClassifier(random_state=0),
    PegasosClassifier(batch_size=4, projection=False, average=True, loss="log_loss",
                      random_state=0),
]

# Stochastic solvers visit samples in a random order, so a model fitted with integer sample
# weights is not identical to one fitted on repeated samples (the number of steps differs);
# scikit-learn's SGDClassifier is exempt from this check for the same reason.
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": "stochastic order differs",
    "check_sample_weight_equivalence_on_sparse_data": "stochastic order differs",
}


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda est: EXPECTED_FAILURES)
def test_sklearn_contract(estimator, check):
    check(estimator)
