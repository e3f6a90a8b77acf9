"""A plain HTTP server on the host's loopback, in a process of its own: what a confined command would like to
reach. Every GET answers "hello from the host"; each request line it received is appended to a file.

python hello_http.py PORT [LOG]
"""

from __future__ import annotations

import http.server
import sys
from typing import Any


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if len(sys.argv) > 2:
            with open(sys.argv[2], "a", encoding="utf-8") as log:
                log.write(f"{self.requestline} Host={self.headers.get('Host')}\n")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"hello from the host")

    def log_message(self, *args: Any) -> None:
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hello).serve_forever()
