# SPDX-License-Identifier: Apache-2.0
"""Hostile cases, remote trust boundary (docs/design.md, "Trust boundaries"), from Python:
servers that lie or change the object under a read, redirects, crafted S3 parts, and secrets
that must stay out of messages. The misbehaving server is cpp/tests/servers/misbehaving_http.py
(byte i of its object is (i * 7 + 3) % 251); every refused read leaves its buffer as it was."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import POISON, start_server

import kvikio
import kvikio.defaults

SIZE = 100000
OBJECT = ((np.arange(SIZE, dtype=np.int64) * 7 + 3) % 251).astype(np.uint8)


@pytest.fixture(scope="module")
def server():
    proc, url = start_server("misbehaving_http.py", str(SIZE))
    yield url
    proc.kill()
    proc.wait()


@pytest.fixture(params=["LIBCURL_EASY", "LIBCURL_MULTI_POLL"])
def transport(request):
    with kvikio.defaults.set({"remote_backend": request.param, "http_max_attempts": 1}):
        yield request.param


def poisoned(n: int) -> np.ndarray:
    return np.full(n, POISON, np.uint8)


def test_an_honest_answer_reads_for_reference(server, transport):
    f = kvikio.RemoteFile.open_http(f"{server}/ok/ref")
    buf = poisoned(5000)
    assert f.read(buf, 5000, 123) == 5000
    assert np.array_equal(buf, OBJECT[123:5123])


@pytest.mark.parametrize("path, words", [
    ("rewritten", 'ETag "v2"'),              # same size, another version
    ("resized", "changed size"),             # Content-Range names another total
    ("wrong-range", "Content-Range"),        # the bytes of another range
])
def test_an_object_that_changed_is_refused_before_a_byte_lands(server, transport, path, words):
    f = kvikio.RemoteFile.open_http(f"{server}/{path}/x")
    buf = poisoned(3000)
    with pytest.raises(RuntimeError, match=words):
        f.pread(buf, 3000, 10).get()
    assert (buf == POISON).all()


def test_a_server_that_ignores_ranges_writes_nothing_past_the_buffer(server, transport):
    f = kvikio.RemoteFile.open_http(f"{server}/ignore-range/x", SIZE)
    whole = poisoned(2000)
    with pytest.raises(OverflowError, match="ranges"):
        f.read(whole[500:1500], 1000, 50)
    assert (whole[:500] == POISON).all() and (whole[1500:] == POISON).all()


def test_a_redirect_loop_ends_as_a_redirect_error(server):
    with pytest.raises(RuntimeError, match="redirects"):
        kvikio.RemoteFile.open_http(f"{server}/redirect-loop/x")


def test_a_signed_request_does_not_follow_a_redirect(server, monkeypatch):
    """A signed S3 request's session token (a header of ours) would go to any origin a
    redirect names: the redirect is the answer, an error, and the token is in no message."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "KVIKIOTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "kvikio-test-secret-value")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "a-session-token-value")
    with pytest.raises(RuntimeError) as error:
        f = kvikio.RemoteFile.open_s3_url(f"{server}/redirect/s3", SIZE)
        f.read(poisoned(100))
    assert "307" in str(error.value)
    assert "a-session-token-value" not in str(error.value)
    assert "kvikio-test-secret-value" not in str(error.value)


@pytest.mark.parametrize("region", ["evil.com/", "us-east-1.evil.com", "x@y", "a b"])
def test_a_crafted_region_is_refused_before_a_request(region):
    with pytest.raises(ValueError, match="region"):
        kvikio.RemoteFile.open_s3("bucket", "key", 100, aws_region_name=region,
                                  aws_access_key_id="id", aws_secret_access_key="secret",
                                  aws_endpoint_url="http://127.0.0.1:9/")


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:9/?x=1", "http://127.0.0.1:9/#f"])
def test_an_endpoint_with_a_query_or_fragment_is_refused(endpoint):
    with pytest.raises(ValueError, match="query or fragment"):
        kvikio.RemoteFile.open_s3("bucket", "key", 100, aws_region_name="us-east-1",
                                  aws_access_key_id="id", aws_secret_access_key="secret",
                                  aws_endpoint_url=endpoint)


def test_secrets_of_a_url_stay_out_of_messages(server):
    presigned = f"{server}/404/x?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=deadbeefsecret"
    with pytest.raises(RuntimeError) as error:
        kvikio.RemoteFile.open_s3_presigned_url(presigned)
    assert "404" in str(error.value) and "deadbeefsecret" not in str(error.value)
    with_password = server.replace("http://", "http://someone:hunter2pass@") + "/ok/y"
    with pytest.raises(ValueError, match="user information") as error:
        kvikio.RemoteFile.open_http(with_password)
    assert "hunter2pass" not in str(error.value)
