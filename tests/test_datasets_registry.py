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


def test_download_reports_its_progress(server, tmp_path, monkeypatch):
    from stochsvm.datasets import registry as module

    monkeypatch.setattr(module, "_CHUNK_BYTES", 7)  # several chunks of the small file
    entries = {"toy": DatasetEntry("toy", server + "/toy", None, None, "binary")}
    calls = []
    fetch("toy", data_home=tmp_path, registry=entries,
          progress=lambda received, total: calls.append((received, total)))
    assert len(calls) == -(-len(CONTENT) // 7)
    assert [received for received, _ in calls] == sorted({received for received, _ in calls})
    assert calls[-1] == (len(CONTENT), len(CONTENT))  # the server's Content-Length


def test_command_line_fetch_draws_bytes_rate_and_time_left(server, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from stochsvm.cli import main
    from stochsvm.datasets import registry as module

    monkeypatch.setitem(module.DATASETS, "toy",
                        DatasetEntry("toy", server + "/toy", None, None, "binary"))
    result = CliRunner().invoke(main, ["datasets", "fetch", "toy", "--data-home",
                                       str(tmp_path)])
    assert result.exit_code == 0, result.output
    final = result.stderr.split("\r")[-1]
    assert "100%" in final and f"{len(CONTENT)}.0/{len(CONTENT)}.0" in final
    assert "B/s" in final and "<00:00" in final
    info = CliRunner().invoke(main, ["datasets", "info", "a9a"])
    assert "sha256: not pinned: trust on first use" in info.output
