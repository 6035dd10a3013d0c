#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small, protocol-faithful WebHDFS server for KvikIO's tests (standard library only).

    webhdfs.py PORT ROOT

GET /webhdfs/v1/<path>?op=GETFILESTATUS          -> {"FileStatus": {..., "length": N, ...}}
GET /webhdfs/v1/<path>?op=OPEN[&offset=&length=] -> 307 to /datanode/<path>?offset=&length=
GET /datanode/<path>?offset=&length=             -> the bytes (as a data node would send them)
GET /webhdfs/v1/?op=GETHOMEDIRECTORY              -> {"Path": "/user/<user.name>"}
PUT /webhdfs/v1/<path>?op=CREATE                  -> 307 to /datanode/<path>?op=CREATE
PUT /datanode/<path>?op=CREATE (the body)         -> 201, the file written
DELETE /webhdfs/v1/<path>?op=DELETE               -> {"boolean": true|false}
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

    def _request(self, prefix):
        """(path below `prefix`, its file under ROOT, the query) of this request; None if the
        request is not under `prefix` or its path leaves ROOT."""
        url = urlsplit(self.path)
        if not url.path.startswith(prefix):
            return None
        path = unquote(url.path[len(prefix):])
        local = os.path.normpath(os.path.join(ROOT, path))
        if local != os.path.normpath(ROOT) and not local.startswith(os.path.normpath(ROOT) + os.sep):
            return None
        return path, local, {k: v[-1] for k, v in parse_qs(url.query).items()}

    def do_PUT(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length > 0 else b""
        name_node = self._request("/webhdfs/v1/")
        if name_node and name_node[2].get("op", "").upper() == "CREATE":
            location = f"http://127.0.0.1:{PORT}/datanode/{name_node[0]}?op=CREATE"
            return self._reply(307, b"", headers=[("Location", location)])
        data_node = self._request("/datanode/")
        if data_node and data_node[2].get("op", "").upper() == "CREATE":
            os.makedirs(os.path.dirname(data_node[1]), exist_ok=True)
            with open(data_node[1], "wb") as f:
                f.write(body)
            return self._reply(201, b"", headers=[("Location", "hdfs://" + data_node[0])])
        self._reply(400, b'{"RemoteException":{"message":"unsupported PUT"}}')

    def do_DELETE(self):
        request = self._request("/webhdfs/v1/")
        if request and request[2].get("op", "").upper() == "DELETE":
            existed = os.path.isfile(request[1])
            if existed:
                os.remove(request[1])
            return self._reply(200, json.dumps({"boolean": existed}).encode())
        self._reply(400, b'{"RemoteException":{"message":"unsupported DELETE"}}')

    def do_GET(self):
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path.startswith("/webhdfs/v1/") and query.get("op", "").upper() == "GETHOMEDIRECTORY":
            home = {"Path": "/user/" + query.get("user.name", "hdfs")}
            return self._reply(200, json.dumps(home).encode())
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
