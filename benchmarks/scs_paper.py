"""Re-run Table 1 and Figs. 1-2 of the SCS paper with scikit-learn peers side by side.

A thin command-line wrapper of :func:`stochsvm.bench.scs.run` (protocol, datasets and outputs
are documented there).

Run::

    python benchmarks/scs_paper.py            # full run, sized for about 20 minutes on 2 cores
    python benchmarks/scs_paper.py --quick    # under 2 minutes, *_quick outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import scs  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, under 2 minutes")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    return scs.run(arguments.quick, arguments.out)


if __name__ == "__main__":
    main()
