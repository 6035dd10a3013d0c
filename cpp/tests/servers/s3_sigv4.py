#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A minimal S3 server that checks every request's AWS SigV4 signature with botocore.

    s3_sigv4.py PORT ROOT

Objects are the files ROOT/<bucket>/<key>, served to GET (with Range) and HEAD. The credentials
are fixed: access key KVIKIOTESTKEY, secret kvikio-test-secret, region us-east-1. Each signed
request's signature is recomputed by botocore (an implementation independent of libcurl's) from
the headers the request says it signed; a mismatch answers 403 SignatureDoesNotMatch. Unsigned
requests are served only from the bucket "public". Prints "ready" once listening.
"""
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

PORT = int(sys.argv[1])
ROOT = sys.argv[2]
ACCESS_KEY, SECRET, REGION = "KVIKIOTESTKEY", "kvikio-test-secret", "us-east-1"
AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, "
                  r"SignedHeaders=([^,]+), Signature=([0-9a-f]+)")


def error(code, message):
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, status, body, headers=(), send_body=True):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if send_body and self.command != "HEAD":
            self.wfile.write(body)

    def _signature_problem(self, bucket):
        header = self.headers.get("Authorization")
        if header is None:
            return None if bucket == "public" else ("AccessDenied", "anonymous access to a private bucket")
        match = AUTH.fullmatch(header)
        if not match:
            return ("AuthorizationHeaderMalformed", "not an AWS4-HMAC-SHA256 header")
        access_key, _, region, signed, signature = match.groups()
        if access_key != ACCESS_KEY or region != REGION:
            return ("InvalidAccessKeyId", f"unknown key {access_key} or region {region}")
        if "x-amz-content-sha256" not in self.headers:
            return ("InvalidRequest", "missing x-amz-content-sha256")
        request = AWSRequest(method=self.command, url=f"http://{self.headers['Host']}{self.path}",
                             headers={name: self.headers[name] for name in signed.split(";")})
        request.context["timestamp"] = self.headers["x-amz-date"]
        auth = S3SigV4Auth(Credentials(ACCESS_KEY, SECRET, self.headers.get("x-amz-security-token")), "s3", REGION)
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        if expected != signature:
            return ("SignatureDoesNotMatch", "the request signature does not match the one computed")
        return None

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        path = unquote(urlsplit(self.path).path).lstrip("/")
        bucket = path.split("/", 1)[0]
        problem = self._signature_problem(bucket)
        if problem:
            return self._reply(403, error(*problem))
        local = os.path.join(ROOT, path)
        if not os.path.isfile(local):
            return self._reply(404, error("NoSuchKey", path))
        size = os.path.getsize(local)
        with open(local, "rb") as f:
            data = f.read()
        rng = self.headers.get("Range")
        if self.command == "HEAD" or not rng:
            return self._reply(200, data, send_body=self.command != "HEAD")
        first, last = rng[len("bytes="):].split("-")
        first, last = int(first), min(int(last), size - 1)
        self._reply(206, data[first:last + 1], [("Content-Range", f"bytes {first}-{last}/{size}")])


def main():
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
