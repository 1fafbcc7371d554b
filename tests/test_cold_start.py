"""The cold-start benchmark: one cheap estimator measured in its own processes.

The record's structure is checked, and that the warm process compiles nothing (every signature
comes from the cache the cold process filled); no seconds are compared.
"""

from .benchmark_scripts import load_script


def test_cold_start_record_of_one_estimator(tmp_path):
    cold_start = load_script("cold_start")
    cache_directory = tmp_path / "numba-cache"
    record = cold_start.measure_estimator("RDAClassifier", cache_directory)

    assert record["estimator"] == "RDAClassifier"
    assert record["problem"] == "linear"
    assert record["parameters"] == {"random_state": 0}
    for key in ("cold_import_seconds", "warm_import_seconds", "cold_first_fit_seconds",
                "warm_first_fit_seconds", "steady_fit_seconds", "compile_event_seconds"):
        assert record[key] >= 0.0, key
    assert record["compile_seconds"] == (record["cold_first_fit_seconds"]
                                         - record["steady_fit_seconds"])
    assert record["under_target"] == (record["cold_first_fit_seconds"]
                                      < cold_start.TARGET_SECONDS)
    assert any(cache_directory.iterdir())  # the cold process filled the cache

    cold, warm = record["cold"], record["warm"]
    assert cold["phase"] == "cold" and warm["phase"] == "warm"
    assert cold["n_samples"] == warm["n_samples"] == 569
    assert cold["n_labeled"] == 569
    assert cold["import_compiled"] == warm["import_compiled"] == 0
    assert cold["train_score"] == warm["train_score"]  # the same model from cached code

    # the cold first fit compiles the package's functions, the second fit nothing more
    assert record["compiled_dispatchers"] >= 1
    assert record["compiled_signatures"] >= record["compiled_dispatchers"]
    assert 1 <= len(record["largest_compiles"]) <= 3
    assert cold["second_fit_compiled"] == 0
    compiled = {item["function"]: item for item in cold["dispatchers"] if item["compiled"]}
    assert any(name.startswith("stochsvm.linear.rda.") for name in compiled)
    for item in cold["dispatchers"]:
        assert item["loaded"] == 0
        assert len(item["signatures"]) >= 1
        assert item["compile_seconds"] <= item["compile_seconds_inclusive"] + 1e-9

    # the warm first fit loads its entry points from the cache and compiles nothing
    assert record["warm_compiled"] == warm["compiled"] == 0
    assert 1 <= record["warm_loaded"] <= cold["compiled"]
    for item in warm["dispatchers"]:
        assert item["compiled"] == 0
        assert item["function"] in compiled
        assert set(item["signatures"]) <= set(compiled[item["function"]]["signatures"])


def test_cold_start_markdown_lists_every_estimator():
    cold_start = load_script("cold_start")
    row = {"estimator": "RDAClassifier", "problem": "linear", "cold_import_seconds": 1.5,
           "warm_import_seconds": 1.4, "cold_first_fit_seconds": 3.0,
           "warm_first_fit_seconds": 0.2, "steady_fit_seconds": 0.02, "compile_seconds": 2.98,
           "under_target": False, "steady_under_target": True, "compiled_dispatchers": 3,
           "compiled_signatures": 4, "numba_compiled_signatures": 2, "warm_loaded": 1,
           "largest_compiles": [{"function": "stochsvm.linear.rda._flush",
                                 "compile_seconds": 0.4, "signatures": 2}],
           "warm_compiled": 0,
           "cold": {"dispatchers": [{"function": "stochsvm.linear.rda._flush", "compiled": 2,
                                     "signatures": ["(float64,)", "(int64,)"],
                                     "compile_seconds": 0.4}]}}
    report = {"n_samples": 569, "rows": [row], "machine_line": "test machine",
              "wall_seconds": 10.0, "functions": cold_start._functions_summary([row])}
    text = cold_start.markdown(report)
    assert ("| RDAClassifier | linear | 1.50 / 1.40 | 3.00 | 0.20 | 0.02 | 2.98 | no | 3 | "
            "4 (+2) / 1 / 0 | linear.rda._flush (0.40 s, 2 signatures) |") in text
    assert "| linear.rda._flush | 0.40 | 2 | RDAClassifier |" in text
    assert "0 of 1 estimators under 1 s" in text
