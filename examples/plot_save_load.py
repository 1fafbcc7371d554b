"""
=================================
Saving and loading a fitted model
=================================

:func:`stochsvm.save` writes a fitted estimator (or a ``Pipeline`` of scikit-learn scalers
and a stochsvm estimator) to a model file: its arrays in ``.npz`` and everything else in
JSON, with a format version and a checksum. :func:`stochsvm.load` reads it back without
unpickling anything, checking every field first. This example saves a pipeline, loads it,
checks that the loaded model gives the same decision values, and shows that a damaged file
is refused.
"""

# %%
import shutil
import tempfile
import zipfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import stochsvm

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
model = make_pipeline(StandardScaler(),
                      stochsvm.SADMMClassifier(penalty="l2", alpha=1e-3, tol=1e-3,
                                               random_state=0))
model.fit(X_train, y_train)

folder = Path(tempfile.mkdtemp())
path = folder / "model.stochsvm"
stochsvm.save(model, path)
loaded = stochsvm.load(path)
print(f"{path.name}: {path.stat().st_size} bytes; members", zipfile.ZipFile(path).namelist())

before = model.decision_function(X_test)
after = loaded.decision_function(X_test)
print("identical decision values:", np.array_equal(before, after))
print(f"test accuracy, saved {model.score(X_test, y_test):.4f}, "
      f"loaded {loaded.score(X_test, y_test):.4f}")

# %%
# A file whose bytes were changed is refused with an error that says why.
damaged = folder / "damaged.stochsvm"
data = bytearray(path.read_bytes())
data[len(data) // 2] ^= 0xFF
damaged.write_bytes(bytes(data))
try:
    stochsvm.load(damaged)
except (ValueError, OSError) as error:
    print(f"refused: {type(error).__name__}: {error}")

# %%
# Decision values of the loaded model against the original's: every point lies on the
# diagonal.
fig, ax = plt.subplots(figsize=(5, 5))
ax.scatter(before, after, c=y_test, cmap="RdBu", edgecolors="k", s=15)
limits = [min(before.min(), after.min()), max(before.max(), after.max())]
ax.plot(limits, limits, color="gray", linestyle="--")
ax.set(xlabel="decision value, fitted model", ylabel="decision value, loaded from file",
       title="save / load round trip")
fig.tight_layout()
plt.show()
shutil.rmtree(folder)
