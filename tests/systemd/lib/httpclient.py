"""A small MCP client over Streamable HTTP (2025-11-25) for the service tests (43, 51): a session,
its requests with a bearer token, the answer whether it comes as JSON or as an event stream."""
import http.client
import json

from mcpclient import TestFailure


class Client:
    def __init__(self, token, port=8080, name="tier-43", host="127.0.0.1"):
        self.token = token
        self.port = port
        self.host = host
        self.name = name
        self.session = None
        self.next_id = 1

    def post(self, msg, timeout=90):
        c = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": "Bearer " + self.token, "MCP-Protocol-Version": "2025-11-25"}
        if self.session:
            h["Mcp-Session-Id"] = self.session
        c.request("POST", "/mcp", body=json.dumps(msg), headers=h)
        r = c.getresponse()
        body = r.read().decode(errors="replace")
        sid = r.getheader("Mcp-Session-Id")
        if sid:
            self.session = sid
        ctype = r.getheader("Content-Type") or ""
        c.close()
        if r.status == 202:
            return None
        if r.status != 200:
            raise TestFailure("POST /mcp %s: HTTP %d %s" % (msg.get("method"), r.status, body[:300]))
        if ctype.startswith("text/event-stream"):
            for line in body.splitlines():
                if line.startswith("data:"):
                    m = json.loads(line[5:].strip())
                    if m.get("id") == msg.get("id"):
                        return m
            raise TestFailure("no response in the event stream: %r" % body[:500])
        return json.loads(body)

    def request(self, method, params, timeout=90):
        rid = self.next_id
        self.next_id += 1
        return self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, timeout)

    def initialize(self):
        r = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": self.name, "version": "1"}})
        if "result" not in r:
            raise TestFailure("initialize: %r" % r)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def exec_code(self, code, **args):
        args["code"] = code
        r = self.request("tools/call", {"name": "exec", "arguments": args})
        if "result" not in r:
            raise TestFailure("tools/call: %r" % r)
        return r["result"]
