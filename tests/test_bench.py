"""The benchmark harness, the standard figures and ``stochsvm reproduce``."""

import json
import sys
import time
import types

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import SGDClassifier

from stochsvm.bench import figures, harness
from stochsvm.cli import main

from .reference import binary_breast_cancer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Sleeper(ClassifierMixin, BaseEstimator):
    """Sleeps in fit: a run that overstays any time limit (no callback)."""

    def __init__(self, seconds=60.0):
        self.seconds = seconds

    def fit(self, X, y):
        time.sleep(self.seconds)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


class _Allocator(ClassifierMixin, BaseEstimator):
    """Touches ``n_bytes`` of fresh memory in fit; ``fail=True`` raises instead."""

    def __init__(self, n_bytes=0, fail=False):
        self.n_bytes = n_bytes
        self.fail = fail

    def fit(self, X, y):
        if self.fail:
            raise ValueError("deliberate failure")
        block = np.ones(self.n_bytes // 8)
        self.total_ = float(block.sum())
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(X.shape[0], self.classes_[0])


def _dataset():
    X, y = binary_breast_cancer()
    return harness.Dataset("breast cancer", X[:400], y[:400], X[400:], y[400:])


def test_hard_time_limit_kills_the_run():
    method = harness.Method("sleeper", lambda seed: _Sleeper(60.0), origin="peer")
    began = time.perf_counter()
    records = harness.run_grid([method], [_dataset()], [0], time_limit=0.5, grace=0.5)
    elapsed = time.perf_counter() - began
    assert elapsed < 30.0  # nowhere near the 60 s the fit would take
    (record,) = records
    assert record["status"] == "timed_out"
    assert 1.0 <= record["seconds"] < 30.0
    assert "test_accuracy" not in record


def test_soft_time_limit_stops_a_callback_estimator_with_its_history():
    from stochsvm.linear import SADMMClassifier

    method = harness.Method(
        "SADMM", lambda seed: SADMMClassifier(max_iter=10**6, tol=None, random_state=seed))
    (record,) = harness.run_grid([method], [_dataset()], [0], time_limit=0.3, grace=120.0)
    assert record["status"] == "stopped_at_time_limit"
    assert 0.3 <= record["fit_seconds"] < 120.0
    assert 1 <= record["n_iter"] < 10**6
    assert len(record["history"]) == record["n_iter"]
    assert all("seconds" in entry for entry in record["history"])
    assert record["test_accuracy"] > 0.85 and np.isfinite(record["objective"])


def test_memory_recorded_and_limited():
    datasets = [_dataset()]
    small = harness.Method("small", lambda seed: _Allocator(0), origin="peer")
    large = harness.Method("large", lambda seed: _Allocator(200 * 2**20), origin="peer")
    huge = harness.Method("huge", lambda seed: _Allocator(8 * 2**30), origin="peer")
    broken = harness.Method("broken", lambda seed: _Allocator(fail=True), origin="peer")
    records = harness.run_grid([small, large, huge, broken], datasets, [0],
                               memory_limit=1 * 2**30)
    by_method = {record["method"]: record for record in records}
    assert by_method["small"]["status"] == "ok"
    assert by_method["large"]["status"] == "ok"
    assert by_method["large"]["peak_memory_bytes"] >= 190 * 2**20
    assert by_method["small"]["peak_memory_bytes"] < 100 * 2**20
    assert by_method["huge"]["status"] == "out_of_memory"
    assert by_method["broken"]["status"] == "failed"
    assert "deliberate failure" in by_method["broken"]["error"]


def test_in_process_fallback_records_memory():
    method = harness.Method("large", lambda seed: _Allocator(100 * 2**20), origin="peer")
    (record,) = harness.run_grid([method], [_dataset()], [3], in_process=True)
    assert record["status"] == "ok" and record["seed"] == 3
    assert record["peak_memory_bytes"] >= 0


def test_peers_side_by_side_tables_and_figures(tmp_path):
    pytest.importorskip("matplotlib")  # the bench extra draws the figures
    from stochsvm.linear import SADMMClassifier

    methods = [
        harness.Method("SADMM", lambda seed: SADMMClassifier(max_iter=5, random_state=seed),
                       measure=lambda estimator, data: {
                           "nonzeros": int(np.count_nonzero(estimator.coef_))}),
        harness.Method("SGDClassifier", lambda seed: SGDClassifier(random_state=seed),
                       origin="peer"),
    ]
    records = harness.run_grid(methods, [_dataset()], [0, 1], time_limit=60.0, workers=2)
    assert [(r["method"], r["seed"]) for r in records] == [
        ("SADMM", 0), ("SADMM", 1), ("SGDClassifier", 0), ("SGDClassifier", 1)]
    for record in records:
        assert record["status"] == "ok", record
        assert record["test_accuracy"] > 0.9
        assert record["peak_memory_bytes"] >= 0
    ours = records[0]
    assert ours["origin"] == "stochsvm" and records[2]["origin"] == "peer"
    assert ours["n_iter"] >= 1 and len(ours["history"]) >= 1 and "nonzeros" in ours
    assert "objective" in ours and "objective" not in records[2]
    summary = harness.summarize(records)
    assert [row["method"] for row in summary] == ["SADMM", "SGDClassifier"]
    assert summary[0]["runs"] == 2 and summary[0]["statuses"] == {"ok": 2}
    assert summary[0]["test_accuracy"]["count"] == 2

    json_path, csv_path = harness.write_tables(records, tmp_path, "grid", extra={"note": "x"})
    stored = json.loads(json_path.read_text())
    assert stored["note"] == "x" and len(stored["records"]) == 4
    lines = csv_path.read_text().strip().splitlines()
    assert len(lines) == 5 and "test_accuracy" in lines[0] and "history" not in lines[0]

    curves = figures.curves_from_records(records, "breast cancer")
    assert set(curves) == {"SADMM"}
    paths = [
        figures.objective_vs_seconds({"breast cancer": {"curves": curves, "optimum": None}},
                                     tmp_path / "objective.png"),
        figures.box_plots({"breast cancer": {r["method"]: [r["test_accuracy"]]
                                             for r in records}}, tmp_path / "box.png"),
        figures.error_vs_samples({"a": {"ours": {"samples": [10, 100],
                                                 "errors": [[0.3, 0.1], [0.2]]},
                                        "batch": {"batch_error": 0.05}}},
                                 tmp_path / "error.png", zoom=20.0),
        figures.gradient_correlation({"a": {"S3GD": 0.9, "SGD": 0.4}, "b": {"S3GD": None}},
                                     tmp_path / "correlation.png"),
    ]
    for path in paths:
        assert path.read_bytes()[:8] == PNG_MAGIC


def _invoke(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def _one_line_error(result, fragment):
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr


@pytest.mark.filterwarnings("ignore")
def test_reproduce_sadmm(tmp_path):
    pytest.importorskip("matplotlib")  # the bench extra draws the figures
    result = _invoke("reproduce", "sadmm", "--smoke", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    for name in ("sadmm_paper_smoke.json", "sadmm_paper_smoke.md", "sadmm_paper_smoke.csv",
                 "sadmm_l1_smoke.png", "sadmm_l2_smoke.png", "sadmm_vi_bound_smoke.png"):
        assert (tmp_path / name).exists(), name
        assert name in result.stdout
    for name in ("sadmm_l1_smoke.png", "sadmm_l2_smoke.png", "sadmm_vi_bound_smoke.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
    report = json.loads((tmp_path / "sadmm_paper_smoke.json").read_text())
    for key in ("selection", "results", "targets", "fig1_vi_bound", "tables", "datasets"):
        assert key in report
    assert set(report["tables"]) == {"results", "targets", "selection", "diagnostics"}
    # smoke mode leaves Fashion-MNIST out: the digits fallback, with its note
    assert set(report["datasets"]) == {"digits_3_vs_8", "digits_even_vs_odd", "sparse_text"}
    assert "Fashion-MNIST not used" in report["configuration"]["fashion_fallback_note"]
    for dataset in report["results"].values():
        assert {"sadmm", "sgd", "linear_svc"} <= set(dataset["l1"])
        assert dataset["l2"]["sadmm"]["final_accuracy"]["median"] > 0.5
    assert "| SADMM (ours)" in (tmp_path / "sadmm_paper_smoke.md").read_text()
    assert report["command"] == "stochsvm reproduce sadmm"
    rows = (tmp_path / "sadmm_paper_smoke.csv").read_text().strip().splitlines()
    assert rows[0].startswith("dataset,penalty,method,alpha,step,runs,final_accuracy_median")
    assert len(rows) == 1 + 3 * 2 * 3  # datasets x penalties x methods


@pytest.mark.filterwarnings("ignore")
def test_reproduce_s3gd(tmp_path):
    pytest.importorskip("matplotlib")  # the bench extra draws the figures
    result = _invoke("reproduce", "s3gd", "--smoke", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    for name in ("s3gd_paper_smoke.json", "s3gd_paper_smoke.md", "s3gd_paper_smoke.csv",
                 "s3gd_objective_smoke.png", "s3gd_correlation_smoke.png"):
        assert (tmp_path / name).exists(), name
    assert (tmp_path / "s3gd_objective_smoke.png").read_bytes()[:8] == PNG_MAGIC
    report = json.loads((tmp_path / "s3gd_paper_smoke.json").read_text())
    assert set(report) == {"config", "results", "targets", "seconds"}
    methods = report["results"]["generated dense"]["methods"]
    assert {"S3GD", "SGD", "SSGD", "Prox-SVRG", "SCV", "sklearn SGDClassifier",
            "sklearn saga", "sklearn lbfgs", "sklearn liblinear"} == set(methods)
    assert -1.0 <= methods["S3GD"]["gradient_correlation"] <= 1.0
    rows = (tmp_path / "s3gd_paper_smoke.csv").read_text().strip().splitlines()
    assert rows[0].startswith("dataset,method,") and len(rows) == 1 + 9


def test_sadmm_fashion_fallback(monkeypatch):
    import stochsvm.datasets
    from stochsvm.bench import sadmm

    def absent(kind="train"):
        raise FileNotFoundError("no Fashion-MNIST files in /nowhere")

    monkeypatch.setattr(stochsvm.datasets, "load_fashion_mnist", absent)
    config = dict(sadmm.SMOKE, use_fashion=True)
    messages = []
    datasets = sadmm.load_datasets(config, messages.append)
    assert list(datasets) == ["digits_3_vs_8", "digits_even_vs_odd", "sparse_text"]
    assert any("/nowhere" in message and "digits" in message for message in messages)
    data = datasets["digits_3_vs_8"]
    assert data["X_train"].shape[1] == 64 and set(np.unique(data["y_train"])) == {0, 1}
    assert data["X_fit"].shape[0] + data["X_validation"].shape[0] == data["X_train"].shape[0]


def test_s3gd_fashion_fallback(monkeypatch):
    import stochsvm.datasets
    from stochsvm.bench import s3gd

    def absent(kind="train"):
        raise FileNotFoundError("no Fashion-MNIST files in /nowhere")

    monkeypatch.setattr(stochsvm.datasets, "load_fashion_mnist", absent)
    messages = []
    config = dict(s3gd.QUICK, digits=False, dense=(50, 3), sparse=None)
    datasets = s3gd.load_datasets(config, messages.append)
    assert list(datasets) == ["generated dense"]
    assert any("Fashion-MNIST skipped" in message for message in messages)


def test_reproduce_errors(monkeypatch, tmp_path):
    _one_line_error(_invoke("reproduce", "nope"), "PAPER")
    _one_line_error(_invoke("reproduce"), "Missing argument")
    monkeypatch.setitem(sys.modules, "stochsvm.bench.scs", None)
    _one_line_error(_invoke("reproduce", "scs", "--out", tmp_path), "not part of this")
    monkeypatch.setitem(sys.modules, "stochsvm.bench.tsgs3vm",
                        types.ModuleType("stochsvm.bench.tsgs3vm"))
    _one_line_error(_invoke("reproduce", "tsgs3vm", "--out", tmp_path), "no run(quick, out_dir)")
    without_smoke = types.ModuleType("stochsvm.bench.tsgs3vm")
    without_smoke.run = lambda quick, out_dir: {}
    monkeypatch.setitem(sys.modules, "stochsvm.bench.tsgs3vm", without_smoke)
    _one_line_error(_invoke("reproduce", "tsgs3vm", "--smoke", "--out", tmp_path),
                    "no smoke mode")
    failing = types.ModuleType("stochsvm.bench.tsgs3vm")

    def run(quick, out_dir):
        raise RuntimeError("the experiment broke\nsecond line")

    failing.run = run
    monkeypatch.setitem(sys.modules, "stochsvm.bench.tsgs3vm", failing)
    _one_line_error(_invoke("reproduce", "tsgs3vm", "--out", tmp_path), "the experiment broke")


def test_reproduce_dispatches_quick_and_out(monkeypatch, tmp_path):
    calls = []
    module = types.ModuleType("stochsvm.bench.scs")

    def run(quick, out_dir):
        calls.append((quick, out_dir))
        (tmp_path / "scs_paper_quick.json").write_text("{}")
        return {}

    module.run = run
    monkeypatch.setitem(sys.modules, "stochsvm.bench.scs", module)
    result = _invoke("reproduce", "scs", "--quick", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert calls == [(True, str(tmp_path))]
    assert "scs_paper_quick.json" in result.stdout


@pytest.mark.filterwarnings("ignore")
def test_bench_command_runs_solvers_and_peers(tmp_path):
    pytest.importorskip("matplotlib")  # the bench extra draws the figures
    from sklearn.datasets import dump_svmlight_file

    X, y = binary_breast_cancer()
    data = tmp_path / "train.svm"
    dump_svmlight_file(X[:, :10], y, str(data))
    out = tmp_path / "bench"
    result = _invoke("bench", data, "--solver", "SADMMClassifier", "--peer", "SGDClassifier",
                     "--seeds", 2, "--time-limit", 60, "--param", "alpha=0.001", "--out", out)
    assert result.exit_code == 0, result.output
    assert "SADMMClassifier" in result.stdout and "SGDClassifier" in result.stdout
    stored = json.loads((out / "bench.json").read_text())
    assert [(r["method"], r["seed"]) for r in stored["records"]] == [
        ("SADMMClassifier", 0), ("SADMMClassifier", 1), ("SGDClassifier", 0),
        ("SGDClassifier", 1)]
    for record in stored["records"]:
        assert record["status"] == "ok" and record["test_accuracy"] > 0.85
    assert stored["dataset"]["n_test"] == 143  # a stratified quarter of 569
    assert len((out / "bench.csv").read_text().strip().splitlines()) == 5
    assert (out / "bench_accuracy.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.filterwarnings("ignore")
def test_bench_command_with_a_test_file_runs_every_peer(tmp_path):
    # LIBSVM files load with 32-bit indices: liblinear and libsvm peers accept nothing else
    pytest.importorskip("matplotlib")
    from sklearn.datasets import dump_svmlight_file

    from stochsvm.bench.compare import PEERS

    X, y = binary_breast_cancer()
    train, test = tmp_path / "train.svm", tmp_path / "test.svm"
    dump_svmlight_file(X[:400, :10], y[:400], str(train))
    dump_svmlight_file(X[400:, :10], y[400:], str(test))
    peers = [argument for name in PEERS for argument in ("--peer", name)]
    result = _invoke("bench", train, "--test", test, *peers, "--seeds", 1, "--out",
                     tmp_path / "out")
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert {record["method"]: record["status"] for record in stored["records"]} == {
        "SADMMClassifier": "ok", **{name: "ok" for name in PEERS}}


@pytest.mark.filterwarnings("ignore")
def test_a_failed_bench_run_says_why_and_exits_non_zero(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from sklearn.datasets import dump_svmlight_file
    from sklearn.linear_model import SGDClassifier

    from stochsvm.bench import compare

    def broken(seed):
        return SGDClassifier(alpha=-1.0, random_state=seed)  # refused by its fit

    monkeypatch.setitem(compare.PEERS, "SGDClassifier", broken)
    X, y = binary_breast_cancer()
    data = tmp_path / "train.svm"
    dump_svmlight_file(X[:, :5], y, str(data))
    result = _invoke("bench", data, "--peer", "SGDClassifier", "--seeds", 1, "--out",
                     tmp_path / "out")
    assert result.exit_code != 0
    assert "SGDClassifier failed:" in result.stderr and "alpha" in result.stderr
    assert "1 of 2 method(s) failed: SGDClassifier" in result.stderr
    assert (tmp_path / "out" / "bench.json").exists()  # the results are still written


def test_bench_command_errors(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = binary_breast_cancer()
    data = tmp_path / "train.svm"
    dump_svmlight_file(X[:, :5], y, str(data))
    _one_line_error(_invoke("bench", data, "--peer", "Nope"), "known peers")
    _one_line_error(_invoke("bench", data, "--solver", "Nope"), "known solvers")
    _one_line_error(_invoke("bench", data, "--param", "nonsense=1"), "no --solver has nonsense")
    _one_line_error(_invoke("bench", data, "--seeds", 0), "--seeds")
    _one_line_error(_invoke("bench", tmp_path / "missing.svm"), "no such file")


@pytest.mark.parametrize("paper", ["scs", "tsgs3vm"])
def test_reproduce_kernel_and_semi_supervised_papers(tmp_path, paper):
    pytest.importorskip("matplotlib")
    result = _invoke("reproduce", paper, "--smoke", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    written = sorted(path.name for path in tmp_path.iterdir())
    assert any(name.endswith(".json") for name in written), written
    pictures = [tmp_path / name for name in written if name.endswith(".png")]
    assert pictures and all(path.read_bytes()[:8] == PNG_MAGIC for path in pictures)
    for path in tmp_path.glob("*.json"):
        json.loads(path.read_text())
