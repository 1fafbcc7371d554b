"""The README's main job: the quick demo end to end, the default demo's building blocks on tiny
sizes, and the two ways to start it (``python -m stochsvm``, ``stochsvm demo``)."""

import dataclasses
import importlib.util
import runpy
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

import stochsvm.demo
from stochsvm.bench import harness
from stochsvm.cli import main
from stochsvm.demo import (
    DemoSettings,
    comparisons,
    distributed,
    linear,
    run_demo,
    scale,
    semi_supervised,
)
from stochsvm.demo.report import add_speed_ups, format_table, verdicts, write_figure

TINY = DemoSettings(kernel_samples=1500, semi_supervised_samples=800, n_labeled=40,
                    semi_supervised_test_samples=400, text_samples=1500,
                    text_test_samples=400, text_features=3000, tokens_per_document=14,
                    time_limit=60.0, use_fashion_mnist=False, use_dask=False)


def _fashion_mnist_installed():
    from stochsvm.datasets import load_fashion_mnist

    try:
        load_fashion_mnist(kind="test")
    except (FileNotFoundError, OSError):
        return False
    return True


def test_quick_demo_runs_every_comparison_and_writes_the_figure(tmp_path):
    pytest.importorskip("matplotlib")
    lines = []
    figure = tmp_path / "demo.png"
    rows = run_demo(quick=True, print_function=lines.append, figure_path=str(figure))
    assert {row["dataset"] for row in rows} == {"breast cancer", "digits (even/odd)"}
    assert {row["comparison"] for row in rows} == {
        "linear hinge", "linear logistic", "kernel rbf", "semi-supervised"}
    assert len(rows) == 24
    for row in rows:
        # every model learns something on both sets (chance is about 0.5-0.63)
        assert row["accuracy"] > 0.7, row
    fully_supervised = [row for row in rows if row["comparison"] != "semi-supervised"]
    assert min(row["accuracy"] for row in fully_supervised) > 0.85
    assert figure.stat().st_size > 10_000
    assert any("figure:" in line for line in lines)


def _intel_installed():
    """Whether the demo adds scikit-learn-intelex's SVC (``stochsvm.demo.kernel``)."""
    try:
        return all(importlib.util.find_spec(name) is not None
                   for name in ("daal4py", "sklearnex"))
    except (ImportError, ValueError):
        return False


def test_default_demo_on_tiny_sizes_prints_one_table_and_writes_the_figure(tmp_path,
                                                                           monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(scale, "dask_installed", lambda: False)
    lines = []
    figure = tmp_path / "demo.png"
    settings = dataclasses.replace(TINY, use_dask=True)
    rows = run_demo(print_function=lines.append, figure_path=str(figure), settings=settings,
                    progress=False)
    expected = {
        # scikit-learn-intelex's SVC joins the peers where it is installed
        "kernel": ["SCSKernelSVC", "SVC"] + (["scikit-learn-intelex SVC"] if _intel_installed()
                                             else [])
        + ["Nystroem + LinearSVC", "RBFSampler + SGDClassifier"],
        "semi-supervised": ["TSGS3VM", 'LabelSpreading(kernel="knn")', "SVC on the 40 labels"],
        "linear": ['SADMMClassifier(penalty="l1")', "S3GDClassifier", "SGDClassifier",
                   'SGDClassifier(penalty="l1")', "LinearSVC"],
    }
    assert [(row["task"], row["model"]) for row in rows] == [
        (task, model) for task, models in expected.items() for model in models]
    for row in rows:
        assert row["status"] == "ok", row
        assert row["accuracy"] > 0.6, row  # chance is about 0.5
        assert row["seconds"] > 0 and row["memory_bytes"] is not None
        assert row["reference"] == (row["model"] in ("SCSKernelSVC", "TSGS3VM",
                                                     'SADMMClassifier(penalty="l1")'))
        assert (row["speed_up"] is None) == row["reference"]
        assert ("nonzero_coefficients" in row) == (row["task"] == "linear")
    text = "\n".join(lines)
    header = next(line for line in lines if line.startswith("task"))
    for column in ("model", "test accuracy", "seconds", "speed-up", "memory", "nonzero coef."):
        assert column in header
    assert "stochsvm.SCSKernelSVC" in text and "where stochsvm wins and loses:" in text
    assert "Dask row skipped: dask is not installed" in text
    assert "generated clusters" in text
    assert figure.stat().st_size > 10_000
    # the table's record beside the figure: the same rows and the settings that made them
    import json

    record = json.loads((tmp_path / "demo.json").read_text())
    assert [(row["task"], row["model"], row["accuracy"]) for row in record["rows"]] == [
        (row["task"], row["model"], row["accuracy"]) for row in rows]
    assert record["settings"]["kernel_samples"] == TINY.kernel_samples
    assert record["seconds"] > record["warm_up_seconds"] > 0
    markdown = (tmp_path / "demo.md").read_text().splitlines()
    assert markdown[0].startswith("| task | model | test accuracy |")
    assert len(markdown) == 2 + len(rows)


def test_a_fit_past_the_time_limit_is_killed_and_reported():
    class Sleeper:
        def fit(self, X, y):
            time.sleep(30)

    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    dataset = harness.Dataset("toy", X, y, X, y)
    from sklearn.dummy import DummyClassifier

    comparison = comparisons.Comparison("toy", dataset, [
        harness.Method("dummy", lambda seed: DummyClassifier()),
        harness.Method("sleeper", lambda seed: Sleeper(), origin="peer"),
    ])
    finished = []
    rows = add_speed_ups(comparisons.run_comparisons([comparison], time_limit=1.0,
                                                     on_finished=finished.append))
    assert len(finished) == 2
    assert rows[0]["status"] == "ok" and rows[0]["accuracy"] == 0.5
    assert rows[1]["status"] == "killed" and rows[1]["accuracy"] is None
    assert rows[1]["seconds"] == 1.0 and rows[1]["speed_up_bound"] == ">"
    table = "\n".join(format_table(rows, time_limit=1.0, workers=2))
    assert "> 1" in table and "killed when fit and test prediction" in table
    assert "beats sleeper (killed at the time limit)" in " ".join(verdicts(rows))


def _row(task, model, origin, accuracy, seconds, status="ok"):
    return {"task": task, "model": model, "origin": origin, "status": status,
            "accuracy": accuracy, "seconds": seconds, "memory_bytes": 2 ** 20,
            "converged": True}


def test_speed_ups_and_verdicts_say_where_the_package_loses():
    rows = add_speed_ups([
        _row("kernel", "Ours", "stochsvm", 0.90, 10.0),
        _row("kernel", "Faster and better", "peer", 0.91, 2.0),
        _row("kernel", "Faster and worse", "peer", 0.85, 5.0),
        _row("kernel", "Slower and worse", "peer", 0.80, 40.0),
        _row("kernel", "Slower and as good", "peer", 0.9004, 20.0),
        _row("kernel", "Killed", "peer", None, 30.0, status="killed"),
        _row("semi", "Ours killed", "stochsvm", None, 30.0, status="killed"),
        _row("semi", "Peer", "peer", 0.7, 3.0),
    ])
    ratios = {row["model"]: (row["speed_up_bound"], row["speed_up"]) for row in rows}
    assert ratios["Ours"] == (None, None)
    assert ratios["Faster and better"] == (None, 0.2)
    assert ratios["Killed"] == (">", 3.0)
    assert ratios["Peer"] == ("<", 0.1)
    text = " ".join(" ".join(verdicts(rows)).split())  # one line, the wrapping undone
    kernel, semi = text[:text.index("semi:")], text[text.index("semi:"):]
    assert "loses to Faster and better (5.0x faster, 1.0 points more accurate)" in kernel
    assert "trades accuracy for time with Faster and worse" in kernel
    assert "Slower and worse (4.0x slower, 10.0 points less accurate)" in kernel
    assert "Slower and as good (2.0x slower, as accurate)" in kernel
    assert "Killed (killed at the time limit)" in kernel
    assert "stochsvm.Ours killed was killed at the time limit; Peer finished." in semi
    table = format_table(rows, time_limit=30.0, workers=2)
    assert any("stochsvm.Ours" in line and "ref" in line for line in table)
    assert any(line.startswith("kernel") and "Faster and better" in line and "0.2x" in line
               for line in table)


def test_figure_marks_killed_fits(tmp_path):
    pytest.importorskip("matplotlib")
    rows = add_speed_ups([_row("kernel", "Ours", "stochsvm", 0.9, 3.0),
                          _row("kernel", "SVC", "peer", None, 30.0, status="killed"),
                          _row("linear", "Ours", "stochsvm", 0.8, 0.5),
                          _row("linear", "Peer", "peer", 0.82, 0.1)])
    written = write_figure(rows, tmp_path / "figure.png", time_limit=30.0)
    assert written == str(tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 10_000


def test_semi_supervised_data_fall_back_to_generated_clusters(monkeypatch):
    def missing(*arguments, **keywords):
        raise FileNotFoundError("no Fashion-MNIST files here")

    monkeypatch.setattr("stochsvm.datasets.load_fashion_mnist", missing)
    comparison = semi_supervised.semi_supervised_comparison(300, 20, test_samples=100)
    assert comparison.dataset.X_train.shape == (300, 20)
    assert comparison.dataset.X_test.shape == (100, 20)
    assert np.sum(comparison.dataset.y_train != -1) == 20
    assert set(np.unique(comparison.dataset.y_test)) == set(range(10))
    assert "Fashion-MNIST is not installed (no Fashion-MNIST files here)" in comparison.notes[0]


@pytest.mark.skipif(not _fashion_mnist_installed(), reason="Fashion-MNIST is not installed")
def test_semi_supervised_data_use_fashion_mnist_ten_classes():
    comparison = semi_supervised.semi_supervised_comparison(2000, 100)
    dataset = comparison.dataset
    assert dataset.X_train.shape == (2000, 784) and dataset.X_test.shape == (10000, 784)
    assert set(np.unique(dataset.y_train)) == {-1, *range(10)}
    # stratified: about 10 labels a class
    counts = np.bincount(dataset.y_train[dataset.y_train != -1], minlength=10)
    assert counts.sum() == 100 and counts.min() >= 7
    assert np.all(np.bincount(dataset.y_test) == 1000)
    assert "Fashion-MNIST, 10 classes" in comparison.notes[0]


def test_linear_comparison_is_sparse_text_and_counts_nonzero_coefficients():
    comparison = linear.linear_comparison(600, 200, 2000, 14)
    assert comparison.dataset.X_train.format == "csr"
    assert comparison.dataset.X_train.shape == (600, 2000)
    record = comparisons.fit_and_score(comparison.methods[0], comparison.dataset, seed=0)
    assert 0 < record["nonzero_coefficients"] <= 2000
    assert 0.5 < record["accuracy"] <= 1.0


def test_dask_row_trains_on_a_local_cluster():
    pytest.importorskip("dask.distributed")
    from stochsvm import SADMMClassifier

    comparison = linear.linear_comparison(2000, 300, 1500, 14)
    comparison.methods[0].make = lambda seed: SADMMClassifier(max_iter=3, random_state=seed)
    row = distributed.dask_row(comparison, comparison.methods[0])
    assert row["status"] == "ok", row
    assert row["model"] == 'SADMMClassifier(penalty="l1") on Dask'
    assert row["in_memory_model"] == 'SADMMClassifier(penalty="l1")'
    assert row["accuracy"] > 0.6 and row["seconds"] > 0 and row["setup_seconds"] > 0
    assert row["memory_bytes"] > 0 and row["nonzero_coefficients"] > 0


def test_dask_row_takes_a_cluster_started_beforehand_and_its_blocks_stay_put():
    pytest.importorskip("dask.distributed")
    from stochsvm import SADMMClassifier

    comparison = linear.linear_comparison(2000, 300, 1500, 14)
    comparison.methods[0].make = lambda seed: SADMMClassifier(max_iter=2, random_state=seed)
    starter = distributed.ClusterStarter(2)
    starter.start()
    row = distributed.dask_row(comparison, comparison.methods[0], starter=starter)
    assert row["status"] == "ok", row
    cluster, start_seconds = starter.result()
    assert cluster.status.name == "closed"  # the row closed the cluster it was given
    assert row["setup_seconds"] >= start_seconds > 0
    assert row["accuracy"] > 0.6


def test_rows_moved_to_the_cluster_are_blocks_held_by_their_workers():
    # a round's partitions follow the workers holding the blocks only for persisted blocks;
    # otherwise every round moves rows between the workers
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client

    from stochsvm import SADMMClassifier
    from stochsvm.distributed.blocks import training_blocks
    from stochsvm.distributed.linear import _block_workers, _partitions

    comparison = linear.linear_comparison(2000, 300, 1500, 14)
    with distributed.local_cluster(2) as cluster, Client(cluster) as client:
        X, y = distributed.scatter_rows(client, comparison.dataset.X_train,
                                        comparison.dataset.y_train, 4)
        blocks = training_blocks(X, y, None)
        owners, _ = _block_workers(blocks.X)
        partitions = _partitions(SADMMClassifier(), blocks.X)
        assert len(set(owners)) == 2 and len(partitions) == 2
        for members in partitions:
            assert len({owners[index] for index in members}) == 1


@pytest.mark.parametrize("arguments, quick", [([], False), (["--quick"], True)])
def test_python_dash_m_runs_the_demo_with_its_options(monkeypatch, arguments, quick):
    calls = []
    monkeypatch.setattr(stochsvm.demo, "run_demo", lambda **keywords: calls.append(keywords))
    monkeypatch.setattr(sys, "argv", ["python -m stochsvm", *arguments])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("stochsvm", run_name="__main__")
    assert exit_.value.code == 0
    assert len(calls) == 1 and calls[0]["quick"] is quick
    assert calls[0]["figure_path"] == "stochsvm-demo.png"


def test_python_dash_m_with_a_command_runs_that_command(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["python -m stochsvm", "solvers"])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("stochsvm", run_name="__main__")
    assert exit_.value.code == 0
    assert "SCSKernelSVC" in capsys.readouterr().out


def test_demo_command_options(monkeypatch):
    calls = []
    monkeypatch.setattr(stochsvm.demo, "run_demo", lambda **keywords: calls.append(keywords))
    runner = CliRunner()
    result = runner.invoke(main, ["demo", "--time-limit", "12", "--figure", "out.png"])
    assert result.exit_code == 0, result.output
    assert calls[-1]["quick"] is False and calls[-1]["figure_path"] == "out.png"
    assert calls[-1]["settings"].time_limit == 12.0
    result = runner.invoke(main, ["demo", "--quick", "--time-limit", "12"])
    assert result.exit_code == 2 and "not to --quick" in result.output
    help_text = runner.invoke(main, ["demo", "--help"]).output
    assert f"default: {DemoSettings().time_limit:g}" in help_text


def test_warm_up_runs_the_compiled_anchor_search_of_a_semi_supervised_model(monkeypatch):
    # the semi-supervised task has ten classes: TSGS3VM's default runs its multiclass check,
    # whose compiled nearest-anchor search the timed fit would otherwise compile
    from stochsvm.bench import harness
    from stochsvm.semi import anchor_graph_labels

    comparison = semi_supervised.semi_supervised_comparison(1200, 200, test_samples=300,
                                                            use_fashion_mnist=False)
    searches = []
    original = anchor_graph_labels.anchor_weights
    monkeypatch.setattr(anchor_graph_labels, "anchor_weights",
                        lambda *args, **keywords: searches.append(keywords.get("search"))
                        or original(*args, **keywords))
    harness.warm_up(comparison.methods[:1], [comparison.dataset])
    assert "compiled" in searches


def test_warm_up_of_several_comparisons_forks_the_first(monkeypatch):
    tasks = [linear.linear_comparison(400, 100, 500, 10),
             semi_supervised.semi_supervised_comparison(800, 100, test_samples=200,
                                                        use_fashion_mnist=False)]
    here = []
    monkeypatch.setattr(comparisons, "warm_up_comparison",
                        lambda comparison: here.append(comparison.name))
    assert comparisons.warm_up(tasks) >= 0
    # the forked process warmed the first up (its call is not seen here); this process warmed
    # up the others, then the first again (loading it from the compile cache)
    assert here == ["semi-supervised", "linear"]


def test_warm_up_of_the_kernel_task_grows_scs_past_its_budget(monkeypatch):
    # the default SCS fit of the full task stores Q^k in 16 bits and grows S_k past the
    # budget; the warm-up compiles those loops (with a fit of a few rows alone they compiled
    # inside the timed fit)
    from stochsvm.bench import harness
    from stochsvm.demo import kernel
    from stochsvm.kernel import scs_adaptive

    comparison = kernel.kernel_comparison(4000)
    past_the_budget = []
    original = scs_adaptive.computed_products
    monkeypatch.setattr(scs_adaptive, "computed_products",
                        lambda *args: past_the_budget.append(args[0]) or original(*args))
    # in this process (where fork is available it runs in a forked one, which this list
    # cannot see: that keeps numba's OpenMP threads out of the process the fits fork from)
    monkeypatch.setattr(harness, "fork_available", lambda: False)
    harness.warm_up(comparison.methods[:1], [comparison.dataset])
    assert past_the_budget
