#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""moto's S3 server (PyPI's moto[server], the S3 peer upstream's tests use), for KvikIO's remote
tests. Run with the Python of the virtual environment ci/install-deps.sh makes.

    moto_s3.py PORT BUCKET

Listens on loopback PORT (0: a free port of the kernel's choosing), creates BUCKET through the
S3 protocol, then prints "ready <port>" on stdout and serves until it is killed. moto speaks the
S3 protocol (path-style bucket/key, ranges, error codes and their XML bodies) but does not check
signatures: servers/s3_sigv4.py does that.
"""
import logging
import sys
import threading
import urllib.request

from moto.server import ThreadedMotoServer


def main():
    port, bucket = int(sys.argv[1]), sys.argv[2]
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    port = server.get_host_and_port()[1]
    create = urllib.request.Request(f"http://127.0.0.1:{port}/{bucket}", method="PUT")
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no http_proxy
    with direct.open(create, timeout=10) as answer:
        if answer.status != 200:
            sys.exit(f"moto_s3.py: creating bucket {bucket} answered HTTP {answer.status}")
    print(f"ready {port}", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
