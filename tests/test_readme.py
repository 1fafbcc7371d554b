"""The README's Python example runs as printed."""

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    text = README.read_text()
    start = text.index("```python\n") + len("```python\n")
    code = text[start:text.index("```", start)]
    monkeypatch.chdir(tmp_path)  # the example saves a model file in the working directory
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    # one line per family and the grid search; every accuracy printed is a real score
    assert len(printed) >= 5
    assert (tmp_path / "model.stochsvm").exists()


def test_readme_dask_example_runs(tmp_path, monkeypatch, capsys):
    """The Dask section runs as printed, after the main example (whose model it uses)."""
    import pytest

    pytest.importorskip("dask.distributed")
    text = README.read_text()
    blocks = text.split("```python\n")[1:]
    main, dask_example = (block[:block.index("```")] for block in blocks[:2])
    assert "LocalCluster" in dask_example
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "readme"}
    exec(compile(main, str(README), "exec"), namespace)
    capsys.readouterr()
    try:
        exec(compile(dask_example, str(README), "exec"), namespace)
        accuracy = float(capsys.readouterr().out.splitlines()[-1])
        assert accuracy == pytest.approx(namespace["clf"].score(namespace["X_test"],
                                                                namespace["y_test"]))
    finally:
        if "client" in namespace:
            namespace["client"].close()
            namespace["client"].cluster.close()
