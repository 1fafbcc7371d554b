"""
==================================================================
Kernel SVM by stochastic conjugate subgradients: SCS against SVC
==================================================================

:class:`stochsvm.SCSKernelSVC` minimizes the same objective as scikit-learn's ``SVC``
(``C`` and ``gamma`` mean the same; its intercept is regularized) by the stochastic conjugate
subgradient method: it works on a random sample of the training set that grows with the
iterations and keeps the kernel matrix of that sample only. This example fits both on
the two moons and draws their decision functions side by side.
"""

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

import stochsvm

X, y = make_moons(n_samples=1000, noise=0.2, random_state=0)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)

models = {
    "SCSKernelSVC": stochsvm.SCSKernelSVC(C=1.0, gamma=1.0, initial_samples=100,
                                          samples_per_iter=50, random_state=0),
    "SVC": SVC(C=1.0, gamma=1.0),
}
accuracy = {}
for name, model in models.items():
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    accuracy[name] = model.score(X_test, y_test)
    print(f"{name}: test accuracy {accuracy[name]:.3f}, fit {seconds:.2f} s")

scs = models["SCSKernelSVC"]
print(f"SCS: {scs.n_iter_} iterations, {len(scs.support_vectors_)} support vectors, last "
      f"working sample {scs.history_[-1]['samples']} points")

# %%
# The zero level (solid) is the decision boundary, the dashed levels are the margins
# :math:`f(x) = \pm 1`.
xx, yy = np.meshgrid(np.linspace(-1.5, 2.5, 200), np.linspace(-1.0, 1.5, 200))
grid = np.c_[xx.ravel(), yy.ravel()]
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    values = model.decision_function(grid).reshape(xx.shape)
    ax.contourf(xx, yy, values, levels=20, cmap="RdBu", alpha=0.6)
    ax.contour(xx, yy, values, levels=[-1, 0, 1], colors="k", linestyles=["--", "-", "--"])
    ax.scatter(X_train[:, 0], X_train[:, 1], c=y_train, cmap="RdBu", edgecolors="k", s=12)
    ax.set_title(f"{name}: test accuracy {accuracy[name]:.3f}")
fig.tight_layout()
plt.show()
