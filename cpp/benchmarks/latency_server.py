#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An HTTP server with an object store's first-byte latency, for kvikio_bench remote.

    latency_server.py PORT ROOT DELAY_MS [SIGMA]

Serves the files under ROOT to GET (with one Range) and HEAD, HTTP/1.1 keep-alive, one thread
per connection. Each GET waits DELAY_MS before its first byte (with SIGMA > 0: a lognormal
delay of median DELAY_MS and that shape, i.e. a long tail), then sends the range with sendfile,
so the bytes never pass through Python. `tc netem` is not available on the benchmark machines;
this puts the latency where an object store has it. Standard library only. Prints "ready".
"""
import os
import random
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

PORT, ROOT, DELAY_MS = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
SIGMA = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0


def delay_seconds():
    if DELAY_MS <= 0:
        return 0.0
    if SIGMA <= 0:
        return DELAY_MS / 1000
    return random.lognormvariate(0.0, SIGMA) * DELAY_MS / 1000


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle's algorithm the body would wait for
    # the client's delayed acknowledgement of the headers (40 ms a response on Linux loopback),
    # a latency no object store adds.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = os.path.join(ROOT, unquote(urlsplit(self.path).path).lstrip("/"))
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(path)
        first, last, status = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, b = rng[len("bytes="):].split("-")
            first, last, status = int(a), min(int(b), size - 1), 206
        if self.command == "GET":
            time.sleep(delay_seconds())
        self.send_response(status)
        self.send_header("Content-Length", str(last - first + 1))
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.end_headers()
        if self.command == "HEAD":
            return
        self.wfile.flush()
        with open(path, "rb") as f:
            sent, count = first, last - first + 1
            while count > 0:
                n = os.sendfile(self.connection.fileno(), f.fileno(), sent, count)
                if n == 0:
                    break
                sent += n
                count -= n


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen() backlog: the default 5 drops bursts of connects (1 s stalls)


def main():
    server = Server(("127.0.0.1", PORT), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
