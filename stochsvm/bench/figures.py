r"""The standard benchmark figures, drawn with matplotlib (imported lazily, ``Agg`` backend).

Each function takes plain data (dicts of lists, as stored in the JSON reports), writes one PNG
and returns its path; ``panels`` are drawn side by side, one axis per dataset.

* :func:`objective_vs_seconds` -- training objective against seconds; with an optimum
  :math:`F^\star` the relative gap :math:`(F - F^\star)/F^\star` on log-log axes.
* :func:`error_vs_samples` -- test error against training samples seen (or training set size
  ``n``): median over runs with a min-max band, batch references as horizontal lines.
* :func:`box_plots` -- one box per method (e.g. test accuracy over seeds or trials).
* :func:`gradient_correlation` -- grouped bars of the Pearson correlation of each method's
  stochastic gradient with the exact gradient, per dataset.
* :func:`curves_from_records` -- (seconds, objective) traces from harness records' ``history``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

__all__ = ["pyplot", "save", "objective_vs_seconds", "error_vs_samples", "box_plots",
           "gradient_correlation", "curves_from_records"]


def pyplot():
    """matplotlib's ``pyplot`` on the ``Agg`` backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure, path, dpi=110):
    """Lay out ``figure``, write it to the PNG ``path`` (folders created), close it; return
    the path."""
    plt = pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    return path


def objective_vs_seconds(panels, path, target=None, xlabel="CPU seconds", width=4.2,
                         height=3.6, title=None):
    r"""Objective (or relative gap to the optimum) against seconds.

    Parameters
    ----------
    panels : dict
        ``{panel title: {"curves": {label: [(seconds, objective), ...]}, "optimum": F* or
        None}}``. With an optimum the y axis is :math:`(F - F^\star)/F^\star`, both axes log.
    path : str or Path
        PNG to write.
    target : float or None
        Dotted horizontal line (e.g. the relative gap to reach).
    """
    plt = pyplot()
    count = max(len(panels), 1)
    figure, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False)
    relative = False
    for axis, (label, panel) in zip(axes[0], panels.items()):
        optimum = panel.get("optimum")
        relative = relative or optimum is not None
        for name, trace in panel["curves"].items():
            trace = np.asarray(trace, dtype=np.float64)
            if trace.size == 0:
                continue
            seconds = np.maximum(trace[:, 0], 1e-4)
            values = trace[:, 1]
            if optimum is not None:
                values = np.maximum(values - optimum, 1e-12) / abs(optimum)
            axis.plot(seconds, values, marker="." if len(trace) < 40 else None, linewidth=1,
                      label=name)
        if target is not None:
            axis.axhline(target, color="gray", linestyle=":")
        axis.set_xscale("log")
        if optimum is not None:
            axis.set_yscale("log")
        axis.set_title(label, fontsize=9)
        axis.set_xlabel(xlabel)
    axes[0][0].set_ylabel("(F - F*) / F*" if relative else "objective")
    axes[0][0].legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=10)
    return save(figure, path)


def error_vs_samples(panels, path, xlabel="training samples seen", colors=None, zoom=None,
                     title=None, width=5.2, height=4.2):
    """Test error (%) against samples seen: median over runs and a min-max band.

    Parameters
    ----------
    panels : dict
        ``{panel title: {label: entry}}`` where ``entry`` is either
        ``{"samples": [...], "errors": [[run 1 errors], [run 2 errors], ...]}`` (fractions; a
        shorter run is padded; an optional ``"final_error"`` replaces the median curve's last
        point for the zoom) or ``{"batch_error": e}`` (a horizontal dashed line).
    colors : dict or None
        ``{label: matplotlib color}``.
    zoom : float or None
        Show at most ``zoom`` percentage points above the lowest final error.
    """
    plt = pyplot()
    colors = colors or {}
    count = max(len(panels), 1)
    figure, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False)
    for axis, (panel_title, entries) in zip(axes[0], panels.items()):
        finals = []
        for label, entry in entries.items():
            color = colors.get(label)
            if "batch_error" in entry:
                axis.axhline(100.0 * entry["batch_error"], color=color, ls="--", lw=1.2,
                             label=label)
                finals.append(100.0 * entry["batch_error"])
                continue
            samples = np.asarray(entry["samples"], dtype=np.float64)
            runs = entry["errors"]
            matrix = np.full((len(runs), len(samples)), np.nan)
            for row, errors in enumerate(runs):
                matrix[row, :len(errors)] = errors
            matrix *= 100.0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                median = np.nanmedian(matrix, axis=0)
                low, high = np.nanmin(matrix, axis=0), np.nanmax(matrix, axis=0)
            axis.plot(samples, median, color=color, label=label, lw=1.6)
            axis.fill_between(samples, low, high, color=color, alpha=0.18, lw=0)
            if entry.get("final_error") is not None:
                finals.append(100.0 * entry["final_error"])
            elif np.isfinite(median[-1]):
                finals.append(float(median[-1]))
        axis.set_xscale("log")
        axis.set_xlabel(xlabel)
        axis.set_ylabel("test error (%)")
        axis.set_title(panel_title)
        if zoom is not None and finals:
            axis.set_ylim(max(0.0, min(finals) - 3.0), min(finals) + zoom)
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=10)
    return save(figure, path)


def box_plots(panels, path, ylabel="test accuracy", title=None, width=4.8, height=3.8):
    """One box per method and panel: ``{panel title: {label: [values over runs]}}``."""
    plt = pyplot()
    count = max(len(panels), 1)
    figure, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False)
    for axis, (panel_title, groups) in zip(axes[0], panels.items()):
        labels = [label for label, values in groups.items() if len(values)]
        axis.boxplot([np.asarray(groups[label], dtype=np.float64) for label in labels])
        axis.set_xticks(np.arange(1, len(labels) + 1))
        axis.set_xticklabels(labels, rotation=30, ha="right", fontsize=7)
        axis.set_title(panel_title, fontsize=9)
        axis.set_ylabel(ylabel)
        axis.grid(alpha=0.3, axis="y")
    if title:
        figure.suptitle(title, fontsize=10)
    return save(figure, path)


def gradient_correlation(values, path, methods=None,
                         ylabel="Pearson correlation with exact gradient"):
    """Grouped bars: ``{dataset: {method: correlation}}`` (missing values are gaps)."""
    plt = pyplot()
    if methods is None:
        methods = []
        for by_method in values.values():
            methods += [name for name in by_method if name not in methods]
    count = len(values)
    figure, axis = plt.subplots(figsize=(7, 3.6))
    width = 0.8 / max(count, 1)
    for position, (label, by_method) in enumerate(values.items()):
        heights = [by_method.get(name, np.nan) for name in methods]
        heights = [np.nan if value is None else value for value in heights]
        axis.bar(np.arange(len(methods)) + position * width, heights, width, label=label)
    axis.set_xticks(np.arange(len(methods)) + 0.4 - width / 2)
    axis.set_xticklabels(methods)
    axis.set_ylabel(ylabel)
    axis.legend(fontsize=7)
    return save(figure, path)


def curves_from_records(records, dataset, key=("objective", "running_objective")):
    """``{method: [(seconds, value), ...]}`` of the first seed of each method on ``dataset``,
    from harness records whose ``history`` entries carry ``seconds`` and ``key`` (a name, or
    names tried in turn: solvers record ``objective`` or, when the exact objective would cost
    a pass over the data, ``running_objective``)."""
    keys = (key,) if isinstance(key, str) else tuple(key)
    curves = {}
    for record in records:
        if record.get("dataset") != dataset or record["method"] in curves:
            continue
        trace = []
        for entry in record.get("history", []):
            value = next((entry[name] for name in keys if entry.get(name) is not None), None)
            if "seconds" in entry and value is not None:
                trace.append((entry["seconds"], value))
        if trace:
            curves[record["method"]] = trace
    return curves
