# SPDX-License-Identifier: Apache-2.0
"""RemoteFile against the test servers of cpp/tests/servers (run by this Python): S3
with every SigV4 signature checked by botocore (open_s3, open_s3_url, a wrong secret refused),
presigned URLs, public buckets and WebHDFS; host and device memory, both transports."""

import subprocess
import sys

import numpy as np
import pytest
from conftest import POISON, SERVERS, pattern, start_server

import kvikio

ACCESS_KEY, SECRET, REGION = "KVIKIOTESTKEY", "kvikio-test-secret", "us-east-1"


@pytest.fixture(scope="module")
def content():
    return pattern((1 << 20) + 99, 51)


@pytest.fixture(scope="module")
def s3(tmp_path_factory, content):
    root = tmp_path_factory.mktemp("s3")
    for bucket in ("bucket", "public"):
        (root / bucket).mkdir()
        content.tofile(root / bucket / "data.bin")
    proc, url = start_server("s3_sigv4.py", str(root))
    yield url
    proc.terminate()
    proc.wait()


@pytest.fixture
def aws_env(s3, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3 + "/")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


@pytest.fixture(params=["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def transport(request):
    with kvikio.defaults.set("remote_backend", request.param):
        yield request.param


def presign(url: str, secret: str = SECRET) -> str:
    out = subprocess.run([sys.executable, str(SERVERS / "s3_sigv4.py"), "presign", url, secret],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_s3_signed(aws_env, content, transport, device):
    f = kvikio.RemoteFile.open_s3("bucket", "data.bin")
    assert f.remote_endpoint_type() == kvikio.RemoteEndpointType.S3
    assert f.nbytes() == content.size
    out = np.full(content.size + 64, POISON, np.uint8)
    with kvikio.defaults.set("num_threads", 4):
        assert f.pread(out[: content.size - 11], file_offset=11, task_size=200 << 10).get() == (
            content.size - 11
        )
    assert np.array_equal(out[: content.size - 11], content[11:])
    assert (out[content.size - 11:] == POISON).all()
    g = kvikio.RemoteFile.open_s3_url("s3://bucket/data.bin")
    dev = device.empty(content.size)
    assert g.read(dev) == content.size
    assert np.array_equal(device.to_host(dev), content)


def test_s3_wrong_secret(aws_env, s3, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(RuntimeError, match="403"):
        kvikio.RemoteFile.open_s3("bucket", "data.bin")


def test_presigned_and_public(s3, content, transport):
    f = kvikio.RemoteFile.open_s3_presigned_url(presign(f"{s3}/bucket/data.bin"))
    assert f.remote_endpoint_type() == kvikio.RemoteEndpointType.S3_PRESIGNED_URL
    out = np.zeros(1000, np.uint8)
    assert f.read(out, file_offset=5) == 1000
    assert np.array_equal(out, content[5:1005])
    with pytest.raises(RuntimeError, match="403"):
        kvikio.RemoteFile.open_s3_presigned_url(presign(f"{s3}/bucket/data.bin", "wrong"))
    p = kvikio.RemoteFile.open_s3_public(f"{s3}/public/data.bin")
    assert p.nbytes() == content.size
    with pytest.raises(RuntimeError):
        kvikio.RemoteFile.open_s3_public(f"{s3}/bucket/data.bin")  # private: 403


def test_webhdfs(tmp_path, content, transport, device, monkeypatch):
    content.tofile(tmp_path / "data.bin")
    proc, url = start_server("webhdfs.py", str(tmp_path))
    try:
        monkeypatch.setenv("KVIKIO_WEBHDFS_USERNAME", "kvikio")
        f = kvikio.RemoteFile.open_webhdfs(f"{url}/webhdfs/v1/data.bin")
        assert f.remote_endpoint_type() == kvikio.RemoteEndpointType.WEBHDFS
        assert f.nbytes() == content.size
        dev = device.empty(content.size - 3)
        assert f.pread(dev, file_offset=3).get() == content.size - 3
        assert np.array_equal(device.to_host(dev), content[3:])
        auto = kvikio.RemoteFile.open(f"{url}/webhdfs/v1/data.bin")
        assert auto.remote_endpoint_type() == kvikio.RemoteEndpointType.WEBHDFS
        with pytest.raises(RuntimeError):
            kvikio.RemoteFile.open_webhdfs(f"{url}/webhdfs/v1/missing.bin")
    finally:
        proc.terminate()
        proc.wait()
