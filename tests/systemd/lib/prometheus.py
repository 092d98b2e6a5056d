"""A strict check of the Prometheus text exposition format 0.0.4 (the same rules as
tests/unit/test-metrics.c): HELP and TYPE once per family and before its samples, samples of a
family together, valid names, label escapes, numeric values, no timestamps, counters in _total,
histograms in a base unit (or counting tasks) with cumulative buckets ending at +Inf equal to _count, final newline.

    families, samples = parse(text)     # raises ValueError with the first problem
    samples['mcp_execd_runs_total{outcome="ok"}'] -> 3.0
"""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def value(s):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s):
        raise ValueError("not a sample value: %r" % s)
    return float(s)


def parse(text):
    if not text.endswith("\n"):
        raise ValueError("the last line does not end with \\n")
    if "\r" in text:
        raise ValueError("\\r in the text")
    fam = {}      # name -> dict(help, type, closed, sampled, ...)
    order = []
    samples = {}
    current = None
    for line in text[:-1].split("\n"):
        if not line:
            raise ValueError("an empty line")
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (\S+) (.+)", line)
            if not m or not NAME.match(m.group(2)):
                raise ValueError("bad comment line: %r" % line)
            kind, name, rest = m.groups()
            f = fam.setdefault(name, {"help": False, "type": None, "closed": False, "sampled": False})
            if name not in order:
                order.append(name)
            if f["closed"] or f["sampled"]:
                raise ValueError("HELP/TYPE of %s after its samples or another family" % name)
            if current and current != name:
                fam[current]["closed"] = True
            current = name
            if kind == "HELP":
                if f["help"]:
                    raise ValueError("two HELP lines for %s" % name)
                if re.search(r"\\[^\\n]", rest):
                    raise ValueError("bad escape in HELP of %s" % name)
                f["help"] = True
            else:
                if f["type"]:
                    raise ValueError("two TYPE lines for %s" % name)
                if rest not in TYPES:
                    raise ValueError("unknown TYPE %r" % rest)
                if rest == "counter" and not name.endswith("_total"):
                    raise ValueError("counter %s does not end in _total" % name)
                if rest == "histogram" and not name.endswith(("_seconds", "_bytes", "_tasks")):
                    raise ValueError("histogram %s is not in a base unit (nor a count of tasks)" % name)
                f["type"] = rest
                f.update(last_le=-math.inf, last_bucket=0.0, inf=None, sum=False, count=None)
            continue
        m = re.fullmatch(r"([^{ ]+)(\{(.*)\})? (\S+)", line)
        if not m or not NAME.match(m.group(1)):
            raise ValueError("bad sample line: %r" % line)
        name, _, labels, val = m.groups()
        v = value(val)
        le = None
        if labels is not None:
            rest = labels
            while rest:
                lm = re.match(r'([^=]+)="((?:[^"\\]|\\[\\"n])*)"(,|$)', rest)
                if not lm or not LABEL.match(lm.group(1)):
                    raise ValueError("bad labels in %r" % line)
                if lm.group(1) == "le":
                    le = value(lm.group(2))
                rest = rest[lm.end():]
                if lm.group(3) == "," and not rest:
                    raise ValueError("trailing comma in %r" % line)
        key = line.rsplit(" ", 1)[0]
        if key in samples:
            raise ValueError("duplicate sample %s" % key)
        samples[key] = v
        base, suffix = name, None
        if name not in fam:
            for s in ("_bucket", "_sum", "_count"):
                if name.endswith(s) and fam.get(name[:-len(s)], {}).get("type") == "histogram":
                    base, suffix = name[:-len(s)], s
        f = fam.get(base)
        if not f or not f["help"] or not f["type"]:
            raise ValueError("sample %s without HELP and TYPE before it" % name)
        if f["closed"] or current != base:
            raise ValueError("samples of %s are not together" % base)
        if f["type"] == "histogram" and not suffix:
            raise ValueError("histogram sample %s without a suffix" % name)
        f["sampled"] = True
        if f["type"] == "counter" and not v >= 0:
            raise ValueError("negative counter %r" % line)
        if suffix == "_bucket":
            if le is None or f["inf"] is not None or f["sum"] or f["count"] is not None:
                raise ValueError("misplaced bucket %r" % line)
            if not le > f["last_le"] or v < f["last_bucket"]:
                raise ValueError("buckets not increasing/cumulative at %r" % line)
            f["last_le"], f["last_bucket"] = le, v
            if math.isinf(le):
                f["inf"] = v
        elif suffix == "_sum":
            f["sum"] = True
        elif suffix == "_count":
            f["count"] = v
    for name in order:
        f = fam[name]
        if not f["help"] or not f["type"]:
            raise ValueError("%s lacks HELP or TYPE" % name)
        if f["type"] == "histogram" and (f["inf"] is None or not f["sum"] or f["inf"] != f["count"]):
            raise ValueError("histogram %s: +Inf bucket, _sum or _count missing or inconsistent" % name)
    return order, samples
