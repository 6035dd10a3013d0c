#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small, protocol-faithful WebHDFS server for KvikIO's tests (standard library only).

    webhdfs.py PORT ROOT

GET /webhdfs/v1/<path>?op=GETFILESTATUS          -> {"FileStatus": {..., "length": N, ...}}
GET /webhdfs/v1/<path>?op=OPEN[&offset=&length=] -> 307 to /datanode/<path>?offset=&length=
GET /datanode/<path>?offset=&length=             -> the bytes (as a data node would send them)
Missing files answer 404 with a RemoteException, as Hadoop does. Prints "ready <port>" once
listening (PORT 0: a free port of the kernel's choosing).
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

PORT = int(sys.argv[1])
ROOT = sys.argv[2]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed acknowledgement of the headers (40 ms a response on Linux loopback).
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def _reply(self, status, body, content_type="application/json", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _missing(self, path):
        body = json.dumps({"RemoteException": {"exception": "FileNotFoundException",
                                               "javaClassName": "java.io.FileNotFoundException",
                                               "message": f"File does not exist: {path}"}}).encode()
        self._reply(404, body)

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path.startswith("/webhdfs/v1/"):
            path = unquote(url.path[len("/webhdfs/v1/"):])
            local = os.path.join(ROOT, path)
            if not os.path.isfile(local):
                return self._missing("/" + path)
            op = query.get("op", "").upper()
            if op == "GETFILESTATUS":
                status = {"FileStatus": {"accessTime": 0, "blockSize": 134217728, "group": "supergroup",
                                         "length": os.path.getsize(local), "modificationTime": 0,
                                         "owner": query.get("user.name", "hdfs"), "pathSuffix": "",
                                         "permission": "644", "replication": 1, "type": "FILE"}}
                return self._reply(200, json.dumps(status).encode())
            if op == "OPEN":
                offset = query.get("offset", "0")
                length = query.get("length", str(os.path.getsize(local) - int(offset)))
                location = f"http://127.0.0.1:{PORT}/datanode/{path}?offset={offset}&length={length}"
                return self._reply(307, b"", headers=[("Location", location)])
            return self._reply(400, b'{"RemoteException":{"message":"unsupported op"}}')
        if url.path.startswith("/datanode/"):
            local = os.path.join(ROOT, unquote(url.path[len("/datanode/"):]))
            if not os.path.isfile(local):
                return self._missing(url.path)
            offset, length = int(query["offset"]), int(query["length"])
            with open(local, "rb") as f:
                f.seek(offset)
                data = f.read(length)
            return self._reply(200, data, "application/octet-stream")
        self._reply(404, b"")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # listen() backlog: the default 5 drops bursts of connects (1 s stalls)


def main():
    global PORT
    server = Server(("127.0.0.1", PORT), Handler)
    PORT = server.server_address[1]  # the redirects name the port bound (PORT 0: any free one)
    print(f"ready {PORT}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
