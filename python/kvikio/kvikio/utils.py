# SPDX-License-Identifier: Apache-2.0
"""Helpers upstream's users rely on: a local HTTP server for tests and benchmarks, a call-once
decorator, and deprecation notices.

``python -m kvikio.utils serve DIR [--host H] [--port P] [--delay-ms MS]`` serves a folder
over HTTP with HEAD and range requests (what remote reads send, and what ``python -m
http.server`` does not answer), optionally waiting MS milliseconds before each response, for
C++ and Python programs alike."""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import pathlib
import re
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


class RangeRequestHandler(SimpleHTTPRequestHandler):
    """SimpleHTTPRequestHandler that answers ``Range: bytes=a-b`` (one range) with 206 and
    ``Content-Range``, as remote reads need."""

    _RANGE = re.compile(r"bytes=(\d*)-(\d*)$")

    def __init__(self, *args: Any, first_byte_delay: float = 0.0, **kwargs: Any) -> None:
        self.first_byte_delay = first_byte_delay  # seconds before each response
        super().__init__(*args, **kwargs)

    def send_head(self):
        if self.first_byte_delay > 0:
            time.sleep(self.first_byte_delay)
        self._remaining = None
        match = self._RANGE.match(self.headers.get("Range", "").strip())
        if match is None:
            return super().send_head()
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404, "File not found")
            return None
        size = os.path.getsize(path)
        first, last = match.groups()
        if first == "":  # the last `last` bytes
            start, end = max(size - int(last or 0), 0), size - 1
        else:
            start, end = int(first), min(int(last), size - 1) if last else size - 1
        if start >= size or start > end:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return None
        f = open(path, "rb")  # noqa: SIM115 - closed by copyfile's caller (do_GET)
        f.seek(start)
        self._remaining = end - start + 1
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(self._remaining))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return f

    def copyfile(self, source, outputfile):
        remaining = self._remaining
        if remaining is None:
            return super().copyfile(source, outputfile)
        while remaining > 0:
            chunk = source.read(min(remaining, 1 << 20))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)
        self._remaining = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base's name
        pass  # quiet: it serves tests and benchmarks


class LocalHttpServer:
    """A local HTTP server of ``root_path`` in a child process, for tests and benchmarks
    (slow, but needs nothing installed). ``with LocalHttpServer(dir) as s:`` serves
    ``s.url``; the server stops on exit or after ``max_lifetime`` seconds.

    ``range_support`` answers range requests (what remote reads send); ``handler`` (a
    BaseHTTPRequestHandler class) and ``handler_options`` (its keyword arguments) replace the
    default handler.
    """

    def __init__(
        self,
        root_path: str | pathlib.Path,
        range_support: bool = True,
        max_lifetime: int = 120,
        handler: type[BaseHTTPRequestHandler] | None = None,
        handler_options: dict[str, Any] | None = None,
    ) -> None:
        self.root_path = root_path
        self.range_support = range_support
        self.max_lifetime = max_lifetime
        self.handler = handler
        self.handler_options = handler_options or {}

    @staticmethod
    def _server(queue, handler, handler_options: dict[str, Any], max_lifetime: int) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                    functools.partial(handler, **handler_options))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        queue.put(httpd.server_address)
        time.sleep(max_lifetime)
        print(f"ThreadingHTTPServer shutting down because of timeout ({max_lifetime}sec)")

    def __enter__(self) -> "LocalHttpServer":
        if self.handler is not None:
            handler = self.handler
        elif self.range_support:
            handler = RangeRequestHandler
        else:
            handler = SimpleHTTPRequestHandler
        options = {**self.handler_options, "directory": str(self.root_path)}
        queue = multiprocessing.Queue()
        self.process = multiprocessing.Process(
            target=LocalHttpServer._server,
            args=(queue, handler, options, self.max_lifetime),
        )
        self.process.start()
        ip, port = queue.get()
        self.ip = ip
        self.port = port
        self.url = f"http://{ip}:{port}"
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.process.kill()
        self.process.join()


def call_once(func: Callable) -> Callable:
    """Calls ``func`` the first time only; every later call returns the first result (whatever
    its arguments), as upstream's does."""
    result: list[Any] = []

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not result:
            result.append(func(*args, **kwargs))
        return result[0]

    return wrapper


def kvikio_deprecation_notice(
    msg: str = "This function is deprecated.", *, since: str
) -> Callable:
    """Decorator: the function warns ``FutureWarning(msg)`` at each call, and its docstring
    starts with ``.. deprecated:: <since> <msg>``."""

    def decorator(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            warnings.warn(msg, category=FutureWarning, stacklevel=2)
            return func(*args, **kwargs)

        wrapper.__doc__ = f".. deprecated:: {since} {msg}\n\n{func.__doc__ or ''}"
        return wrapper

    return decorator


def kvikio_deprecate_module(msg: str = "", *, since: str) -> None:
    """Warns, from a module being imported, that the module is deprecated."""
    warnings.warn(
        f"This module is deprecated since {since}. {msg}",
        category=FutureWarning,
        stacklevel=2,
    )


def serve(directory: str, host: str = "127.0.0.1", port: int = 8000,
          delay_ms: float = 0.0) -> None:
    """Serves ``directory`` at ``http://host:port/`` with HEAD and range requests until
    interrupted; prints the URL first (``port`` 0: any free port)."""
    handler = functools.partial(RangeRequestHandler, directory=directory,
                                first_byte_delay=delay_ms / 1000)
    with ThreadingHTTPServer((host, port), handler) as httpd:
        bound_host, bound_port = httpd.server_address[:2]
        delay = f", {delay_ms:g} ms before each response" if delay_ms > 0 else ""
        print(f"serving {directory} at http://{bound_host}:{bound_port}/ (HEAD and ranges{delay});"
              " Ctrl-C stops", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kvikio.utils",
                                     description="A local HTTP server for remote reads.")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="serve a folder with HEAD and range requests")
    s.add_argument("directory", help="the folder to serve")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="port (8000; 0: any free one)")
    s.add_argument("--delay-ms", type=float, default=0.0,
                   help="milliseconds to wait before each response (0)")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.directory):
        parser.error(f"{args.directory!r} is not a folder")
    serve(args.directory, args.host, args.port, args.delay_ms)


if __name__ == "__main__":
    main()
