"""A loopback HTTP server for a run's egress to reach (53-egress-service.py, bench/egress.py, which
imports it on the host too). Standard library only.

    srv = serve(lambda path: b"body")    # srv.server_address[1] is its port; srv.shutdown() ends it
"""
import http.server
import threading


def serve(body):
    """A server on 127.0.0.1 at an ephemeral port, serving on a daemon thread until its shutdown():
    every GET is answered 200 with body(path), its Content-Length set, and nothing is logged."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            data = body(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
