"""Write the model files of ``tests/data/one_vs_rest_probabilities`` (run with the code before
the softmax calibration: commit fb89f38).

Each file is a three-class model fitted with ``probability=True`` by the release whose
multiclass probabilities were the one-vs-rest sigmoids normalised to sum to one, saved by its
``stochsvm.save``. ``expected.npz`` holds ``X`` and each model's ``predict_proba(X)`` so that
``tests/test_probability.py`` can check that such a file gives the same probabilities after
the change (it has no ``multiclass_probability_`` field, which means one-vs-rest). Run from
that checkout: ``python tests/data/make_one_vs_rest_probability_files.py
tests/data/one_vs_rest_probabilities``.
"""

import sys
from pathlib import Path

import numpy as np

import stochsvm

ESTIMATORS = {
    "SADMMClassifier": dict(max_iter=5, tol=None),
    "SCSKernelSVC": dict(initial_samples=20, samples_per_iter=10, max_iter=20),
    "TSGS3VM": dict(max_iter=4),
}


def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 4))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.4, 0.4])
    return X, y


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    X, y = data()
    expected = {}
    for name, params in ESTIMATORS.items():
        cls = stochsvm.registry.solver_class(name)
        labels = y.copy()
        if stochsvm.registry.SOLVERS[name].problem == "semi-supervised":
            labels[::3] = -1
        model = cls(probability=True, random_state=0, **params).fit(X, labels)
        stochsvm.save(model, out / f"{name}.stochsvm")
        expected[name] = model.predict_proba(X)
    np.savez(out / "expected.npz", X=X, **expected)


if __name__ == "__main__":
    main(sys.argv[1])
