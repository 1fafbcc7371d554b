"""Re-run the experiments of the TSGS3VM paper (Fig. 2 and Fig. 3) with scikit-learn peers.

A thin command-line wrapper of :func:`stochsvm.bench.tsgs3vm.run` (protocol, datasets and
outputs are documented there).

Run::

    python benchmarks/tsgs3vm_paper.py            # full run, 31-42 minutes on 2 cores
    python benchmarks/tsgs3vm_paper.py --quick    # smoke test, under 3 minutes, *_quick outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import tsgs3vm  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, under 3 minutes")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    return tsgs3vm.run(arguments.quick, arguments.out,
                       benchmarks_md=REPOSITORY / "benchmarks" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
