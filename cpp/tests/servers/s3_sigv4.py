#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A minimal S3 server that checks every request's AWS SigV4 signature with botocore.

    s3_sigv4.py PORT ROOT

Objects are the files ROOT/<bucket>/<key>, served to GET (with Range) and HEAD. The credentials
are fixed: access key KVIKIOTESTKEY, secret kvikio-test-secret, region us-east-1. Each signed
request's signature is recomputed by botocore (an implementation independent of libcurl's) from
the headers the request says it signed; a mismatch answers 403 SignatureDoesNotMatch. Unsigned
requests are served only from the bucket "public". Presigned URLs (query-string SigV4) are
checked the same way, expiry included. Prints "ready <port>" once listening (PORT 0: a free port
of the kernel's choosing).

    s3_sigv4.py presign URL [SECRET]

prints URL presigned by botocore (valid one hour) with the server's key, or with SECRET instead of
the server's secret (a URL the server must refuse).
"""
import calendar
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ACCESS_KEY, SECRET, REGION = "KVIKIOTESTKEY", "kvikio-test-secret", "us-east-1"
ROOT = None  # the directory of the buckets, from the command line
AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, "
                  r"SignedHeaders=([^,]+), Signature=([0-9a-f]+)")


def error(code, message):
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: with Nagle's algorithm the body would wait for the
    # client's delayed acknowledgement of the headers (40 ms a response on Linux loopback).
    disable_nagle_algorithm = True

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
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        if "X-Amz-Signature" in query:
            return self._presigned_problem({name: values[0] for name, values in query.items()})
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

    def _presigned_problem(self, query):
        try:
            access_key, _, region = query["X-Amz-Credential"].split("/")[:3]
            signed = query["X-Amz-SignedHeaders"]
            timestamp, expires = query["X-Amz-Date"], int(query["X-Amz-Expires"])
        except (KeyError, ValueError):
            return ("AuthorizationQueryParametersError", "incomplete presigned URL")
        if access_key != ACCESS_KEY or region != REGION:
            return ("InvalidAccessKeyId", f"unknown key {access_key} or region {region}")
        if calendar.timegm(time.strptime(timestamp, "%Y%m%dT%H%M%SZ")) + expires < time.time():
            return ("AccessDenied", "Request has expired")
        # botocore signs everything but the signature itself: recompute from the rest.
        parts = urlsplit(self.path)
        unsigned = "&".join(p for p in parts.query.split("&") if not p.startswith("X-Amz-Signature="))
        request = AWSRequest(method=self.command, url=f"http://{self.headers['Host']}{parts.path}?{unsigned}",
                             headers={name: self.headers[name] for name in signed.split(";")})
        request.context["timestamp"] = timestamp
        auth = S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET), "s3", REGION, expires=expires)
        expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
        if expected != query["X-Amz-Signature"]:
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


def presign(url, secret):
    request = AWSRequest(method="GET", url=url)
    S3SigV4QueryAuth(Credentials(ACCESS_KEY, secret), "s3", REGION, expires=3600).add_auth(request)
    return request.url


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # listen() backlog: the default 5 drops bursts of connects (1 s stalls)


def main():
    global ROOT
    if sys.argv[1] == "presign":
        print(presign(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else SECRET))
        return
    ROOT = sys.argv[2]
    server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
