#!/usr/bin/python3
"""soak.py: many runs through ONE mcp-execd over stdio, watching the daemon's own resources.

    tests/soak/soak.py [--runs 10000] [--every 1000] [--warmup 1000] /path/to/mcp-execd

Drives a mix of runs (ok, non-zero exit, exception, timeout with timeout_s 1, output flood over
a small MCP_EXEC_MAX_OUTPUT_BYTES, stdin, cancellation with notifications/cancelled, and several
calls pipelined at once) and checks every answer. Every --every runs, once the daemon is idle, it
samples the daemon's RSS (VmRSS), open fds, descendant processes and the entries under its
private $TMPDIR (the state directory and whatever is in it) and, with SOAK_CGROUP=systemd (the
systemd tier), the run scopes systemd knows (mcp-execd-run-*) and the cgroup directories below
the run slice, and prints a table. The first sample
at or after --warmup runs is the baseline: at the end RSS may exceed it by at most --rss-drift-kib
(default 1024; negative: report only, for sanitizer builds whose allocator keeps freed memory in
quarantine), and fds, processes, directory entries, scopes and cgroups must equal it at every later sample.
Exit status 0 iff every answer was right and nothing drifted. Python standard library only.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

OUTPUT_CAP = 4096


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("binary", nargs="?", default=os.environ.get("MCP_EXECD"))
    p.add_argument("--runs", type=int, default=10000)
    p.add_argument("--every", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=None, help="default: --every")
    p.add_argument("--rss-drift-kib", type=int, default=1024)
    p.add_argument("--reply-timeout", type=float, default=60.0)
    a = p.parse_args()
    if not a.binary:
        p.error("give the path to mcp-execd (or set MCP_EXECD)")
    a.binary = os.path.abspath(a.binary)
    if a.warmup is None:
        a.warmup = a.every
    return a


class Daemon:
    def __init__(self, binary, tmpdir):
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "TMPDIR": tmpdir,
            "MCP_EXEC_CGROUP": os.environ.get("SOAK_CGROUP", "none"),
            "MCP_EXEC_MAX_OUTPUT_BYTES": str(OUTPUT_CAP),
            "MCP_EXEC_MAX_CONCURRENT": "4",
            # Cold runs unless asked: the idle samples want no process, scope or cgroup under the
            # daemon, and the warm pool keeps its ready sandboxes there (issue 16).
            "MCP_EXEC_WARM_POOL": os.environ.get("MCP_EXEC_WARM_POOL", "0"),
        }
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        self.proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=tmpdir)
        self.pid = self.proc.pid
        self.lock = threading.Condition()
        self.replies = {}
        self.bad_lines = []
        self.stderr_tail = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.next_id = 1

    def _read_stdout(self):
        for line in self.proc.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                self.bad_lines.append(line[:200])
                continue
            with self.lock:
                self.replies[m.get("id")] = m
                self.lock.notify_all()
        with self.lock:
            self.lock.notify_all()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())
            del self.stderr_tail[:-50]

    def send(self, msg):
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params=None):
        i = self.next_id
        self.next_id += 1
        m = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        return i

    def wait(self, ids, timeout):
        end = time.monotonic() + timeout
        with self.lock:
            while not all(i in self.replies for i in ids):
                left = end - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    missing = [i for i in ids if i not in self.replies]
                    raise RuntimeError(f"no reply to ids {missing} (daemon exit status "
                                       f"{self.proc.poll()}); stderr: {self.stderr_tail[-5:]}")
                self.lock.wait(min(left, 1.0))
            return [self.replies.pop(i) for i in ids]

    def close(self):
        try:
            self.proc.stdin.close()
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


# ---- what the daemon holds, from /proc ------------------------------------------------------

def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def descendants(pid):
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, stack = [], list(children.get(pid, []))
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children.get(p, []))
    return out


def run_scopes():
    """Run scopes systemd still knows of, in any state."""
    out = subprocess.run(["systemctl", "list-units", "--all", "--plain", "--no-legend", "mcp-execd-run-*"],
                         capture_output=True, text=True, timeout=60).stdout
    return len([line for line in out.splitlines() if line.strip()])


def run_cgroup_paths():
    """Directories below the slice(s) of the run scopes: scopes and their supervisor/ and payload/."""
    found = []
    for root, dirs, _files in os.walk("/sys/fs/cgroup"):
        if os.path.basename(root) == "mcp-execd.slice":
            found += [os.path.join(r, d) for r, ds, _f in os.walk(root) for d in ds]
            dirs[:] = []
    return found


def run_cgroups():
    return len(run_cgroup_paths())


def describe_cgroups():
    """What is left below the slice, with the processes in each directory (for a failure)."""
    out = []
    for p in run_cgroup_paths():
        try:
            with open(os.path.join(p, "cgroup.procs")) as f:
                procs = f.read().split()
        except OSError as e:
            procs = [str(e)]
        cmds = []
        for pid in procs[:5]:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:60]
                cmds.append(f"{pid}:{cmd}")
            except OSError:
                cmds.append(pid)
        out.append(f"{p.replace('/sys/fs/cgroup/', '')} [{', '.join(cmds)}]")
    return out


def tmp_entries(tmpdir):
    n = 0
    for _root, dirs, files in os.walk(tmpdir):
        n += len(dirs) + len(files)
    return n


# ---- the mix ---------------------------------------------------------------------------------

def exec_call(d, args):
    return d.request("tools/call", {"name": "exec", "arguments": args})


def sc_of(reply):
    r = reply.get("result")
    if not r or r.get("isError"):
        raise AssertionError(f"tool error or JSON-RPC error: {json.dumps(reply)[:400]}")
    return r["structuredContent"]


def expect(cond, what, reply):
    if not cond:
        raise AssertionError(f"{what}: {json.dumps(reply)[:600]}")


KINDS = [
    # (name, weight)
    ("ok", 30), ("exit", 10), ("exception", 10), ("flood", 8), ("stdin", 12), ("concurrent", 20),
    ("cancel", 6), ("timeout", 1),
]


def schedule(n):
    """A deterministic interleaving of the kinds, in proportion to their weights."""
    total = sum(w for _, w in KINDS)
    seq = []
    for i in range(n):
        r = (i * 37) % total
        for name, w in KINDS:
            if r < w:
                seq.append(name)
                break
            r -= w
    return seq


def launch(d, kind, i):
    """Sends the requests of one step of the mix; returns (ids, check(replies), runs, cancel_id)."""
    if kind == "ok":
        def check(reps):
            sc = sc_of(reps[0])
            expect(sc["exit_code"] == 0 and sc["stdout"] == f"ok {i}\n", "ok run", reps[0])
        return [exec_call(d, {"code": f"print('ok {i}')"})], check, 1, None
    if kind == "exit":
        def check(reps):
            sc = sc_of(reps[0])
            expect(sc["exit_code"] == 3 and sc["stdout"] == "bye\n", "exit 3", reps[0])
        return [exec_call(d, {"code": "import sys; print('bye'); sys.exit(3)"})], check, 1, None
    if kind == "exception":
        def check(reps):
            sc = sc_of(reps[0])
            expect(sc["exit_code"] == 1 and "ValueError: soak" in sc["stderr"], "exception", reps[0])
        return [exec_call(d, {"code": "raise ValueError('soak')"})], check, 1, None
    if kind == "flood":
        def check(reps):
            sc = sc_of(reps[0])
            expect(sc["truncated"] and len(sc["stdout"]) + len(sc["stderr"]) <= OUTPUT_CAP, "flood", reps[0])
        return [exec_call(d, {"code": "import sys\nfor _ in range(200): sys.stdout.write('x' * 1000)\n"
                                      "sys.stderr.write('e' * 100000)"})], check, 1, None
    if kind == "stdin":
        data = f"line {i}\n" * 50

        def check(reps):
            expect(sc_of(reps[0])["stdout"] == f"{len(data)} 50\n", "stdin echo", reps[0])
        return [exec_call(d, {"code": "import sys; d = sys.stdin.read(); print(len(d), d.count('\\n'))",
                              "stdin": data})], check, 1, None
    if kind == "concurrent":
        ids = [exec_call(d, {"code": f"print({i} + {k})"}) for k in range(4)]

        def check(reps):
            for k, rep in enumerate(reps):
                expect(sc_of(rep)["stdout"] == f"{i + k}\n", "pipelined call", rep)
        return ids, check, 4, None
    if kind == "cancel":
        # A cancelled call is never answered: the step waits for nothing but the ping that follows.
        rid = exec_call(d, {"code": "import time; time.sleep(30)"})
        return [], lambda reps: None, 1, rid
    if kind == "timeout":
        def check(reps):
            sc = sc_of(reps[0])
            expect(sc["timed_out"] and sc["exit_code"] == -1, "timeout", reps[0])
        return [exec_call(d, {"code": "while True: pass", "timeout_s": 1})], check, 1, None
    raise ValueError(kind)


def do_wave(d, kinds, i, timeout):
    """Launches several steps at once (so calls overlap), cancels the cancel steps' calls, waits
    for every answer and a ping, checks them. Returns (runs, failures)."""
    steps = []
    for kind in kinds:
        steps.append((kind,) + launch(d, kind, i))
        i += steps[-1][3]
    cancels = [s[4] for s in steps if s[4] is not None]
    if cancels:
        time.sleep(0.05)
        for rid in cancels:
            d.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": rid, "reason": "soak"}})
    ping = d.request("ping")
    runs, failures = 0, []
    for kind, ids, check, n, _ in steps:
        reps = d.wait(ids, timeout)
        runs += n
        try:
            check(reps)
        except AssertionError as e:
            failures.append(f"{kind}: {e}")
    d.wait([ping], timeout)
    for rid in cancels:
        with d.lock:
            if rid in d.replies:
                failures.append(f"cancel: the cancelled call {rid} was answered: {d.replies.pop(rid)}")
    return runs, failures


def settle(d, systemd, deadline_s=30):
    """Waits until the daemon has no descendant left (cancelled runs are not answered) and, under
    systemd, until the last run's scope is gone (systemd collects it once its init has exited)."""
    end = time.monotonic() + deadline_s
    while (descendants(d.pid) or (systemd and run_cgroups())) and time.monotonic() < end:
        time.sleep(0.1)


def main():
    a = parse_args()
    tmpdir = tempfile.mkdtemp(prefix="mcp-execd-soak.")
    d = Daemon(a.binary, tmpdir)
    failures = []
    samples = []
    t0 = time.monotonic()
    systemd = os.environ.get("SOAK_CGROUP") == "systemd"
    columns = [("runs", 7), ("rss_kib", 9), ("fds", 5), ("procs", 6), ("tmp_entries", 12)]
    if systemd:
        columns += [("scopes", 7), ("cgroups", 8)]
    columns.append(("secs", 8))
    checked = [k for k, _ in columns if k not in ("runs", "rss_kib", "secs")]

    def sample(runs):
        settle(d, systemd)
        s = {"runs": runs, "rss_kib": rss_kib(d.pid), "fds": fd_count(d.pid),
             "procs": len(descendants(d.pid)), "tmp_entries": tmp_entries(tmpdir)}
        if systemd:
            s["scopes"], s["cgroups"] = run_scopes(), run_cgroups()
            if s["cgroups"]:
                print("soak: left below the slice while idle: " + "; ".join(describe_cgroups()), flush=True)
        s["secs"] = round(time.monotonic() - t0, 1)
        samples.append(s)
        print(" ".join(f"{s[k]:>{w}}" for k, w in columns), flush=True)

    try:
        init = d.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "soak", "version": "0"}})
        d.wait([init], 30)
        d.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        print(f"soak: {a.runs} runs through mcp-execd pid {d.pid}, TMPDIR {tmpdir}", flush=True)
        print(" ".join(f"{k:>{w}}" for k, w in columns))
        sample(0)
        runs, next_sample = 0, a.every
        kinds = schedule(a.runs)
        k = 0
        counts = {}
        while runs < a.runs:
            wave = [kinds[(k + j) % len(kinds)] for j in range(3)]
            k += 3
            n, fails = do_wave(d, wave, runs, a.reply_timeout)
            runs += n
            failures.extend(f"runs {runs - n}..{runs}: {f}" for f in fails)
            if len(failures) > 20:
                break
            for kind in wave:
                counts[kind] = counts.get(kind, 0) + 1
            if runs >= next_sample:
                sample(runs)
                next_sample += a.every
        if samples[-1]["runs"] != runs:
            sample(runs)
        print("soak: steps per kind: " + ", ".join(f"{n}={c}" for n, c in sorted(counts.items())))
    except Exception as e:  # the daemon died or stopped answering
        failures.append(f"fatal: {e}")
    finally:
        status = d.close()
        leftover = os.listdir(tmpdir)
        shutil.rmtree(tmpdir, ignore_errors=True)

    if status != 0:
        failures.append(f"the daemon exited with status {status} at EOF; stderr: {d.stderr_tail[-5:]}")
    if leftover:
        failures.append(f"the daemon left {leftover} in its TMPDIR after exit")
    if d.bad_lines:
        failures.append(f"non-JSON lines on stdout: {d.bad_lines[:3]}")

    base = next((s for s in samples if s["runs"] >= a.warmup), None)
    if base and len(samples) > 1:
        last = samples[-1]
        drift = last["rss_kib"] - base["rss_kib"]
        print(f"soak: baseline at {base['runs']} runs: rss {base['rss_kib']} KiB, "
              + ", ".join(f"{k} {base[k]}" for k in checked)
              + f"; end: rss {last['rss_kib']} KiB (drift {drift:+d} KiB), "
              + ", ".join(f"{k} {last[k]}" for k in checked))
        if a.rss_drift_kib >= 0 and drift > a.rss_drift_kib:
            failures.append(f"RSS drifted by {drift} KiB after warm-up (limit {a.rss_drift_kib} KiB)")
        for s in samples:
            if s["runs"] < base["runs"]:
                continue
            for key in checked:
                if s[key] != base[key]:
                    failures.append(f"{key} at {s['runs']} runs is {s[key]}, baseline {base[key]}")
        if base["procs"] != 0:
            failures.append(f"{base['procs']} processes under the daemon while idle")
        if systemd and (base["scopes"] or base["cgroups"]):
            failures.append(f"{base['scopes']} run scopes and {base['cgroups']} run cgroups while idle")
    for f in failures:
        print("soak: FAIL " + f)
    print(f"soak: {'FAILED' if failures else 'passed'} ({len(failures)} problems) in "
          f"{time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
