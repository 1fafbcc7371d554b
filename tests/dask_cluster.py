"""The local Dask cluster of the distributed tests: 2 worker processes of one thread."""

import contextlib
import importlib


@contextlib.contextmanager
def local_client(*modules):
    """A client of a new ``LocalCluster`` (closed on exit) whose workers have imported
    ``modules`` already, so that the first test does not pay for it."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            for module in modules:
                client.run(importlib.import_module, module)
            yield client
