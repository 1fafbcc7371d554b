"""Summary, targets, figures and tables of the SADMM paper re-run (:mod:`stochsvm.bench.sadmm`):
everything computed from its raw results, and the fixed text of its report."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..linear import ComidClassifier, RDAClassifier
from ..linear.sadmm import AUTOMATIC_RHO_CEILING
from . import harness

LABELS = {"sadmm": "SADMM (ours)", "rda": "RDA", "comid": "Comid", "pegasos": "Pegasos",
          "sgd": "SGDClassifier (sklearn)", "linear_svc": "LinearSVC (liblinear)"}
# The step parameter of each method that has one, tuned jointly with alpha over three values a
# factor 10 apart, the default (STEP_DEFAULTS) included. RDA's gamma scales the proximal term
# gamma sqrt(t) ||w||^2 / 2, so a smaller gamma is a larger step; Comid's step is
# eta0 / t^power_t; SADMM's rho is the augmented-Lagrangian parameter of eq. (12).
STEP_GRIDS = {"sadmm": ("rho", (0.1, 1.0, 10.0)), "rda": ("gamma", (0.007, 0.07, 0.7)),
              "comid": ("eta0", (0.5, 5.0, 50.0))}
# the estimators' own defaults (the selection's ties go to the step nearest them); SADMM's
# default rho="auto" is min(10, mean squared row norm): the grid's centre is its ceiling, 10
STEP_DEFAULTS = {"sadmm": AUTOMATIC_RHO_CEILING, "rda": RDAClassifier().gamma,
                 "comid": ComidClassifier().eta0}
METHOD_NOTES = {
    "sadmm": "SADMMClassifier defaults (rho_schedule='linear': rho grows linearly with samples "
             "seen, on the time scale rho / alpha samples in a partial_fit stream; averaged "
             f"iterate) except rho, tuned over {{0.1, 1, 10}} (default {STEP_DEFAULTS['sadmm']:g}); "
             "hinge loss",
    "rda": "RDAClassifier defaults except gamma, tuned over {0.007, 0.07, 0.7} "
           f"(default {STEP_DEFAULTS['rda']:g}; a smaller gamma is a larger step); hinge loss",
    "comid": "ComidClassifier defaults except eta0, tuned over {0.5, 5, 50} "
             f"(default {STEP_DEFAULTS['comid']:g}); hinge loss",
    "pegasos": "PegasosClassifier defaults (step 1/(alpha t), t0='auto': no step parameter to "
               "tune); hinge loss, l2 only",
    "sgd": "SGDClassifier(loss='hinge', penalty=...) defaults (learning_rate='optimal', no "
           "averaging, no step parameter; l1 by cumulative truncated gradient)",
    "linear_svc": "LinearSVC, C = 1/(n alpha): l2 = defaults (squared hinge, dual='auto'); l1 = "
                  "penalty='l1', loss='squared_hinge', dual=False; batch solver, its intercept "
                  "is penalized (intercept_scaling=1)",
}
DATASET_TITLES = {"fashion_tshirt_vs_shirt": "Fashion-MNIST T-shirt vs Shirt",
                  "fashion_tops_vs_rest": "Fashion-MNIST tops vs rest",
                  "digits_3_vs_8": "digits 3 vs 8 (fallback)",
                  "digits_even_vs_odd": "digits even vs odd (fallback)",
                  "sparse_text": "generated sparse text"}
COLORS = {"sadmm": "tab:red", "rda": "tab:green", "comid": "tab:blue", "pegasos": "tab:purple",
          "sgd": "tab:orange", "linear_svc": "black"}
PROTOCOL = (
    "Test error against the number of training samples seen. In each run, every online "
    "method receives the same stream of samples (one random permutation of the training set "
    "per epoch, concatenated) in the same consecutive chunks through `partial_fit` with "
    "shuffling off; chunk ends are log-spaced sample counts, and the test error is recorded "
    "after each chunk. Accuracy, nonzero coefficients and seconds are taken at the end of the "
    "stream; medians and [min, max] over the runs. LinearSVC is a batch reference fitted once "
    "on the whole training set. All methods fit an intercept (the paper has none).")
HYPERPARAMETER_RULE = (
    "alpha is chosen from the grid {grid} by accuracy on a held-out validation split "
    "({fraction:.0%} of the training set, the same split for every method); each candidate is "
    "trained on the remaining {keep:.0%} with the same chunked stream as the learning curves "
    "(LinearSVC: C = 1/(n alpha) with n its number of training samples); ties go to the larger "
    "alpha. A method with a step-size parameter has it chosen jointly with alpha on the same "
    "split, over three values a factor 10 apart that include its default: SADMM (ours) rho in "
    "{{0.1, 1, 10}}, RDA gamma in {{0.007, 0.07, 0.7}} (a smaller gamma is a larger step), "
    "Comid eta0 in {{0.5, 5, 50}}; every (alpha, step) pair is one candidate, ties go to the "
    "larger alpha, then to the step nearest the default. Pegasos (step 1/(alpha t)), "
    "SGDClassifier (learning_rate='optimal') and LinearSVC have no step parameter. Every other "
    "parameter keeps its default, ours included. Every selection fit, a step-grid candidate "
    "included, has the same wall-clock limit of {limit:.0f} s: an online method stops at the "
    "first chunk end past it, a batch fit is killed at it, and a value that did not finish "
    "within it cannot be chosen; batch fits are tried from the largest alpha down and, once one "
    "is over the limit, the smaller alphas (larger C, no faster for liblinear) are not run. The "
    "final runs at the chosen values have no limit (a backstop kills a fit after {backstop:.0f} "
    "s).")


def step_text(key, step):
    """``"rho=1"`` / ``"gamma=0.07"`` / ``"—"`` for the tables."""
    return "—" if step is None or key not in STEP_GRIDS else f"{STEP_GRIDS[key][0]}={step:g}"


def split_candidate(candidate):
    """``(alpha, step)`` of a selection candidate (``step`` None for a bare ``alpha``)."""
    return candidate if isinstance(candidate, tuple) else (candidate, None)


def summarize(selection, curves, throughput):
    summary = {}
    for dataset, by_penalty in selection.items():
        for penalty, methods in by_penalty.items():
            for key in methods:
                runs = [result for task, result in curves.items()
                        if task[0] in ("curve", "batch") and task[1:4] == (dataset, penalty, key)]
                if not runs:
                    continue
                chosen = selection[dataset][penalty][key]
                entry = {"alpha": chosen["chosen_alpha"],
                         "step": step_text(key, chosen.get("chosen_step"))}
                failures = [r for r in runs if "final_accuracy" not in r]
                if failures:
                    entry["failures"] = [{k: v for k, v in r.items() if k != "error"}
                                         | ({"error": r["error"][-1500:]} if "error" in r else {})
                                         for r in failures]
                runs = [r for r in runs if "final_accuracy" in r]
                summary.setdefault(dataset, {}).setdefault(penalty, {})[key] = entry
                if not runs:
                    continue
                for name in ("final_accuracy", "seconds", "nonzeros"):
                    entry[name] = harness.spread([r[name] for r in runs], keep_values=True)
                entry["n_runs"] = len(runs)
                if key != "linear_svc":
                    entry["curve"] = {
                        "samples_seen": max(runs, key=lambda r: len(r["samples_seen"]))[
                            "samples_seen"], "test_error_per_run": [r["error"] for r in runs]}
                    entry["runs_stopped_at_time_limit"] = sum(
                        bool(r["stopped_at_time_limit"]) for r in runs)
                else:
                    entry.update({name: runs[0][name] for name in ("converged", "n_iter", "C")})
                speed = throughput.get(dataset, {}).get(penalty, {}).get(key)
                if speed:
                    entry["throughput"] = speed
    return summary


def summary_rows(summary):
    """The results table as flat rows (the CSV): one per (dataset, penalty, method)."""
    rows = []
    for dataset, by_penalty in summary.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                row = {"dataset": dataset, "penalty": penalty, "method": key,
                       "alpha": entry.get("alpha"), "step": entry.get("step"),
                       "runs": entry.get("n_runs", 0)}
                for name in ("final_accuracy", "seconds", "nonzeros"):
                    for statistic in ("median", "min", "max"):
                        row[f"{name}_{statistic}"] = (entry.get(name) or {}).get(statistic)
                row["samples_per_second"] = (entry.get("throughput") or {}).get(
                    "samples_per_second")
                row["runs_stopped_at_time_limit"] = entry.get("runs_stopped_at_time_limit")
                row["failures"] = len(entry.get("failures", []))
                rows.append(row)
    return rows


def _median(entry, name):
    value = (entry or {}).get(name)
    return None if value is None else value["median"]


def evaluate_targets(summary):
    targets = []
    for dataset, by_penalty in summary.items():
        for penalty, methods in by_penalty.items():
            ours, reference, sgd = (methods.get(key) for key in ("sadmm", "linear_svc", "sgd"))
            if ours is None or "final_accuracy" not in ours:
                continue
            accuracy = _median(ours, "final_accuracy")
            if reference and "final_accuracy" in reference:
                points = 100.0 * (accuracy - _median(reference, "final_accuracy"))
                targets.append({"target": "SADMM accuracy - LinearSVC accuracy >= -0.5 points",
                                "dataset": dataset, "penalty": penalty, "value_points": points,
                                "met": bool(points >= -0.5)})
            if not sgd or "final_accuracy" not in sgd:
                continue
            if penalty == "l1":
                nonzeros, sgd_nonzeros = _median(ours, "nonzeros"), _median(sgd, "nonzeros")
                sgd_accuracy = _median(sgd, "final_accuracy")
                targets.append({
                    "target": "SADMM-l1 at least as sparse as SGDClassifier-l1 at equal or "
                              "better accuracy", "dataset": dataset, "penalty": penalty,
                    "sadmm_nonzeros": nonzeros, "sgd_nonzeros": sgd_nonzeros,
                    "sadmm_accuracy": accuracy, "sgd_accuracy": sgd_accuracy,
                    "nonzeros_ratio": nonzeros / max(sgd_nonzeros, 1.0),
                    "met": bool(nonzeros <= sgd_nonzeros and accuracy >= sgd_accuracy)})
            if "throughput" in ours and "throughput" in sgd:
                ratio = (ours["throughput"]["samples_per_second"]
                         / sgd["throughput"]["samples_per_second"])
                targets.append({"target": "SADMM throughput / SGDClassifier throughput >= 1.0 ("
                                + ("sparse" if "sparse" in dataset else "dense") + ")",
                                "dataset": dataset, "penalty": penalty, "ratio": ratio,
                                "met": bool(ratio >= 1.0)})
    return targets


def plot_curves(summary, out, suffix):
    """Figs. 2 and 3: test error against samples seen, one panel per dataset."""
    from .figures import error_vs_samples

    paths = []
    for penalty, figure_name in (("l1", "Fig. 2"), ("l2", "Fig. 3")):
        panels, colors = {}, {}
        for dataset in [d for d in summary if penalty in summary[d]]:
            entries = {}
            for key, entry in summary[dataset][penalty].items():
                step = entry.get("step", "—")
                label = LABELS[key] + f" (alpha={entry['alpha']:g}" + (
                    "" if step == "—" else f", {step}") + ")"
                final = (1.0 - entry["final_accuracy"]["median"]
                         if "final_accuracy" in entry else None)
                if "curve" in entry:
                    entries[label] = {"samples": entry["curve"]["samples_seen"],
                                      "errors": entry["curve"]["test_error_per_run"],
                                      "final_error": final}
                elif final is not None:
                    label += ", batch"
                    entries[label] = {"batch_error": final}
                else:
                    continue
                colors[label] = COLORS[key]
            panels[f"{DATASET_TITLES[dataset]}, {penalty}"] = entries
        paths.append(error_vs_samples(  # zoomed: the early errors run off the top
            panels, Path(out) / f"sadmm_{penalty}{suffix}.png", colors=colors, zoom=20.0,
            title=f"SADMM paper {figure_name} re-run ({penalty}-regularized hinge loss): "
                  "median and min-max over runs on identical sample orders"))
    return paths


def plot_vi_bound(records, out, suffix):
    """Fig. 1: the relative test error difference and the VI bound of Theorem 4.2."""
    from .figures import pyplot, save

    datasets = sorted({record["dataset"] for record in records}, key=list(DATASET_TITLES).index)
    if not datasets:
        return None
    figure, axes = pyplot().subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.2),
                                     squeeze=False)
    for axis, dataset in zip(axes[0], datasets):
        chosen = sorted((r for r in records if r["dataset"] == dataset),
                        key=lambda record: record["alpha"])
        for color, record in zip(["tab:blue", "tab:red", "tab:green"], chosen):
            samples = np.asarray(record["samples_seen"], dtype=np.float64)
            errors = np.asarray(record["error"])
            difference = np.abs(errors - errors[-1]) / max(errors[-1], 1e-12)
            difference[difference == 0.0] = np.nan  # log axis: equal errors leave a gap
            axis.plot(samples[:-1], difference[:-1], color=color, marker=".",
                      label=f"|err(t) - err(T)| / err(T), alpha={record['alpha']:.0e}")
            axis.plot(samples, record["vi_bound"][:len(samples)], color=color, ls="--",
                      label="VI bound of Thm 4.2")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("training samples seen")
        axis.set_title(f"{DATASET_TITLES[dataset]}, SADMM l1 (constant rho)")
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=6)
    figure.suptitle("SADMM paper Fig. 1 re-run: relative test error difference (solid) and "
                    "the O(1/t) bound of Theorem 4.2 (dashed), run 0", fontsize=10)
    return save(figure, Path(out) / f"sadmm_vi_bound{suffix}.png")


def _format(entry, name, scale=1.0, digits=2):
    return harness.format_spread((entry or {}).get(name), scale, digits, "—", single=True)


def results_table(summary):
    lines = ["| dataset | penalty | method | alpha | step parameter | test accuracy % median "
             "[min, max] | seconds (median) | epoch throughput (samples/s) | nonzero coefs "
             "(median) |", "|---|---|---|---|---|---|---|---|---|"]
    for dataset, by_penalty in summary.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                seconds, nonzeros = _median(entry, "seconds"), _median(entry, "nonzeros")
                speed = entry.get("throughput", {}).get("samples_per_second")
                notes = ""
                if entry.get("runs_stopped_at_time_limit"):
                    notes = f" ({entry['runs_stopped_at_time_limit']} runs hit the time limit)"
                if entry.get("converged") is False:
                    notes = " (liblinear: not converged)"
                if "failures" in entry:
                    notes += f" ({len(entry['failures'])} failed/killed)"
                lines.append(
                    f"| {DATASET_TITLES[dataset]} | {penalty} | {LABELS[key]}{notes} | "
                    f"{entry['alpha']:g} | {entry.get('step', '—')} | "
                    f"{_format(entry, 'final_accuracy', 100.0)} | "
                    f"{'—' if seconds is None else f'{seconds:.2f}'} | "
                    f"{'—' if speed is None else f'{speed:,.0f}'} | "
                    f"{'—' if nonzeros is None else f'{nonzeros:,.0f}'} |")
    return "\n".join(lines)


def targets_table(targets):
    lines = ["| target | dataset | penalty | measured | met? |", "|---|---|---|---|---|"]
    for target in targets:
        if "value_points" in target:
            measured = f"{target['value_points']:+.2f} points"
        elif "ratio" in target:
            measured = f"{target['ratio']:.3f}x"
        else:
            measured = (f"SADMM {target['sadmm_nonzeros']:,.0f} nonzeros at "
                        f"{100 * target['sadmm_accuracy']:.2f}% vs SGD "
                        f"{target['sgd_nonzeros']:,.0f} at {100 * target['sgd_accuracy']:.2f}%")
        lines.append(f"| {target['target']} | {DATASET_TITLES[target['dataset']]} | "
                     f"{target['penalty']} | {measured} | {'yes' if target['met'] else 'NO'} |")
    return "\n".join(lines)


def selection_table(selection):
    lines = ["| dataset | penalty | method | validation accuracy % per alpha (and step "
             "parameter) | chosen |", "|---|---|---|---|---|"]
    for dataset, by_penalty in selection.items():
        for penalty, methods in by_penalty.items():
            for key, entry in methods.items():
                cells = []
                for candidate in entry["grid"]:
                    accuracy = entry["validation_accuracy"].get(candidate)
                    if accuracy is not None:
                        text = f"{100 * accuracy:.2f}" + (
                            " (stopped at the limit)" if candidate in entry["over_time_limit"]
                            else "")
                    elif candidate in entry.get("not_run", []):
                        text = "not run (a larger alpha was over the limit)"
                    else:
                        text = "over the limit"
                    value, step = split_candidate(candidate)
                    label = f"{value:g}" if step is None else f"({value:g}, {step:g})"
                    cells.append(f"{label}: {text}")
                chosen = entry.get("chosen_alpha")
                heading = "" if key not in STEP_GRIDS else f" (alpha, {STEP_GRIDS[key][0]})"
                chosen_text = "—" if chosen is None else f"alpha={chosen:g}"
                if chosen is not None and key in STEP_GRIDS:
                    chosen_text += f", {step_text(key, entry.get('chosen_step'))}"
                lines.append(f"| {DATASET_TITLES[dataset]} | {penalty} | {LABELS[key]}"
                             f"{heading} | {'; '.join(cells)} | {chosen_text} |")
    return "\n".join(lines)


def diagnostics_text(curves, summary):
    """SADMM-l1's last iterate (``average=False``) beside the compared averaged default."""
    lines = []
    for task, result in curves.items():
        if task[0] != "diagnostic" or "final_accuracy" not in result:
            continue
        default = summary.get(task[1], {}).get("l1", {}).get("sadmm", {})
        lines.append(
            f"- {DATASET_TITLES[task[1]]}: last iterate {100 * result['final_accuracy']:.2f}% "
            f"with {result['nonzeros']:,} nonzeros (run 0) vs the averaged default "
            f"{_format(default, 'final_accuracy', 100.0)}% with "
            f"{_median(default, 'nonzeros') or float('nan'):,.0f} nonzeros (median).")
    if not lines:
        return ""
    return ("Diagnostic, not a compared configuration: the averaged iterate of Theorem 4.2 is "
            "zero only where every iterate was zero, so SADMM-l1's default output is nearly "
            "dense; SADMM-l1 with `average=False` (same alpha, same stream):\n"
            + "\n".join(lines))


def markdown_section(report):
    config = report["configuration"]
    datasets = "\n".join(
        f"- **{DATASET_TITLES[name]}**: {info['description'].rstrip('.')}; {info['n_train']} "
        f"train / {info['n_test']} test, {info['n_features']} features, density "
        f"{info['density']:.4f}, {info['epochs']} epochs per run."
        for name, info in report["datasets"].items())
    unavailable = "".join(f"\n- {m}: {why}" for m, why in report["unavailable_methods"].items())
    fallback = config.get("fashion_fallback_note")
    fallback = f" ({fallback[len('note: '):]}.)" if fallback else ""
    notes = "\n".join(f"- {LABELS[key]}: {text}" for key, text in METHOD_NOTES.items())
    load = report["load_average_1_5_15min"]
    return f"""## SADMM family

Re-run of Section V (Figs. 1-3) of Tao et al., *Stochastic learning via optimizing the
variational inequalities* (TNNLS 2014) with today's peers, by
`python benchmarks/sadmm_paper.py` ({report['mode']} mode; `--quick` is a 2-minute smoke test).
Generated {report['finished']} on {report['machine']['processor_count']} cores
({report['machine']['platform']}); wall clock **{report['runtime_seconds'] / 60:.1f} minutes**
(budget: {config['budget']}); 1-minute load average {load['start'][0]:.1f}
at the start and {load['end'][0]:.1f} at the end (a load above the
2 cores means other work shared them and inflated the timings). Figures: `results/sadmm_l1.png` (Fig. 2), `results/sadmm_l2.png`
(Fig. 3), `results/sadmm_vi_bound.png` (Fig. 1); every number: `results/sadmm_paper.json`.

**Protocol.** {report['protocol']}

**Hyper-parameter rule (the same for every method).** {report['hyperparameter_rule']}

**Datasets.**{fallback}
{datasets}

**Methods.**
{notes}{unavailable}

### Results (test set, {config['runs']} runs on identical sample orders for online methods)

Seconds = training time of a whole learning-curve run (all epochs, `partial_fit` calls only,
two runs in parallel on the 2 cores); throughput = one `fit` epoch timed alone.

{report['tables']['results']}

### Targets

{report['tables']['targets']}

{report['tables']['diagnostics']}

### Hyper-parameter selection (validation accuracy)

{report['tables']['selection']}
"""
