"""Write the format-1 model files of ``tests/data/format1`` (run with stochsvm 0.1.0).

Each file is a model of release 0.1.0 saved by its ``stochsvm.save`` (model file format 1);
``expected.npz`` holds its decision values on ``X`` so ``tests/test_io.py`` can check that the
current release loads these files bit for bit. Run from a checkout of 0.1.0:
``python tests/data/make_format1_files.py tests/data/format1``.
"""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import stochsvm

ESTIMATORS = {
    "SADMMClassifier": dict(max_iter=3, tol=None),
    "RDAClassifier": dict(max_iter=3, tol=None),
    "ComidClassifier": dict(max_iter=3, tol=None, loss="log_loss"),
    "PegasosClassifier": dict(max_iter=3, tol=None),
    "S3GDClassifier": dict(max_iter=3, tol=None, n_anchors=5, n_neighbors=2),
    "MiniBatchSGDClassifier": dict(max_iter=3, tol=None),
    "StratifiedSGDClassifier": dict(max_iter=3, tol=None),
    "ProxSVRGClassifier": dict(max_iter=3, tol=None),
    "SCVClassifier": dict(max_iter=3, tol=None),
    "SCSKernelSVC": dict(initial_samples=20, samples_per_iter=10, max_iter=20),
    "WolfeKernelSVC": dict(max_iter=20),
    "KernelPegasosSVC": dict(max_iter=2),
    "TSGS3VM": dict(max_iter=4),
    "FRS3VM": dict(max_iter=4),
    "BGS3VM": dict(),
    "SelfLabelingTSVM": dict(),
    "CCCPTSVM": dict(),
}


def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y3 = np.digitize(X[:, 0], [-0.4, 0.4])
    return X, y, y3


def main(out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    X, y, y3 = data()
    expected = {}
    for name, params in ESTIMATORS.items():
        cls = stochsvm.registry.solver_class(name)
        problem = stochsvm.registry.SOLVERS[name].problem
        semi = problem == "semi-supervised"
        for variant, labels, features in (("binary", y, X), ("multiclass", y3, X),
                                          ("sparse", y, sp.csr_matrix(X))):
            if variant == "sparse" and name in ("SelfLabelingTSVM", "CCCPTSVM", "BGS3VM"):
                continue
            labels = labels.copy()
            if semi:
                labels[::3] = -1
            params = dict(params)
            if "random_state" in cls().get_params():
                params["random_state"] = 0
            model = cls(**params).fit(features, labels)
            stochsvm.save(model, out / f"{name}-{variant}.stochsvm")
            expected[f"{name}-{variant}"] = model.decision_function(features)
    np.savez(out / "expected.npz", X=X, **expected)


if __name__ == "__main__":
    main(sys.argv[1])
