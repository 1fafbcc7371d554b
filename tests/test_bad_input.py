"""The catalogue of bad input: the same faults, run over every estimator of the package.

Every fault gets a ``ValueError`` (``TypeError`` for a wrong type) that names what was wrong;
none trains a silent wrong model. A fit that fails or is interrupted leaves the estimator
exactly as it was.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from stochsvm import io, registry

from .estimators import small_estimator

NAMES = sorted(registry.SOLVERS)
SEMI = {name for name, entry in registry.SOLVERS.items() if entry.problem == "semi-supervised"}
WITH_SAMPLE_WEIGHT = {name for name in NAMES if name not in SEMI}
WITH_CLASS_WEIGHT = {name for name, entry in registry.SOLVERS.items()
                     if "class_weight" in entry.load()().get_params()}


def _data(name, n_samples=40, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, 4))
    y = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, n_classes + 1)[1:-1]))
    if name in SEMI:
        y = y.copy()
        y[1::3] = -1
    return X, y


def _fit(estimator, X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, y, **kwargs)


@pytest.fixture(params=NAMES)
def name(request):
    return request.param


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features(name, bad):
    X, y = _data(name)
    X[3, 2] = bad
    for features in (X, sp.csr_matrix(X)):
        with pytest.raises(ValueError, match="NaN|infinity"):
            _fit(small_estimator(name), features, y)


def test_empty_data(name):
    X, y = _data(name)
    with pytest.raises(ValueError, match="0 sample"):
        _fit(small_estimator(name), X[:0], y[:0])
    with pytest.raises(ValueError, match="0 feature"):
        _fit(small_estimator(name), X[:, :0], y)


def test_single_class(name):
    X, y = _data(name)
    y = np.where(y == -1, -1, 1)
    with pytest.raises(ValueError, match="only one class"):
        _fit(small_estimator(name), X, y)


def test_length_mismatch(name):
    X, y = _data(name)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        _fit(small_estimator(name), X, y[:-1])


def test_nan_labels(name):
    X, y = _data(name)
    y = y.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _fit(small_estimator(name), X, y)


def test_continuous_labels(name):
    X, y = _data(name)
    values = np.linspace(0.1, 0.9, X.shape[0])
    if name in SEMI:
        values[y == -1] = -1
    with pytest.raises(ValueError, match="Unknown label type"):
        _fit(small_estimator(name), X, values)


@pytest.mark.parametrize("name", sorted(SEMI))
def test_semi_supervised_labels(name):
    X, y = _data(name)
    with pytest.raises(ValueError, match="Every sample is unlabeled"):
        _fit(small_estimator(name), X, np.full_like(y, -1))
    values = np.where(y == -1, -1, y + 0.5)
    with pytest.raises(ValueError, match=r"labeled samples \(y != -1\)"):
        _fit(small_estimator(name), X, values)


def test_complex_sparse_input(name):
    X, y = _data(name)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        _fit(small_estimator(name), sp.csr_matrix(X).astype(np.complex128), y)


def test_other_sparse_formats_are_converted(name):
    X, y = _data(name)
    if name in ("BGS3VM", "SelfLabelingTSVM", "CCCPTSVM", "WolfeKernelSVC"):
        X = X[:30]
        y = y[:30]
    reference = _fit(small_estimator(name), sp.csr_matrix(X), y).decision_function(X)
    for fmt in ("coo", "csc", "lil"):
        values = _fit(small_estimator(name), sp.csr_matrix(X).asformat(fmt), y)
        np.testing.assert_allclose(values.decision_function(X), reference, rtol=1e-10,
                                   atol=1e-12)


def test_wrong_width_at_prediction(name):
    X, y = _data(name)
    model = _fit(small_estimator(name), X, y)
    for method in ("predict", "decision_function"):
        with pytest.raises(ValueError, match="features"):
            getattr(model, method)(X[:, :3])


@pytest.mark.parametrize("name", sorted(WITH_SAMPLE_WEIGHT))
def test_bad_sample_weight(name):
    X, y = _data(name)
    cases = [(np.ones(3), "sample_weight"), (-np.ones(X.shape[0]), "negative"),
             (np.full(X.shape[0], np.nan), "NaN"), (np.zeros(X.shape[0]), "zero for every")]
    for weights, message in cases:
        with pytest.raises(ValueError, match=message):
            _fit(small_estimator(name), X, y, sample_weight=weights)


@pytest.mark.parametrize("name", sorted(WITH_CLASS_WEIGHT))
@pytest.mark.parametrize("class_weight, message", [
    ({0: -1.0}, "class weights must be finite numbers >= 0"),
    ({0: np.nan}, "finite"),
    ({0: 0.0, 1: 0.0}, "zero for every class"),
    ({7: 1.0}, "not in the training labels"),
    ("heavy", "class_weight"),
])
def test_bad_class_weight(name, class_weight, message):
    """A negative class weight used to be accepted and invert the model."""
    X, y = _data(name)
    with pytest.raises(ValueError, match=message):
        _fit(small_estimator(name, class_weight=class_weight), X, y)


# ---------------------------------------------------------------------------------------
# hyper-parameters: every parameter of every estimator at nonsense values
# ---------------------------------------------------------------------------------------
_NOT_CHECKED = {"callback", "verbose", "random_state", "n_jobs", "class_weight"}
# values that are legitimate for these parameters although they look odd
_LEGITIMATE = {
    ("coef0", -1), ("ramp_s", -1),
    ("gamma", 3.5), ("t0", 3.5),  # a number where the default is "scale" / "auto"
    ("alpha", 3.5), ("rho", 3.5),  # the same, the linear defaults alpha="auto", rho="auto"
    ("intercept_scaling", 3.5),  # the same, SADMM's intercept_scaling="auto"
    ("average", 2),  # start averaging after 2 samples
    ("expansion_margin", -1),  # any finite expansion point
}


def _nonsense_values(default):
    if isinstance(default, bool):
        return ["yes", 2]
    if isinstance(default, str):
        return ["no-such-value", 3.5]
    if isinstance(default, (int, float)) or default is None:
        return [-1, math.nan, "no-such-value"]
    return []


def _parameter_cases():
    cases = []
    for name in NAMES:
        parameters = registry.solver_class(name)().get_params()
        for parameter, default in sorted(parameters.items()):
            if parameter in _NOT_CHECKED:
                continue
            for value in _nonsense_values(default):
                if (parameter, value) in _LEGITIMATE:
                    continue
                cases.append(pytest.param(name, parameter, value,
                                          id=f"{name}-{parameter}={value!r}"))
    return cases


@pytest.mark.parametrize("name, parameter, value", _parameter_cases())
def test_nonsense_parameter(name, parameter, value):
    X, y = _data(name)
    estimator = small_estimator(name)
    estimator.set_params(**{parameter: value})
    with pytest.raises((ValueError, TypeError), match=parameter):
        _fit(estimator, X, y)


def test_unknown_strings_list_the_allowed_values():
    X, y = _data("SADMMClassifier")
    with pytest.raises(ValueError, match="'l1'.*|.*'l2'"):
        _fit(small_estimator("SADMMClassifier", penalty="l3"), X, y)
    X, y = _data("SCSKernelSVC")
    with pytest.raises(ValueError, match="float32"):
        _fit(small_estimator("SCSKernelSVC", kernel_dtype="nope"), X, y)


# ---------------------------------------------------------------------------------------
# atomic fits
# ---------------------------------------------------------------------------------------
class _Interrupt:
    """A callback that presses Ctrl-C at its first call."""

    def __init__(self, exception=KeyboardInterrupt):
        self.exception = exception
        self.calls = 0

    def __call__(self, record):
        self.calls += 1
        raise self.exception()


def _snapshot(model):
    return {name: value for name, value in vars(model).items()}


def _assert_same_model(model, before, X):
    assert set(vars(model)) == set(before)
    for key, value in before.items():
        assert vars(model)[key] is value, key


@pytest.mark.parametrize("exception", [KeyboardInterrupt, RuntimeError])
def test_interrupted_refit_leaves_the_model_as_it_was(name, exception):
    X, y = _data(name)
    model = _fit(small_estimator(name), X, y)
    predictions = model.predict(X)
    values = model.decision_function(X)
    before = _snapshot(model)
    # a refit on new label names and new data, interrupted at its first record
    X_new, y_new = _data(name, n_classes=3, seed=1)
    labels = np.where(y_new == -1, -1, y_new + 10)
    interrupt = _Interrupt(exception)
    model.set_params(callback=interrupt)
    if name == "TSGS3VM":
        # the training loop reports the records; with the default supervised check and
        # fewer than 50 labels the refit is an exact SVC on the labels, which reports none
        model.set_params(safe_folds=None)
    with pytest.raises(exception):
        _fit(model, X_new, labels)
    model.set_params(callback=None)
    if name == "TSGS3VM":
        model.set_params(safe_folds=before["safe_folds"])
    assert interrupt.calls >= 1
    _assert_same_model(model, before, X)
    np.testing.assert_array_equal(model.predict(X), predictions)
    np.testing.assert_array_equal(model.decision_function(X), values)


def test_failed_refit_leaves_the_model_as_it_was(name):
    X, y = _data(name)
    model = _fit(small_estimator(name), X, y)
    before = _snapshot(model)
    values = model.decision_function(X)
    X_bad = X.copy()
    X_bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        _fit(model, X_bad, y)
    if name in WITH_SAMPLE_WEIGHT:
        # fails after the labels were read: classes_ must not change either
        with pytest.raises(ValueError):
            _fit(model, X, np.where(y == 0, 5, y), sample_weight=-np.ones(len(y)))
    _assert_same_model(model, before, X)
    np.testing.assert_array_equal(model.decision_function(X), values)


def test_interrupted_first_fit_leaves_the_estimator_unfitted(name):
    X, y = _data(name)
    model = small_estimator(name, callback=_Interrupt())
    before = _snapshot(model)
    with pytest.raises(KeyboardInterrupt):
        _fit(model, X, y)
    _assert_same_model(model, before, X)
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        model.predict(X)


# ---------------------------------------------------------------------------------------
# one-vs-rest in parallel processes
# ---------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore")
def test_n_jobs_gives_the_same_model(name, tmp_path):
    X, y = _data(name, n_samples=45, n_classes=3)
    sequential = _fit(small_estimator(name, n_jobs=1), X, y)
    parallel = _fit(small_estimator(name, n_jobs=2), X, y)
    np.testing.assert_array_equal(parallel.decision_function(X),
                                  sequential.decision_function(X))
    assert [record["problem"] for record in parallel.history_] == \
        [record["problem"] for record in sequential.history_]
    io.save(parallel, tmp_path / "model")
    np.testing.assert_array_equal(io.load(tmp_path / "model").decision_function(X),
                                  sequential.decision_function(X))


def test_history_is_one_flat_list_of_records(name):
    X, y = _data(name, n_samples=45, n_classes=3)
    model = _fit(small_estimator(name), X, y)
    assert isinstance(model.history_, list) and model.history_
    assert all(isinstance(record, dict) for record in model.history_)
    assert {record["problem"] for record in model.history_} == {0, 1, 2}


def test_random_state_instance_accepted(name):
    X, y = _data(name)
    if "random_state" not in registry.solver_class(name)().get_params():
        pytest.skip("deterministic estimator")
    first = _fit(small_estimator(name, random_state=np.random.RandomState(3)), X, y)
    second = _fit(small_estimator(name, random_state=np.random.RandomState(3)), X, y)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))


# ---------------------------------------------------------------------------------------
# sizes past the memory budget
# ---------------------------------------------------------------------------------------
def test_random_fourier_features_past_the_machine_refused_up_front(monkeypatch):
    # n_components=10**9 used to fail inside NumPy's allocator; the fit now names the
    # parameter and the machine's memory before allocating anything
    from stochsvm import RandomFourierFeatures
    from stochsvm._core import kernels

    X = np.random.default_rng(0).normal(size=(5, 784))
    with pytest.raises(MemoryError, match=r"n_components=1000000000.*memory of this machine"):
        RandomFourierFeatures(n_components=10**9).fit(X)
    features = RandomFourierFeatures(n_components=100, random_state=0).fit(X)
    monkeypatch.setattr(kernels, "machine_memory_bytes", lambda: 4000)
    with pytest.raises(MemoryError, match="transform.*smaller batches"):
        features.transform(np.zeros((1000, 784)))


KERNEL = sorted(name for name, entry in registry.SOLVERS.items() if entry.problem == "kernel")


@pytest.mark.parametrize("name", KERNEL)
def test_a_margin_weight_past_double_precision_refused(name):
    # C = 1e30 used to return an all-zero model with a warning; SVC trains the hard-margin
    # model there, and these solvers reach it at a C that double precision resolves
    X, y = _data(name)
    with pytest.raises(ValueError, match=r"C=1e\+30 .* C <= 2\.5e\+16"):
        small_estimator(name, C=1e30).fit(X, y)
    with pytest.raises(ValueError, match="beyond the 1e\\+18"):
        small_estimator(name, C=1e17).fit(X, y, sample_weight=np.full(len(y), 2.0))
    _fit(small_estimator(name, C=1e16), X, y)  # 40 samples: 4e17, accepted


@pytest.mark.parametrize("name", ["TSGS3VM", "FRS3VM"])
def test_feature_dtype_accepts_numpy_types_and_refuses_others(name):
    X, y = _data(name)
    as_string = _fit(small_estimator(name, feature_dtype="float32", random_state=0), X, y)
    for dtype in (np.float32, np.dtype(np.float32)):
        model = _fit(small_estimator(name, feature_dtype=dtype, random_state=0), X, y)
        np.testing.assert_array_equal(model.decision_function(X),
                                      as_string.decision_function(X))
    with pytest.raises(ValueError, match="feature_dtype=.*float64"):
        small_estimator(name, feature_dtype=np.int64).fit(X, y)


# ---------------------------------------------------------------------------------------
# sample and class weights of the semi-supervised estimators
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SEMI))
def test_bad_sample_weight_of_the_semi_supervised(name):
    X, y = _data(name)
    cases = [(np.ones(3), r"sample_weight has shape \(3,\)"),
             (np.ones((X.shape[0], 2)), "one weight per sample"),
             (-np.ones(X.shape[0]), "negative"), (np.full(X.shape[0], np.nan), "NaN"),
             (np.zeros(X.shape[0]), "zero for every")]
    for weights, message in cases:
        with pytest.raises(ValueError, match=message):
            _fit(small_estimator(name), X, y, sample_weight=weights)
    model = _fit(small_estimator(name), X, y)
    with pytest.raises(ValueError, match="negative"):
        model.objective(X, y, sample_weight=-np.ones(X.shape[0]))


@pytest.mark.parametrize("name", sorted(SEMI))
def test_unknown_class_in_class_weight_of_the_semi_supervised(name):
    X, y = _data(name)
    # -1 marks the unlabeled samples: it is no class of the labeled ones
    for class_weight in ({7: 1.0}, {-1: 2.0}):
        with pytest.raises(ValueError, match="not in the training labels"):
            _fit(small_estimator(name, class_weight=class_weight), X, y)


@pytest.mark.parametrize("name", sorted(SEMI))
def test_failed_weighted_refit_leaves_the_semi_supervised_model_as_it_was(name):
    X, y = _data(name)
    model = _fit(small_estimator(name), X, y)
    before = _snapshot(model)
    with pytest.raises(ValueError):
        _fit(model, X, np.where(y == 0, 5, y), sample_weight=-np.ones(len(y)))
    _assert_same_model(model, before, X)


# ---------------------------------------------------------------------------------------
# probabilities
# ---------------------------------------------------------------------------------------
def _two_class_data(name, n_samples=60):
    rng = np.random.RandomState(0)
    X = rng.randn(n_samples, 4)
    y = (X[:, 0] > 0).astype(np.int64)
    if registry.SOLVERS[name].problem == "semi-supervised":
        y[1::2] = -1
    return X, y


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(registry.SOLVERS))
def test_probabilities_with_too_few_samples_of_a_class_refused(name):
    X, y = _two_class_data(name)
    y = y.copy()
    lonely = np.flatnonzero(y == 1)
    y[lonely[1:]] = 0  # one sample of class 1: no fold can hold it out and train on it
    with pytest.raises(ValueError, match="probability=True .* at least 2 labeled samples"):
        small_estimator(name, probability=True).fit(X, y)


@pytest.mark.parametrize("name", sorted(registry.SOLVERS))
def test_probability_must_be_a_boolean(name):
    X, y = _two_class_data(name)
    with pytest.raises(ValueError, match="probability"):
        small_estimator(name, probability="yes").fit(X, y)
