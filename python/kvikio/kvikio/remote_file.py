# SPDX-License-Identifier: Apache-2.0
"""Remote objects (HTTP, S3, presigned URLs, WebHDFS): :class:`RemoteFile`."""

from __future__ import annotations

import urllib.parse
from typing import Optional

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, stream_handle, unsigned
from kvikio.cufile import IOFuture, complete, IOFutureStream

RemoteEndpointType = _lib.RemoteEndpointType


def infer_remote_endpoint_type(url: str) -> RemoteEndpointType:
    """The kind of endpoint a URL names (S3 for s3://, WEBHDFS for .../webhdfs/v1/..., S3 for
    an S3 host, S3_PRESIGNED_URL for a presigned query, else HTTP)."""
    return _lib.infer_remote_endpoint_type(url)


def is_remote_file_available() -> bool:
    """Whether this build has remote I/O (libcurl): always, for this package."""
    return True


class RemoteFile:
    """A remote object, opened by one of the ``open_*`` class methods. Its size is asked once
    unless ``nbytes`` gives it."""

    def __init__(self, handle: _lib.RemoteHandle):
        self._handle = handle

    @classmethod
    def open(cls, url: str, remote_endpoint_type=RemoteEndpointType.AUTO, allow_list=None,
             nbytes: int | None = None) -> "RemoteFile":
        """Any URL; its kind inferred (AUTO) or given, and then checked against
        ``allow_list``."""
        return cls(_lib.RemoteHandle.open(url, remote_endpoint_type, allow_list, nbytes))

    @classmethod
    def open_http(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        """An http(s) URL; one that is not a valid http(s) URL is a ValueError saying what is
        wrong with it (as C++'s HttpEndpoint, std::invalid_argument)."""
        return cls(_lib.RemoteHandle.open_http(url, nbytes))

    @classmethod
    def open_s3(cls, bucket_name: str, object_name: str, nbytes: Optional[int] = None,
                aws_region_name: Optional[str] = None, aws_access_key_id: Optional[str] = None,
                aws_secret_access_key: Optional[str] = None,
                aws_endpoint_url: Optional[str] = None,
                aws_session_token: Optional[str] = None) -> "RemoteFile":
        """An S3 object, signed (SigV4) with the given credentials, each falling back to its
        AWS_* environment variable."""
        return cls(_lib.RemoteHandle.open_s3(
            (bucket_name, object_name), nbytes, aws_region_name, aws_access_key_id,
            aws_secret_access_key, aws_endpoint_url, aws_session_token))

    @classmethod
    def open_s3_url(cls, url: str, nbytes: Optional[int] = None,
                    aws_region_name: Optional[str] = None,
                    aws_access_key_id: Optional[str] = None,
                    aws_secret_access_key: Optional[str] = None,
                    aws_endpoint_url: Optional[str] = None,
                    aws_session_token: Optional[str] = None) -> "RemoteFile":
        """``s3://bucket/object`` or an http(s) URL of an object, signed as open_s3()
        (``aws_endpoint_url`` applies to s3:// URLs only)."""
        scheme = urllib.parse.urlparse(url.lower()).scheme
        if scheme in ("http", "https"):
            return cls(_lib.RemoteHandle.open_s3_http_url(
                url, nbytes, aws_region_name, aws_access_key_id, aws_secret_access_key,
                aws_session_token))
        if scheme == "s3":
            bucket, key = _lib.parse_s3_url(url)
            return cls.open_s3(bucket, key, nbytes, aws_region_name, aws_access_key_id,
                               aws_secret_access_key, aws_endpoint_url, aws_session_token)
        raise ValueError(f"Unsupported protocol: {url}")

    @classmethod
    def open_s3_public(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        return cls.open(url, RemoteEndpointType.S3_PUBLIC, None, nbytes)

    @classmethod
    def open_s3_presigned_url(cls, presigned_url: str,
                              nbytes: int | None = None) -> "RemoteFile":
        return cls.open(presigned_url, RemoteEndpointType.S3_PRESIGNED_URL, None, nbytes)

    @classmethod
    def open_webhdfs(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        return cls.open(url, RemoteEndpointType.WEBHDFS, None, nbytes)

    def close(self) -> None:
        """Nothing to release (connections are pooled): the file stays usable, as upstream's,
        and reads still running go on. When the file goes away, it waits for the reads whose
        bytes are arriving; one stalled for a second, or about to be retried, then fails ("the
        RemoteHandle was closed")."""

    def __enter__(self) -> "RemoteFile":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()

    def __str__(self) -> str:
        return f'<{type(self).__name__} "{self._handle.endpoint_str()}">'

    def nbytes(self) -> int:
        """The object's size in bytes (asked once, when it was opened)."""
        return self._handle.nbytes()

    def remote_endpoint_type(self):
        """The kind of endpoint: a :class:`RemoteEndpointType` (S3, HTTP, WEBHDFS, ...)."""
        return self._handle.remote_endpoint_type()

    def read(self, buf, size: int | None = None, file_offset: int = 0) -> int:
        """Reads ``size`` bytes of the object from ``file_offset`` into ``buf`` (host or
        device memory; ``None``: all of ``buf``) and returns the bytes read:
        ``pread(...).get()``. Raises RuntimeError for a failed request (after the retries of
        ``http_max_attempts``) or an object that changed since it was opened."""
        return complete(self.pread(buf, size, file_offset))

    def pread(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        """As :meth:`read`, in ranged requests of ``task_size`` bytes at once (on the thread
        pool or the multi-poll reactors); returns at once an :class:`IOFuture`."""
        b = as_buffer(buf, writable=True)
        ts = _lib.defaults.task_size() if task_size is None else unsigned("pread", "task_size",
                                                                          task_size)
        off = unsigned("pread", "file_offset", file_offset)
        return IOFuture(self._handle.pread(b.ptr, size_of(b, size, "pread"), off, ts), b)

    def batch_read(self, ranges, *, coalesce_max_gap: int | None = None,
                   task_size: int | None = None) -> list[IOFuture]:
        """Reads every range ``(buf[, size[, file_offset]])`` of the object; one
        :class:`IOFuture` per range, in order: :func:`kvikio.remote_batch_read` (ours)."""
        from kvikio.batch_read import ranges_of, remote_batch_read

        return remote_batch_read(ranges_of(self, ranges), coalesce_max_gap=coalesce_max_gap,
                                 task_size=task_size)

    def read_async(self, buf, stream, size: int | None = None,
                   file_offset: int = 0) -> IOFutureStream:
        """Reads into device memory in the order of ``stream``; returns at once (ours)."""
        b = as_buffer(buf, writable=True)
        if not b.is_device:
            raise ValueError("stream-ordered reads need device memory (__cuda_array_interface__)")
        return IOFutureStream(
            self._handle.read_async(b.ptr, size_of(b, size, "read_async"),
                                    unsigned("read_async", "file_offset", file_offset),
                                    stream_handle(stream)),
            b,
        )
