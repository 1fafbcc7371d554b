"""RandomFourierFeatures against scikit-learn's RBFSampler, side by side (see
:mod:`stochsvm.bench.random_features`).

Run::

    python benchmarks/random_features.py           # about a minute
    python benchmarks/random_features.py --quick   # seconds, *_quick outputs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from stochsvm.bench import random_features  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small data, seconds")
    parser.add_argument("--out", default=str(REPOSITORY / "benchmarks" / "results"))
    arguments = parser.parse_args(argv)
    return random_features.run(arguments.quick, arguments.out,
                               benchmarks_md=REPOSITORY / "benchmarks" / "BENCHMARKS.md")


if __name__ == "__main__":
    main()
