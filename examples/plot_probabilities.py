"""
=======================================================
Calibrated probabilities: a reliability diagram
=======================================================

A hinge-loss SVM gives decision values, not probabilities. With ``probability=True`` every
stochsvm classifier fits Platt's sigmoid :math:`1/(1 + e^{A f(x) + B})` on decision values of
samples the model did not train on, after the fit, as ``sklearn.svm.SVC(probability=True)``
does; the model itself is unchanged. :class:`stochsvm.SCSKernelSVC` takes those values from
the points of its random permutation that its working sample :math:`S_k` never reached,
when at least 200 are left, and from cross-validation otherwise.

This example fits SCS and SVC (calibrated the same way by
:class:`sklearn.calibration.CalibratedClassifierCV` with ``ensemble=False``, which replaces
``SVC(probability=True)`` from scikit-learn 1.9) with probabilities on digits (even against odd), and plots
how often the positive class occurs among test samples grouped by predicted probability: a
calibrated model follows the diagonal. The log losses are printed.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.calibration import CalibratedClassifierCV, calibration_curve
from sklearn.datasets import load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

import stochsvm

X, digit = load_digits(return_X_y=True)
X = X / 16.0
y = (digit % 2 == 0).astype(int)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, random_state=0,
                                                    stratify=y)

models = {
    "SCSKernelSVC(probability=True)": stochsvm.SCSKernelSVC(probability=True,
                                                            random_state=0),
    # SVC(probability=True) in scikit-learn < 1.9: one SVC on all the data, Platt's sigmoid
    # fitted on 5-fold cross-validated decision values
    "SVC, calibrated": CalibratedClassifierCV(SVC(), ensemble=False),
    "SADMMClassifier(probability=True), linear": stochsvm.SADMMClassifier(
        probability=True, random_state=0),
}

figure, axis = plt.subplots(figsize=(5.5, 5))
axis.plot([0, 1], [0, 1], color="0.6", linestyle=":", label="perfectly calibrated")
for name, model in models.items():
    model.fit(X_train, y_train)
    positive = model.predict_proba(X_test)[:, 1]
    observed, predicted = calibration_curve(y_test, positive, n_bins=8, strategy="quantile")
    axis.plot(predicted, observed, marker="o",
              label=f"{name}: log loss {log_loss(y_test, positive):.3f}")
    print(f"{name}: log loss {log_loss(y_test, positive):.4f}, "
          f"accuracy {np.mean(model.predict(X_test) == y_test):.4f}")
axis.set_xlabel("predicted probability of an even digit")
axis.set_ylabel("observed frequency")
axis.set_title("Reliability on digits, even vs odd (test set)")
axis.legend(fontsize=7, loc="upper left")
figure.tight_layout()
plt.show()
