"""``python -m stochsvm.cli``: the ``stochsvm`` command line."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
