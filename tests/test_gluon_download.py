"""gluon.utils.download against a local HTTP server: file naming, sha1 checks,
skipping existing files, overwrite, retries and the verify_ssl warning."""

import hashlib
import http.server
import os
import threading

import pytest

from oxnet.gluon import utils

BODY = b"oxnet download test\n" * 50


class _Handler(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self):  # noqa: N802
        type(self).hits += 1
        if self.path.endswith("/missing.txt"):
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()


def test_download_to_folder_file_and_skip(server, tmp_path):
    sha1 = hashlib.sha1(BODY).hexdigest()
    f = utils.download(server + "/a/data.txt", path=str(tmp_path), sha1_hash=sha1)
    assert f == os.path.join(str(tmp_path), "data.txt")
    assert open(f, "rb").read() == BODY
    assert os.listdir(tmp_path) == ["data.txt"]          # no temporary file left
    hits = _Handler.hits
    utils.download(server + "/a/data.txt", path=f, sha1_hash=sha1)   # present: skipped
    assert _Handler.hits == hits
    utils.download(server + "/a/data.txt", path=f, overwrite=True)
    assert _Handler.hits == hits + 1
    with open(f, "wb") as out:
        out.write(b"corrupt")
    utils.download(server + "/a/data.txt", path=f, sha1_hash=sha1)   # wrong hash: again
    assert open(f, "rb").read() == BODY


def test_download_errors(server, tmp_path):
    with pytest.raises(RuntimeError, match="Failed downloading"):
        utils.download(server + "/missing.txt", path=str(tmp_path / "m.txt"), retries=1)
    with pytest.raises(UserWarning, match="hash does not match"):
        utils.download(server + "/b.txt", path=str(tmp_path / "b.txt"), sha1_hash="0" * 40,
                       retries=1)
    with pytest.raises(AssertionError):
        utils.download(server + "/b.txt", path=str(tmp_path), retries=-1)


def test_download_unverified_warns(server, tmp_path):
    with pytest.warns(UserWarning, match="Unverified HTTPS request"):
        utils.download(server + "/c.txt", path=str(tmp_path), verify_ssl=False)
