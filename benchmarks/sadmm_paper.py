"""Re-run the experiments of the SADMM paper (Section V, Figs. 1-3) with today's peers.

The command line of :func:`stochsvm.bench.sadmm.run` (protocol, datasets and outputs are
documented there); ``stochsvm reproduce sadmm`` runs the same code.

Run::

    python benchmarks/sadmm_paper.py            # full run, ~20 minutes on 2 cores
    python benchmarks/sadmm_paper.py --quick    # smoke test, ~2 minutes, *_quick outputs
"""

import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))  # this checkout's package, installed or not
from stochsvm.bench import harness, sadmm  # noqa: E402

if __name__ == "__main__":
    harness.script_main(sadmm.run, __doc__, REPOSITORY, workers=True)
