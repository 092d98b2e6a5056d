#!/usr/bin/env python3
"""Exploration (not part of the suite): which hardening options the sandbox survives."""
# tier-timeout: 400
import json, os, socket, subprocess, sys, time
SRC = os.environ["MCP_EXECD_SRC"]; EXE = os.environ["MCP_EXECD"]
unit = open(os.path.join(os.environ["MCP_EXECD_BUILD"], "units/mcp-execd.service")).read()
svc = unit.split("[Service]")[1].split("[Install]")[0]
svc = "\n".join(l for l in svc.splitlines() if not l.startswith(("ExecStart=", "LoadCredential=", "Environment=MCP_EXEC_TRANSPORT")))
os.makedirs("/etc/mcp-execd", exist_ok=True)
def variant(name, extra):
    body = "[Unit]\nDescription=explore %s\n[Service]\n%s\nExecStart=%s\nEnvironment=MCP_EXEC_TRANSPORT=stdio\nStandardInput=socket\nStandardOutput=socket\nStandardError=journal\n%s\n" % (name, svc, EXE, extra)
    open("/run/systemd/system/mcpx-%s@.service" % name, "w").write(body)
    open("/run/systemd/system/mcpx-%s.socket" % name, "w").write("[Socket]\nListenStream=/run/mcpx-%s.sock\nAccept=yes\n" % name)
def session(name, codes):
    s = socket.socket(socket.AF_UNIX); s.connect("/run/mcpx-%s.sock" % name); s.settimeout(60)
    f = s.makefile("rwb")
    def req(i, m, p):
        f.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}) + "\n").encode()); f.flush()
        while True:
            l = f.readline()
            if not l: return {"closed": True}
            r = json.loads(l)
            if r.get("id") == i: return r
    req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
    f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'); f.flush()
    out = []
    for i, c in enumerate(codes):
        r = req(10 + i, "tools/call", {"name": "exec", "arguments": {"code": c}})
        res = r.get("result", r)
        sc = res.get("structuredContent")
        out.append(sc and {k: sc[k] for k in ("stdout", "stderr", "exit_code", "limits")} or res)
    s.close()
    return out
variants = {
    "base": "",
    "kl": "ProtectKernelLogs=yes",
    "kt": "ProtectKernelTunables=yes",
    "hn": "ProtectHostname=yes",
    "pp": "ProtectProc=invisible",
    "nodac": "CapabilityBoundingSet=\nCapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_CHOWN",
    "mdwe": "MemoryDenyWriteExecute=yes",
    "res": "SystemCallFilter=~@resources",
}
for n, e in variants.items(): variant(n, e)
subprocess.run(["systemctl", "daemon-reload"])
for n in variants: subprocess.run(["systemctl", "start", "mcpx-%s.socket" % n])
codes = ["print('hi', open('/proc/self/status').read().count('\\n'))",
         "import ctypes\nCB=ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))\na=(ctypes.c_int*3)(3,1,2)\nlibc=ctypes.CDLL(None)\nlibc.qsort(a,3,4,CB(lambda x,y: x[0]-y[0]))\nprint(list(a))",
         "import numpy; print(numpy.arange(5).sum())"]
for n in variants:
    t = time.time()
    try:
        print(n, "->", session(n, codes), "%.1fs" % (time.time() - t))
    except Exception as ex:
        print(n, "-> EXC", ex)
    sys.stdout.flush()
print(subprocess.run("journalctl -b --no-pager -o cat _SYSTEMD_UNIT=mcpx-base@0-1-0.service | tail -5; journalctl -b --no-pager -o short -t mcp-execd | grep -iv 'MESSAGE_ID' | tail -40; systemctl list-units 'mcp-execd-run*' --no-pager", shell=True, capture_output=True, text=True).stdout)
print(subprocess.run("journalctl -b --no-pager -o json -t mcp-execd | head -3", shell=True, capture_output=True, text=True).stdout)
