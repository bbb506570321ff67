#!/usr/bin/env python3
"""A tiny HTTP file server for the fetch tests (tests/e2e/36-dataset-fetch.t), on 127.0.0.1 and a free port.

Serves the files of DIR with HTTP Range support (bytes=N- and bytes=N-M, 206 with Content-Range), which python3's
http.server lacks. It can cut a transfer in the middle: when DIR/.cut holds a number N, the next GET sends the
full headers (the whole Content-Length) and only N body bytes, then closes the connection, and .cut is removed;
a response of N bytes or fewer is sent whole and leaves .cut for the next one (a cut's 8-byte header request).
Every request is logged to DIR/.log as "PATH RANGE-HEADER" (one line each). The port is written to PORTFILE.

usage: range-server.py DIR PORTFILE
"""
import http.server
import os
import re
import socketserver
import sys

root, portfile = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        rng = self.headers.get("Range", "-")
        with open(os.path.join(root, ".log"), "a") as log:
            log.write(f"{self.path} {rng}\n")
        path = os.path.join(root, os.path.basename(self.path))
        if not os.path.isfile(path) or os.path.basename(path).startswith("."):
            self.send_error(404)
            return
        size = os.path.getsize(path)
        start, end = 0, size - 1
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng) if rng != "-" else None
        if m:
            start = int(m.group(1))
            if m.group(2):
                end = min(int(m.group(2)), size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            self.send_response(200)
        length = end - start + 1
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        cut = None
        cutfile = os.path.join(root, ".cut")
        if os.path.exists(cutfile):
            cut = int(open(cutfile).read().strip())
            if length > cut:
                os.unlink(cutfile)
            else:
                cut = None
        with open(path, "rb") as f:
            f.seek(start)
            left = length if cut is None else min(cut, length)
            while left > 0:
                chunk = f.read(min(65536, left))
                if not chunk:
                    break
                self.wfile.write(chunk)
                left -= len(chunk)
        if cut is not None:
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", 0), Handler)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
