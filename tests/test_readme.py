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
