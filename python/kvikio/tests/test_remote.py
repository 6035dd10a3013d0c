# SPDX-License-Identifier: Apache-2.0
"""RemoteFile against a real nginx (Debian's /usr/sbin/nginx, started here on a free loopback
port; missing nginx fails): reads of host and device memory, parallel and stream-ordered, both
transports; errors."""

import os
import shutil
import socket
import subprocess
import time
import urllib.request

import numpy as np
import pytest
from conftest import POISON, pattern

import kvikio

NGINX = "/usr/sbin/nginx"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """nginx serving a directory with data.bin; yields (base URL, content)."""
    assert os.path.exists(NGINX), f"{NGINX} is missing: ci/install-deps.sh installs nginx-light"
    root = tmp_path_factory.mktemp("nginx")
    www = root / "www"
    (root / "tmp").mkdir()
    www.mkdir()
    content = pattern(5 * 1024 * 1024 + 77, 21)
    content.tofile(www / "data.bin")
    for attempt in range(5):  # another process may take the port between bind and listen
        port = _free_port()
        conf = root / "nginx.conf"
        temp = root / "tmp"
        conf.write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"daemon off;\nworker_processes 2;\npid {root}/nginx.pid;\n"
            f"error_log {root}/error.log;\nevents {{}}\nhttp {{\n  access_log off;\n"
            f"  client_body_temp_path {temp};\n  proxy_temp_path {temp};\n"
            f"  fastcgi_temp_path {temp};\n  uwsgi_temp_path {temp};\n  scgi_temp_path {temp};\n"
            f"  server {{\n    listen 127.0.0.1:{port};\n    root {www};\n  }}\n}}\n"
        )
        proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(root)])
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:  # ours only if it serves our file
                with urllib.request.urlopen(f"{url}/data.bin", timeout=1) as r:
                    if r.read(64) == content[:64].tobytes():
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        else:
            proc.kill()
            continue
        if proc.poll() is None:
            break
    else:
        pytest.fail(f"nginx did not serve on a free port (see {root}/error.log)")
    yield url, content
    proc.terminate()
    proc.wait()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def transport(request):
    with kvikio.defaults.set("remote_backend", request.param):
        yield request.param


def test_read_host(server, transport):
    url, content = server
    with kvikio.RemoteFile.open_http(f"{url}/data.bin") as f:
        assert f.nbytes() == content.size
        assert f.remote_endpoint_type() == kvikio.RemoteEndpointType.HTTP
        out = np.full(content.size + 16, POISON, np.uint8)
        with kvikio.defaults.set({"num_threads": 4, "task_size": 1 << 20}):
            assert f.pread(out[: content.size - 3], file_offset=3).get() == content.size - 3
        assert np.array_equal(out[: content.size - 3], content[3:])
        assert (out[content.size - 3:] == POISON).all()
        small = bytearray(10)
        assert f.read(small, file_offset=100) == 10
        assert bytes(small) == content[100:110].tobytes()


def test_read_device(server, transport, device):
    url, content = server
    f = kvikio.RemoteFile.open(f"{url}/data.bin", nbytes=content.size)
    dev = device.empty(content.size)
    assert f.read(dev) == content.size
    assert np.array_equal(device.to_host(dev), content)
    dev2 = device.empty(4096)
    assert f.read_async(dev2, device.stream(), 4096, 1000).check_bytes_done() == 4096
    assert np.array_equal(device.to_host(dev2), content[1000:5096])


def test_errors(server):
    url, content = server
    with pytest.raises(RuntimeError, match="404"):
        kvikio.RemoteFile.open_http(f"{url}/missing.bin")
    f = kvikio.RemoteFile.open_http(f"{url}/data.bin")
    with pytest.raises(ValueError):
        f.read(np.zeros(100, np.uint8), file_offset=content.size - 10)
    with pytest.raises(RuntimeError, match="Unsupported endpoint URL"):
        kvikio.RemoteFile.open(f"{url}/data.bin", allow_list=[kvikio.RemoteEndpointType.S3])
    assert kvikio.is_remote_file_available()
