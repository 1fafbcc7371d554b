"""What the default demo prints and draws: one table with its footnotes, a few lines on where
the package wins and loses, and the figure (test accuracy against seconds, one panel per task).

Every function takes the rows of :func:`stochsvm.demo.comparisons.run_comparisons` (dicts with
``task``, ``model``, ``origin``, ``status``, ``accuracy``, ``seconds``, ``memory_bytes`` and
optionally ``converged``, ``nonzero_coefficients``, ``error``).
"""

from __future__ import annotations

import os
import textwrap

__all__ = ["add_speed_ups", "display_name", "format_table", "verdicts", "write_figure"]

MEBIBYTE = 2.0 ** 20
# Accuracy differences below this (a tenth of a point) count as none.
ACCURACY_TIE = 0.001
WIDTH = 100


def display_name(row):
    """The model's name as printed: the package's models carry the ``stochsvm.`` prefix."""
    return f"stochsvm.{row['model']}" if row["origin"] == "stochsvm" else row["model"]


def _tasks(rows):
    return list(dict.fromkeys(row["task"] for row in rows))


def add_speed_ups(rows):
    """Set each row's ``speed_up``: its seconds over those of its task's reference.

    The reference is the task's first row of the package (``origin == "stochsvm"``), marked
    ``reference=True``; above 1 the reference is faster, below 1 slower. A killed fit's
    seconds are the time limit, so its ratio is a bound: ``speed_up_bound`` is ``">"`` for a
    killed row and ``"<"`` for a finished row whose reference was killed. Rows of a failed fit,
    or killed like their reference, get None.

    Returns
    -------
    rows : list of dict
        The same rows, updated in place.
    """
    for task in _tasks(rows):
        members = [row for row in rows if row["task"] == task]
        reference = next((row for row in members if row["origin"] == "stochsvm"), None)
        for row in members:
            row["reference"] = row is reference
            row["speed_up"], row["speed_up_bound"] = None, None
            if reference is None or row is reference or "failed" in (
                    row["status"], reference["status"]):
                continue
            killed = (row["status"] == "killed", reference["status"] == "killed")
            if all(killed):
                continue
            row["speed_up"] = row["seconds"] / reference["seconds"]
            row["speed_up_bound"] = ">" if killed[0] else "<" if killed[1] else None
    return rows


def _ratio(value):
    """A ratio of seconds as printed: two significant digits at most."""
    if value >= 9.95:  # what would print as 10.0x and more
        return f"{value:.0f}x"
    return f"{value:.1f}x" if value >= 0.1 else f"{value:.1g}x"


def _seconds(value):
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def _cells(row):
    """The table cells of one row."""
    killed = row["status"] == "killed"
    if row["status"] == "failed":
        accuracy, seconds = "-", "failed"
    elif killed:
        accuracy, seconds = "-", f"> {row['seconds']:.0f}"
    else:
        accuracy, seconds = f"{row['accuracy']:.4f}", _seconds(row["seconds"])
    if row.get("reference"):
        speed_up = "ref"
    elif row.get("speed_up") is None:
        speed_up = "-"
    else:
        bound = row.get("speed_up_bound")
        speed_up = (f"{bound} " if bound else "") + _ratio(row["speed_up"])
    memory = "-" if row.get("memory_bytes") is None else \
        f"{row['memory_bytes'] / MEBIBYTE:.0f} MiB"
    nonzeros = row.get("nonzero_coefficients")
    model = display_name(row) + (" *" if row.get("converged") is False else "")
    return [row["task"], model, accuracy, seconds, speed_up, memory,
            "" if nonzeros is None else str(nonzeros)]


def format_table(rows, time_limit, workers):
    """The table and its footnotes, as lines.

    Parameters
    ----------
    rows : list of dict
        Rows with their speed-ups (:func:`add_speed_ups`).
    time_limit : float
        Seconds after which a fit was killed.
    workers : int
        Fits that ran at a time.

    Returns
    -------
    list of str
    """
    header = ["task", "model", "test accuracy", "seconds", "speed-up", "memory",
              "nonzero coef."]
    cells = [_cells(row) for row in rows]
    widths = [max(len(line[column]) for line in [header, *cells])
              for column in range(len(header))]

    def line(values):
        left = [value.ljust(width) for value, width in zip(values[:2], widths[:2])]
        right = [value.rjust(width) for value, width in zip(values[2:], widths[2:])]
        return "  ".join(left + right).rstrip()

    lines = [line(header), "  ".join("-" * width for width in widths)]
    for index, values in enumerate(cells):
        if index and rows[index]["task"] != rows[index - 1]["task"]:
            lines.append("")
        lines.append(line(values))
    footnotes = [
        "test accuracy: on held-out test data. seconds: wall-clock seconds of fit alone, each "
        f"fit in its own process with one thread, {workers} fit(s) at a time.",
        "speed-up: the row's seconds over those of its task's first stochsvm model (ref): "
        "above 1x that stochsvm model is faster, below 1x it is slower.",
        "memory: the peak resident memory the fit's process added over its start: everything "
        "the fit allocated (NumPy arrays, compiled loops, LIBSVM's and LIBLINEAR's own copies "
        "and caches), not the training data it shares with its parent; for the Dask row, the "
        "client's and the workers' added peaks summed, the data being on the workers before "
        "the fit.",
        f"> {time_limit:.0f}: killed when fit and test prediction together passed "
        f"{time_limit:.0f} s; its accuracy is unknown.",
    ]
    if any(row.get("converged") is False for row in rows):
        footnotes.append("*: warned that it stopped before converging (ConvergenceWarning).")
    footnotes += [f"failed: {display_name(row)}: {row['error']}" for row in rows
                  if row["status"] == "failed"]
    lines.append("")
    for footnote in footnotes:
        lines += textwrap.wrap(footnote, WIDTH, subsequent_indent="  ")
    return lines


def markdown_table(rows):
    """The table of :func:`format_table` as a Markdown table (its rows only, no footnotes).

    Parameters
    ----------
    rows : list of dict
        Rows with their speed-ups (:func:`add_speed_ups`).

    Returns
    -------
    list of str
    """
    header = ["task", "model", "test accuracy", "seconds", "speed-up", "memory",
              "nonzero coef."]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in _cells(row)) + " |")
    return lines


def _points(difference):
    if abs(difference) < ACCURACY_TIE:
        return "as accurate"
    return f"{abs(difference) * 100:.1f} points {'more' if difference > 0 else 'less'} accurate"


def verdicts(rows):
    """Where each of the package's models wins and loses against its task's peers, as lines.

    A peer that is faster and at least as accurate beats the model outright; one that is
    slower and no more accurate (or was killed at the time limit while the model finished)
    loses outright; the others trade accuracy for time. Accuracies closer than
    :data:`ACCURACY_TIE` count as equal. A killed or failed model loses to every peer that
    finished. A model trained on a cluster (a row with ``in_memory_model``) is compared with
    the same model trained in memory.

    Returns
    -------
    list of str
    """
    lines = []
    for task in _tasks(rows):
        members = [row for row in rows if row["task"] == task]
        peers = [row for row in members if row["origin"] != "stochsvm"]
        for model in (row for row in members if row["origin"] == "stochsvm"):
            lines += textwrap.wrap(_verdict(task, model, members, peers), WIDTH,
                                   subsequent_indent="    ")
    return lines


def _verdict(task, model, members, peers):
    """The line of :func:`verdicts` on one of the package's models."""
    name = display_name(model)
    finished = [peer for peer in peers if peer["status"] == "ok"]
    if model["status"] != "ok":
        state = "was killed at the time limit" if model["status"] == "killed" else "failed"
        names = ", ".join(display_name(peer) for peer in finished) or "no peer"
        return f"{task}: {name} {state}; {names} finished."
    summary = f"{task}: {name} ({model['accuracy']:.4f} in {_seconds(model['seconds'])} s)"
    twin = next((row for row in members if row["model"] == model.get("in_memory_model")), None)
    if twin is not None:  # a model trained on a cluster: against the same model in memory
        if twin["status"] != "ok":
            return f"{summary}; in memory it did not finish."
        ratio = model["seconds"] / twin["seconds"]
        return (f"{summary}: {_ratio(ratio)} the seconds of the same model in memory, "
                f"{_points(model['accuracy'] - twin['accuracy'])}.")
    wins, losses, trades = [], [], []
    for peer in peers:
        if peer["status"] == "killed":
            wins.append(f"{display_name(peer)} (killed at the time limit)")
            continue
        if peer["status"] != "ok":
            continue
        ratio = peer["seconds"] / model["seconds"]
        difference = peer["accuracy"] - model["accuracy"]
        speed = f"{_ratio(1 / ratio)} faster" if ratio < 1 else f"{_ratio(ratio)} slower"
        entry = f"{display_name(peer)} ({speed}, {_points(difference)})"
        if ratio < 1 and difference > -ACCURACY_TIE:
            losses.append(entry)
        elif ratio >= 1 and difference < ACCURACY_TIE:
            wins.append(entry)
        else:
            trades.append(entry)
    parts = []
    if losses:
        parts.append("loses to " + "; ".join(losses))
    if trades:
        parts.append("trades accuracy for time with " + "; ".join(trades))
    if wins:
        parts.append("beats " + "; ".join(wins))
    return f"{summary} " + ". It ".join(parts) + "."


def write_figure(rows, path, time_limit):
    """Test accuracy against seconds (log scale), one panel per task, the package's models
    highlighted; killed fits are named at the time limit.

    Parameters
    ----------
    rows : list of dict
    path : str or path-like
        PNG to write.
    time_limit : float

    Returns
    -------
    str or None
        The absolute path written, or None without matplotlib.
    """
    try:
        from ..bench.figures import pyplot, save

        plt = pyplot()
    except ImportError:
        return None
    tasks = _tasks(rows)
    figure, axes = plt.subplots(1, len(tasks), figsize=(5.8 * len(tasks), 5.0), squeeze=False)
    for axis, task in zip(axes[0], tasks):
        members = [row for row in rows if row["task"] == task]
        finished = [row for row in members if row["status"] == "ok"]
        for row in finished:
            ours = row["origin"] == "stochsvm"
            axis.scatter(row["seconds"], row["accuracy"], s=90 if ours else 45,
                         marker="o" if ours else "s", zorder=3,
                         color="tab:red" if ours else "tab:gray",
                         edgecolor="black" if ours else "none")
            axis.annotate(display_name(row), (row["seconds"], row["accuracy"]),
                          xytext=(6, 4), textcoords="offset points", fontsize=7.5,
                          fontweight="bold" if ours else "normal",
                          color="tab:red" if ours else "dimgray")
        stopped = [row for row in members if row["status"] != "ok"]
        if stopped:
            axis.axvline(time_limit, color="black", linestyle=":", linewidth=1)
            text = "\n".join(f"{display_name(row)}: "
                             f"{'killed' if row['status'] == 'killed' else 'failed'}"
                             for row in stopped)
            axis.text(time_limit, 0.98, text + f"\n(limit {time_limit:.0f} s)",
                      transform=axis.get_xaxis_transform(), fontsize=7, ha="right",
                      va="top", backgroundcolor="white")
        seconds = [row["seconds"] for row in finished] + ([time_limit] if stopped else [])
        if seconds:
            axis.set_xscale("log")
            axis.set_xlim(min(seconds) / 2.5, max(seconds) * 4)
        accuracies = [row["accuracy"] for row in finished]
        if accuracies:
            spread = max(max(accuracies) - min(accuracies), 0.02)
            axis.set_ylim(min(accuracies) - 0.2 * spread, max(accuracies) + 0.45 * spread)
        axis.set_xlabel("seconds of fit (log scale)")
        axis.set_ylabel("test accuracy")
        axis.set_title(task)
        axis.grid(True, which="both", alpha=0.3)
    figure.suptitle("stochsvm demo: test accuracy against seconds of fit (up and left is "
                    "better); red circles: stochsvm, gray squares: scikit-learn peers")
    return os.path.abspath(save(figure, path, dpi=100))
