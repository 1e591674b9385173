"""A svc webhook receiver: checks X-Svc-Signature, then prints each event. Run:
SVC_WEBHOOK_SECRET=... python receiver.py 8080"""
import hashlib  # noqa: E401
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

SECRET = os.environ["SVC_WEBHOOK_SECRET"].encode()


def verified(header: str, body: bytes, tolerance: int = 300) -> bool:
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    t = parts.get("t", "")
    expected = hmac.new(SECRET, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return t.isdigit() and abs(time.time() - int(t)) < tolerance and hmac.compare_digest(expected, parts.get("v1", ""))


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ok = verified(self.headers.get("X-Svc-Signature", ""), body)
        self.send_response(204 if ok else 401)
        self.end_headers()
        for event in json.loads(body)["events"] if ok else []:  # dedupe by event["id"]: at least once
            print(event["id"], event["type"], event.get("itemId"), flush=True)


HTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
