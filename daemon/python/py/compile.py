# compile.py: the syntax check of validate_script, run by mcp-execd inside the sandbox with the
# chosen interpreter (any Python 3). The script comes on stdin; one JSON object goes to stdout.
import json
import sys

src = sys.stdin.read()
try:
    compile(src, "script.py", "exec", dont_inherit=True)
    out = {"ok": True}
except SyntaxError as e:
    out = {"ok": False, "line": e.lineno, "offset": e.offset, "message": "%s: %s" % (type(e).__name__, e.msg),
           "text": (e.text or "").rstrip("\n") or None}
except (ValueError, OverflowError) as e:
    out = {"ok": False, "line": None, "offset": None, "message": "%s: %s" % (type(e).__name__, e), "text": None}
json.dump(out, sys.stdout)
