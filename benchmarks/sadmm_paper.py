"""Re-run the experiments of the SADMM paper (Section V, Figs. 1-3) with today's peers.

A thin command-line wrapper of :func:`stochsvm.bench.sadmm.run` (protocol, datasets and
outputs are documented there); ``stochsvm reproduce sadmm`` runs the same code.

Run::

    python benchmarks/sadmm_paper.py            # full run, ~20 minutes on 2 cores
    python benchmarks/sadmm_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs
    python benchmarks/sadmm_paper.py --replot   # redraw figures/markdown from the JSON
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import sadmm  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small smoke test (~2 minutes); writes *_quick outputs and leaves "
                             "BENCHMARKS.md alone")
    parser.add_argument("--out", type=Path, default=REPOSITORY / "benchmarks" / "results",
                        help="output folder (default: benchmarks/results)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel fits in the curve and selection phases (default 2)")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw the figures and rewrite the markdown from an existing "
                             "sadmm_paper[_quick].json (no fitting)")
    arguments = parser.parse_args(argv)
    benchmarks_md = REPOSITORY / "benchmarks" / "BENCHMARKS.md"
    if arguments.replot:
        return sadmm.replot(arguments.out, "_quick" if arguments.quick else "",
                            benchmarks_md=benchmarks_md)
    return sadmm.run(arguments.quick, arguments.out, workers=arguments.workers,
                     benchmarks_md=benchmarks_md)


if __name__ == "__main__":
    main()
