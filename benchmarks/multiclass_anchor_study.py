r"""The anchors of TSGS3VM's multiclass anchor graph candidate: how many, and how cheap a
k-means.

A study behind a default. On the data sets and label draws of
``benchmarks/semi_multiclass.py`` (its :func:`load_sets` and :func:`draw_labels`; 10 and 100
labels a class, draws 0-1, the first 5000 test rows), it builds the candidate
(:func:`stochsvm.semi.anchor_graph_labels.build_anchor_graph_labels`) under each
configuration of :data:`CONFIGURATIONS` and scores AGR's multiclass prediction on the test
rows at each graph weight of :data:`GRAPH_WEIGHTS`:

* ``anchors``: a count, or ``"rule"`` (:func:`~stochsvm.semi.multiclass_check.
  multiclass_anchor_count`: one anchor per 8 unlabeled rows, at most 20 a label, within
  512-2048);
* the k-means: ``initialization`` (``"k-means++"`` or ``"random"`` rows), ``epochs``, the
  float type and ``rows_per_center`` of its sample (at least 10,000 rows);
* ``neighbors``: the anchors a row is tied to.

Writes ``results/multiclass_anchor_study.{json,md,png}``: per set and labels a class, the mean
test accuracy over the draws at the default graph weight (0.1) and at the best one, and the
seconds of the build.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from semi_multiclass import draw_labels, load_sets  # noqa: E402

from stochsvm._core.anchors import anchor_weights  # noqa: E402
from stochsvm.bench import harness  # noqa: E402
from stochsvm.semi import anchor_graph_labels  # noqa: E402
from stochsvm.semi.multiclass_check import multiclass_anchor_count  # noqa: E402

GRAPH_WEIGHTS = (0.01, 0.03, 0.1, 0.3, 1.0)
DEFAULT_WEIGHT = 0.1
DRAWS = 2
TEST_ROWS = 5000
#: (name, anchors, initialization, epochs, float type, rows a center, neighbors)
CONFIGURATIONS = (
    ("512, k-means++ 10 epochs float64", 512, "k-means++", 10, np.float64, 20, 5),
    ("default: rule, random 5 epochs float32", "rule", "random", 5, np.float32, 10, 5),
    ("rule, random 2 epochs float32", "rule", "random", 2, np.float32, 10, 5),
    ("rule, random 5 epochs, 5 rows a center", "rule", "random", 5, np.float32, 5, 5),
    ("rule, 3 neighbors", "rule", "random", 5, np.float32, 10, 3),
    ("1024, random 5 epochs float32", 1024, "random", 5, np.float32, 10, 5),
    ("2048, random 5 epochs float32", 2048, "random", 5, np.float32, 10, 5),
)


def _centers(initialization, epochs, dtype):
    from sklearn.cluster import MiniBatchKMeans

    def centers(X, n_clusters, random_state=None, batch_size=4096):
        model = MiniBatchKMeans(n_clusters=int(n_clusters), init=initialization,
                                random_state=random_state, n_init=1, batch_size=batch_size,
                                max_iter=epochs,
                                init_size=int(min(X.shape[0], 3 * n_clusters)))
        return np.ascontiguousarray(model.fit(X.astype(dtype)).cluster_centers_,
                                    dtype=np.float64)
    return centers


def measure(configuration, X, y, X_test, y_test, per_class, draw):
    name, count, initialization, epochs, dtype, rows_per_center, neighbors = configuration
    semi = draw_labels(y, per_class, draw)
    labeled = semi != -1
    unlabeled = X[~labeled]
    m = (multiclass_anchor_count(unlabeled.shape[0], int(labeled.sum())) if count == "rule"
         else count)
    saved = anchor_graph_labels.kmeans_centers, anchor_graph_labels.ROWS_PER_CENTER
    anchor_graph_labels.kmeans_centers = _centers(initialization, epochs, dtype)
    anchor_graph_labels.ROWS_PER_CENTER = rows_per_center
    try:
        started = time.perf_counter()
        graph = anchor_graph_labels.build_anchor_graph_labels(
            X[labeled], unlabeled.__getitem__, unlabeled.shape[0], m, neighbors, draw)
        seconds = time.perf_counter() - started
    finally:
        anchor_graph_labels.kmeans_centers, anchor_graph_labels.ROWS_PER_CENTER = saved
    n_classes = int(y.max()) + 1
    index, weight = anchor_weights(X_test, graph.anchors, graph.n_neighbors,
                                   anchor_graph_labels.BANDWIDTH, search="compiled")
    accuracy = {}
    for gamma in GRAPH_WEIGHTS:
        values = graph.class_values(np.arange(labeled.sum()), semi[labeled], n_classes,
                                    None, gamma)
        scores = np.einsum("nk,nkc->nc", weight, values[index])
        accuracy[str(gamma)] = float(np.mean(scores.argmax(axis=1) == y_test))
    return {"configuration": name, "anchors": int(graph.anchors.shape[0]),
            "build_seconds": seconds, "accuracy": accuracy}


def run(quick, out, benchmarks_md=None):
    log = harness.elapsed_log()
    records = []
    for data, X, y, X_test, y_test in load_sets(quick):
        X_test, y_test = X_test[:TEST_ROWS], y_test[:TEST_ROWS]
        for per_class in (10, 100):
            for configuration in CONFIGURATIONS:
                for draw in range(1 if quick else DRAWS):
                    record = {"data": data, "n_train": int(X.shape[0]),
                              "labels_per_class": per_class, "draw": draw,
                              **measure(configuration, X, y, X_test, y_test, per_class, draw)}
                    records.append(record)
                    log(f"{data} {per_class}/class {record['configuration']} draw {draw}: "
                        f"{record['accuracy'][str(DEFAULT_WEIGHT)]:.4f} "
                        f"({record['build_seconds']:.1f} s)")
    rows = {}
    for record in records:
        rows.setdefault((record["data"], record["labels_per_class"]), {}).setdefault(
            record["configuration"], []).append(record)
    names = [configuration[0] for configuration in CONFIGURATIONS]
    lines = [f"Mean test accuracy over {1 if quick else DRAWS} label draws at the graph weight "
             f"{DEFAULT_WEIGHT} (best weight of {list(GRAPH_WEIGHTS)} in brackets), and the "
             "seconds of the build (k-means, anchor weights, reduced Laplacian; 2 threads).",
             "", "| data | labels/class | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    summary = []
    for (data, per_class), by_name in rows.items():
        cells = []
        for name in names:
            group = by_name[name]
            means = {gamma: float(np.mean([r["accuracy"][gamma] for r in group]))
                     for gamma in group[0]["accuracy"]}
            seconds = float(np.mean([r["build_seconds"] for r in group]))
            summary.append({"data": data, "labels_per_class": per_class, "configuration": name,
                            "accuracy": means[str(DEFAULT_WEIGHT)],
                            "best_accuracy": max(means.values()), "build_seconds": seconds})
            cells.append(f"{means[str(DEFAULT_WEIGHT)]:.3f} [{max(means.values()):.3f}], "
                         f"{seconds:.1f} s")
        lines.append(f"| {data} | {per_class} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    suffix = "_quick" if quick else ""
    harness.write_report(out, f"multiclass_anchor_study{suffix}",
                         "Anchor graph candidate: anchors and k-means", text,
                         {"machine": harness.machine_description(), "records": records,
                          "summary": summary})
    _figure(summary, names, Path(out) / f"multiclass_anchor_study{suffix}.png")
    if benchmarks_md is not None and not quick:
        harness.replace_marked_block(
            benchmarks_md, "multiclass_anchor_study",
            "## Anchor graph candidate: anchors and k-means\n\n"
            "`python benchmarks/multiclass_anchor_study.py` "
            "(![figure](results/multiclass_anchor_study.png))\n\n" + text)
    print(text)


def _figure(summary, names, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys((row["data"], row["labels_per_class"]) for row in summary))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(names)
    for position, name in enumerate(names):
        values = [next(row["accuracy"] for row in summary if row["configuration"] == name
                       and (row["data"], row["labels_per_class"]) == key) for key in keys]
        ax.bar(np.arange(len(keys)) + position * width, values, width, label=name)
    ax.set_xticks(np.arange(len(keys)) + 0.4 - width / 2)
    ax.set_xticklabels([f"{data}\n{per}/class" for data, per in keys], fontsize=7,
                       rotation=30, ha="right")
    ax.set_ylim(0.4, 1.0)
    ax.set_ylabel("test accuracy (graph weight 0.1)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    harness.script_main(run, __doc__, REPOSITORY)
