"""Clients for a fleet of mcp-execd instances behind HAProxy (tests/systemd/47-fleet.py, issue 19):
2026-07-28 stateless calls, 2025-11-25 sessions, and a mixed load over threads. Standard library
only (the guest has no npm)."""
import http.client
import json
import threading

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
TASKS = "io.modelcontextprotocol/tasks"
META_TASKS = dict(META, **{"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}})


class CallError(Exception):
    """An answer that is not a tool result: an HTTP status other than 200, a JSON-RPC error, or a
    connection that ended without an answer."""


def post(port, body, headers, timeout=120):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        r = c.getresponse()
        text = r.read().decode(errors="replace")
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), text
    except (OSError, http.client.HTTPException) as e:
        raise CallError("no answer: %s: %s" % (type(e).__name__, e))
    finally:
        c.close()


def message_of(status, headers, text, rid):
    if status != 200:
        raise CallError("HTTP %d: %s" % (status, text[:200]))
    if headers.get("content-type", "").startswith("text/event-stream"):
        for line in text.splitlines():
            if line.startswith("data:"):
                m = json.loads(line[5:].strip())
                if m.get("id") == rid:
                    return m
        raise CallError("no answer in the event stream: %r" % text[:200])
    return json.loads(text) if text else None


def result_of(m):
    if "result" not in m:
        raise CallError("JSON-RPC error: %r" % m.get("error"))
    return m["result"]


def modern_request(port, token, method, params, name=None, rid=1, timeout=120, meta=META):
    """One 2026-07-28 request standing alone; returns its result (CallError for anything else)."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": dict(params, _meta=meta)}
    return result_of(message_of(*post(port, body, h, timeout), rid))


def tool(port, token, name, args, rid=1, timeout=120):
    """A 2026 tools/call of any tool; returns structuredContent, CallError on a tool error."""
    r = modern_request(port, token, "tools/call", {"name": name, "arguments": args}, name, rid, timeout)
    if r.get("isError"):
        raise CallError("%s: tool error: %r" % (name, r.get("content")))
    return r["structuredContent"]


def task_create(port, token, code, rid=1):
    """exec as a 2026 task; returns the task's id (its instance tag first) at once."""
    created = modern_request(port, token, "tools/call", {"name": "exec", "arguments": {"code": code}}, "exec", rid,
                             meta=META_TASKS)
    if created.get("resultType") != "task":
        raise CallError("not a task: %r" % created)
    return created["taskId"]


def task_request(port, token, method, tid, rid=1):
    """tasks/get or tasks/cancel of one task (its Mcp-Name is the task id, by which HAProxy finds
    the instance)."""
    return modern_request(port, token, method, {"taskId": tid}, tid, rid, meta=META_TASKS)


def task_call(port, token, code, rid=1, deadline=300):
    """exec as a 2026 task: created through the balancer, polled with tasks/get, the result inlined
    once completed."""
    import time
    tid = task_create(port, token, code, rid)
    end = time.monotonic() + deadline
    while True:
        t = task_request(port, token, "tasks/get", tid, rid)
        if t.get("status") != "working":
            break
        if time.monotonic() > end:
            raise CallError("task %s still working after %d s" % (tid, deadline))
        time.sleep(0.5)
    if t.get("status") != "completed":
        raise CallError("task %s ended %r" % (tid, t))
    if t["result"].get("isError"):
        raise CallError("task %s: tool error: %r" % (tid, t["result"].get("content")))
    return t["result"]["structuredContent"]


def modern_call(port, token, code, rid=1, timeout=120, **args):
    """One 2026-07-28 tools/call of exec, standing alone (args: more of exec's arguments, such as
    timeout_s). Returns structuredContent."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "Authorization": "Bearer " + token, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
         "Mcp-Name": "exec"}
    body = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec", "arguments": dict(args, code=code), "_meta": META}}
    r = result_of(message_of(*post(port, body, h, timeout), rid))
    if r.get("isError"):
        raise CallError("tool error: %r" % r.get("content"))
    return r["structuredContent"]


class Session:
    """A 2025-11-25 client: initialize, then calls with its Mcp-Session-Id."""

    def __init__(self, port, token):
        self.port, self.token, self.sid, self.next_id = port, token, None, 1

    def _headers(self):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "Authorization": "Bearer " + self.token, "MCP-Protocol-Version": "2025-11-25"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        return h

    def request(self, method, params, timeout=120):
        rid = self.next_id
        self.next_id += 1
        status, headers, text = post(self.port, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params},
                                     self._headers(), timeout)
        if headers.get("mcp-session-id"):
            self.sid = headers["mcp-session-id"]
        return result_of(message_of(status, headers, text, rid))

    def open(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "tier-fleet", "version": "1"}})
        status, _, text = post(self.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, self._headers())
        if status != 202:
            raise CallError("notifications/initialized: HTTP %d %s" % (status, text[:200]))
        return self

    def call(self, code, timeout=120):
        r = self.request("tools/call", {"name": "exec", "arguments": {"code": code}}, timeout)
        if r.get("isError"):
            raise CallError("tool error: %r" % r.get("content"))
        return r["structuredContent"]


def in_parallel(items, inflight, fn):
    """fn(item) for each of items, in their order, `inflight` at a time on as many threads. Returns
    (results, failures): what fn returned, and (item, "Type: message") for each item whose fn
    raised; every failure is kept, never one lost with its thread."""
    lock = threading.Lock()
    todo, results, failures = list(items), [], []

    def worker():
        while True:
            with lock:
                if not todo:
                    return
                item = todo.pop(0)
            try:
                r = fn(item)
            except Exception as e:  # anything is a failure to report
                with lock:
                    failures.append((item, "%s: %s" % (type(e).__name__, e)))
            else:
                with lock:
                    results.append(r)

    threads = [threading.Thread(target=worker) for _ in range(inflight)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, failures


def mixed_load(port, token, n, inflight, sessions=6, pysessions=0):
    """n calls, `inflight` at a time, by i % 6: 2026 stateless calls (0, 1, 3), calls in `sessions`
    2025-era sessions (2), calls in `pysessions` Python sessions (4; each keeps a counter, which
    must go up by one per call: a call on another instance would fail or start from nothing) and
    2026 tasks (5). With no Python sessions, 4 is a stateless call. Each session's calls are one at
    a time. Every call prints a value of its own, checked. Returns (answered, failures), each
    failure (i, "Type: message")."""
    sess = [Session(port, token).open() for _ in range(sessions)]
    sess_locks = [threading.Lock() for _ in sess]
    py = [tool(port, token, "session_open", {})["session"] for _ in range(pysessions)]
    for h in py:
        tool(port, token, "exec", {"code": "n = 0", "session": h})
    py_locks = [threading.Lock() for _ in py]
    py_count = [0 for _ in py]

    def call(i):
        want = "v%d" % (i * 7919)
        code = "print('v%%d' %% (%d * 7919))" % i
        if i % 6 == 2:
            k = i % len(sess)
            with sess_locks[k]:
                sc = sess[k].call(code)
        elif i % 6 == 4 and py:
            k = i % len(py)
            with py_locks[k]:
                sc = tool(port, token, "exec", {"code": "n += 1\nprint(n)", "session": py[k]}, rid=i + 1)
                py_count[k] += 1
                if sc.get("stdout") != "%d\n" % py_count[k]:
                    raise CallError("Python session %s: n is %r after %d calls" % (py[k], sc.get("stdout"),
                                                                                   py_count[k]))
                sc = dict(sc, stdout=want + "\n")
        elif i % 6 == 5:
            sc = task_call(port, token, code, rid=i + 1)
        else:
            sc = modern_call(port, token, code, rid=i + 1)
        if sc.get("stdout") != want + "\n":
            raise CallError("call %d: stdout %r, want %r" % (i, sc.get("stdout"), want))

    answered, failures = in_parallel(range(n), inflight, call)
    return len(answered), failures
