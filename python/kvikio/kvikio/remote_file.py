# SPDX-License-Identifier: Apache-2.0
"""Remote objects (HTTP, S3, presigned URLs, WebHDFS): :class:`RemoteFile`."""

from __future__ import annotations

from kvikio import _lib
from kvikio._buffers import as_buffer, size_of, stream_handle
from kvikio.cufile import IOFuture, IOFutureStream

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
        return cls.open(url, RemoteEndpointType.HTTP, None, nbytes)

    @classmethod
    def open_s3(cls, bucket_name: str, object_name: str,
                nbytes: int | None = None) -> "RemoteFile":
        """Signed with the AWS_* environment (region, keys, optional endpoint URL)."""
        url = _lib.s3_url_from_bucket_and_object(bucket_name, object_name)
        return cls.open(url, RemoteEndpointType.S3, None, nbytes)

    @classmethod
    def open_s3_url(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        """``s3://bucket/object`` or an http(s) URL of an object, signed as open_s3()."""
        return cls.open(url, RemoteEndpointType.S3, None, nbytes)

    @classmethod
    def open_s3_public(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        return cls.open(url, RemoteEndpointType.S3_PUBLIC, None, nbytes)

    @classmethod
    def open_s3_presigned_url(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        return cls.open(url, RemoteEndpointType.S3_PRESIGNED_URL, None, nbytes)

    @classmethod
    def open_webhdfs(cls, url: str, nbytes: int | None = None) -> "RemoteFile":
        return cls.open(url, RemoteEndpointType.WEBHDFS, None, nbytes)

    def __enter__(self) -> "RemoteFile":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def nbytes(self) -> int:
        return self._handle.nbytes()

    def remote_endpoint_type(self):
        return self._handle.remote_endpoint_type()

    def read(self, buf, size: int | None = None, file_offset: int = 0) -> int:
        b = as_buffer(buf, writable=True)
        return self._handle.read(b.ptr, size_of(b, size, "read"), file_offset)

    def pread(self, buf, size: int | None = None, file_offset: int = 0,
              task_size: int | None = None) -> IOFuture:
        b = as_buffer(buf, writable=True)
        ts = task_size if task_size is not None else _lib.defaults.task_size()
        return IOFuture(self._handle.pread(b.ptr, size_of(b, size, "pread"), file_offset, ts), b)

    def read_async(self, buf, stream, size: int | None = None,
                   file_offset: int = 0) -> IOFutureStream:
        """Reads into device memory in the order of ``stream``; returns at once (ours)."""
        b = as_buffer(buf, writable=True)
        if not b.is_device:
            raise ValueError("stream-ordered reads need device memory (__cuda_array_interface__)")
        return IOFutureStream(
            self._handle.read_async(b.ptr, size_of(b, size, "read_async"), file_offset,
                                    stream_handle(stream)),
            b,
        )
