#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An HTTP server that misbehaves on purpose, for KvikIO's fault tests (standard library only).

    misbehaving_http.py PORT SIZE

Serves one object of SIZE deterministic bytes (byte i = (i * 7 + 3) % 251) under every path,
with the ETag "v1" (redirects: "moved"); the first path segment picks the behaviour:

    /ok/...            honours Range
    /ignore-range/...  answers 200 with the whole object
    /flaky/N/...       answers 503 to the first N requests of this path (HEAD or GET, any
                       query), then honours Range
    /reset/...         sends half the range, then resets the connection
    /short/...         promises the range (Content-Length) but sends half of it and closes
    /stall/...         sends headers, then nothing for 30 s
    /wrong-range/...   answers 206 with the right length but the bytes (and Content-Range) of
                       the range one byte further
    /whole-as-206/...  answers every range with 206 and the whole object, its Content-Range
                       naming the whole (as some S3 servers answer "bytes=0-0")
    /resized/...       answers ranges with the right bytes, but its Content-Range names a total
                       one byte larger than HEAD said (the object changed since it was opened)
    /unknown-total/... answers ranges with Content-Range "bytes first-last/*"
    /rewritten/...     answers ranges with ETag "v2" and other bytes of the same size, while
                       HEAD said "v1" (the object was replaced since it was opened)
    /weak-tag/...      answers HEAD with the weak ETag W/"v1" (ranges: "v1", the same version)
    /redirect/...      answers 307 to the same path under /ok/ (HEAD and GET)
    /redirect-loop/... answers 307 to itself, forever
    /404/..., /403/... that status
    /length/V/...      answers HEAD with the header "Content-Length: V", V as written (percent-
                       decoded): numbers that do not parse cleanly
    /echo/...          answers 403 with the request line and every header it received as a
                       plain-text body (a server that echoes secrets)
    /echo-xml/...      the same inside S3's XML error document (SignatureDoesNotMatch, with the
                       request as its CanonicalRequest, as S3 answers a wrong signature)
    /requests/...      answers 200 with the number of ranged GETs served so far under the same
                       path with /ok/ in its place (decimal text): tests count the requests a
                       read made
A path under /webhdfs/v1/ is the same behaviour spoken as WebHDFS: ?op=GETFILESTATUS answers
the object's FileStatus (JSON), ?op=OPEN&offset=O&length=L answers 200 with those bytes;
/webhdfs/v1/user-is/NAME/... answers 403 unless the query's user.name, decoded, is NAME (decoded).
Prints "ready <port>" on stdout once listening (PORT 0: a free port of the kernel's choosing).
"""
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIZE = int(sys.argv[2])
DATA = bytes((i * 7 + 3) % 251 for i in range(SIZE))
COUNTS = {}
RANGED_GETS = {}
LOCK = threading.Lock()


def parse_range(header):
    if not header or not header.startswith("bytes="):
        return 0, SIZE - 1
    first, last = header[len("bytes="):].split("-")
    return int(first), min(int(last), SIZE - 1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed acknowledgement of the headers (40 ms a response on Linux loopback).
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body, content_range=None, length=None, tag='"v1"'):
        self.send_response(status)
        self.send_header("ETag", tag)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.send_header("Accept-Ranges", "bytes")
        if content_range:
            self.send_header("Content-Range", content_range)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path, _, query = self.path.partition("?")
        webhdfs = path.startswith("/webhdfs/v1/")
        parts = path[len("/webhdfs/v1/") if webhdfs else 0:].strip("/").split("/")
        kind = parts[0]
        with LOCK:
            COUNTS[path] = COUNTS.get(path, 0) + 1
            count = COUNTS[path]
            if self.command == "GET" and self.headers.get("Range"):
                RANGED_GETS[path] = RANGED_GETS.get(path, 0) + 1
            served = RANGED_GETS.get("/ok/" + "/".join(parts[1:]), 0)
        if kind == "requests":
            return self._send(200, str(served).encode())
        if kind in ("echo", "echo-xml"):
            request = self.requestline + "\n" + str(self.headers)
            if kind == "echo-xml":
                request = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
                           "SignatureDoesNotMatch</Code><Message>The request signature we "
                           "calculated does not match the signature you provided.</Message>"
                           f"<CanonicalRequest>{request}</CanonicalRequest></Error>")
            return self._send(403, request.encode())
        if kind == "length" and self.command == "HEAD":
            self.send_response(200)
            self.send_header("Content-Length", urllib.parse.unquote(parts[1]))
            self.end_headers()
            return
        if webhdfs and kind == "user-is":
            user = urllib.parse.parse_qs(query).get("user.name", [None])[0]
            if user != urllib.parse.unquote(parts[1]):
                return self._send(403, f"user.name {user!r} is not {parts[1]!r}".encode())
        if kind in ("404", "403"):
            return self._send(int(kind), b"no")
        if kind == "flaky" and count <= int(parts[1]):
            return self._send(503, b"busy")
        if webhdfs:
            return self._webhdfs(dict(p.split("=", 1) for p in query.split("&") if "=" in p))
        if kind in ("redirect", "redirect-loop"):
            target = path if kind == "redirect-loop" else "/ok/" + "/".join(parts[1:])
            self.send_response(307)
            self.send_header("Location", target)
            self.send_header("ETag", '"moved"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        first, last = parse_range(self.headers.get("Range"))
        body = DATA[first:last + 1]
        content_range = f"bytes {first}-{last}/{SIZE}"
        if self.command == "HEAD":
            return self._send(200, DATA, tag='W/"v1"' if kind == "weak-tag" else '"v1"')
        if kind == "rewritten":
            other = bytes(255 - b for b in body)
            return self._send(206, other, content_range, tag='"v2"')
        if kind == "ignore-range":
            return self._send(200, DATA)
        if kind == "reset":
            self.send_response(206)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Range", content_range)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if kind == "short":
            self._send(206, body[: len(body) // 2], content_range, length=len(body))
            self.close_connection = True
            return
        if kind == "wrong-range":
            shifted = DATA[first + 1:last + 2]
            if len(shifted) == len(body):
                return self._send(206, shifted, f"bytes {first + 1}-{last + 1}/{SIZE}")
        if kind == "resized":
            return self._send(206, body, f"bytes {first}-{last}/{SIZE + 1}")
        if kind == "unknown-total":
            return self._send(206, body, f"bytes {first}-{last}/*")
        if kind == "whole-as-206":
            return self._send(206, DATA, f"bytes 0-{SIZE - 1}/{SIZE}")
        if kind == "stall":
            self.send_response(206)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            time.sleep(30)
            return
        return self._send(206, body, content_range)


    def _webhdfs(self, args):
        if args.get("op") == "GETFILESTATUS":
            return self._send(200, ('{"FileStatus":{"length":%d,"type":"FILE"}}' % SIZE).encode())
        first = int(args.get("offset", 0))
        return self._send(200, DATA[first:first + int(args.get("length", SIZE))])


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # listen() backlog: the default 5 drops bursts of connects (1 s stalls)


def main():
    server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
