"""fetch against a local HTTP server: download, cache, checksum mismatch, offline."""

import hashlib
import http.server
import threading
from functools import partial

import pytest

from stochsvm.datasets import DATASETS, fetch
from stochsvm.datasets.registry import DatasetEntry, load_dataset

CONTENT = b"1 1:1\n-1 2:1\n"


@pytest.fixture
def server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "toy").write_bytes(CONTENT)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_registry_entries():
    assert {"a9a", "cod-rna", "w6a", "ijcnn1", "SUSY", "HIGGS", "covtype", "rcv1",
            "gisette", "mnist", "HEPMASS", "skin_nonskin"} <= set(DATASETS)
    for entry in DATASETS.values():
        assert entry.url.startswith("https://")
        assert entry.sha256 is None or len(entry.sha256) == 64


def test_download_and_cache(server, tmp_path):
    good = hashlib.sha256(CONTENT).hexdigest()
    registry = {"toy": DatasetEntry("toy", server + "/toy", good, len(CONTENT), "binary")}
    path = fetch("toy", data_home=tmp_path / "cache", registry=registry)
    assert path.read_bytes() == CONTENT
    assert (tmp_path / "cache" / "toy.sha256").read_text().strip() == good
    # cached: a second fetch needs no server
    registry["toy"] = DatasetEntry("toy", "http://127.0.0.1:9/toy", good, None, "binary")
    assert fetch("toy", data_home=tmp_path / "cache", registry=registry) == path


def test_first_download_records_checksum(server, tmp_path):
    registry = {"toy": DatasetEntry("toy", server + "/toy", None, None, "binary")}
    path = fetch("toy", data_home=tmp_path, registry=registry)
    path.write_bytes(b"altered")
    with pytest.raises(ValueError, match="checksum mismatch"):
        fetch("toy", data_home=tmp_path, registry=registry)


def test_checksum_mismatch(server, tmp_path):
    registry = {"toy": DatasetEntry("toy", server + "/toy", "0" * 64, None, "binary")}
    with pytest.raises(ValueError, match="checksum mismatch"):
        fetch("toy", data_home=tmp_path, registry=registry)
    assert not (tmp_path / "toy").exists()


def test_offline_message(tmp_path):
    registry = {"toy": DatasetEntry("toy", "http://127.0.0.1:9/toy", None, None, "binary")}
    with pytest.raises(OSError, match="put it at .*toy"):
        fetch("toy", data_home=tmp_path, registry=registry, timeout=5)


def test_file_url(tmp_path):
    source = tmp_path / "toy"
    source.write_bytes(CONTENT)
    registry = {"toy": DatasetEntry("toy", source.as_uri(), None, None, "binary")}
    assert fetch("toy", data_home=tmp_path / "c", registry=registry).read_bytes() == CONTENT


def test_unknown_name(tmp_path):
    with pytest.raises(KeyError, match="known datasets"):
        fetch("nope", data_home=tmp_path)
    with pytest.raises(ValueError, match="not LIBSVM"):
        load_dataset("HEPMASS", data_home=tmp_path)
