# meta.py: the PEP 723 metadata of a script, run by mcp-execd inside the sandbox (no network, a
# deadline) with the tools interpreter (Python >= 3.11: tomllib, a real TOML parser; Debian's
# python3-packaging for PEP 440/508). Input on stdin as JSON: {script, dependencies, python:
# {version, implementation, id}}. Output on stdout, one JSON object: {problems: [{line, check,
# message, text}], requirements: [normalized, sorted], requires_python, key}.
import hashlib
import json
import re
import sys

problems = []


def problem(check, message, line=None, text=None):
    problems.append({"line": line, "check": check, "message": message, "text": text})


def main():
    inp = json.load(sys.stdin)
    script = inp["script"]
    param = inp.get("dependencies")
    py = inp["python"]
    try:
        import tomllib
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
        from packaging.utils import canonicalize_name
        from packaging.version import Version
    except ImportError as e:
        problem("metadata", f"the server's metadata parser is missing a module: {e} "
                "(it needs Python >= 3.11 and Debian's python3-packaging)")
        return finish([], None, py)

    lines = script.splitlines()
    # PEP 723's reference regular expression, applied line by line so that errors can name lines.
    opens = [i for i, l in enumerate(lines) if re.fullmatch(r"# /// script\s*", l)]
    other = [i for i, l in enumerate(lines) if re.fullmatch(r"# /// [a-zA-Z0-9-]+\s*", l) and i not in opens]
    meta = {}
    start = None
    if len(opens) > 1:
        problem("metadata", "more than one '# /// script' block (PEP 723 allows one)", opens[1] + 1, lines[opens[1]])
    elif opens:
        start = opens[0]
        body = []
        end = None
        for j in range(start + 1, len(lines)):
            l = lines[j]
            if l.rstrip() == "# ///":
                end = j
                # PEP 723: the block ends at the last "# ///" before a line that is not a comment.
                k = j + 1
                while k < len(lines) and lines[k].startswith("#"):
                    if lines[k].rstrip() == "# ///":
                        end = k
                    k += 1
                break
            if not (l == "#" or l.startswith("# ")):
                problem("metadata", "line inside the '# /// script' block does not start with '# ' "
                        "(the block was not closed with '# ///'?)", j + 1, l)
                break
        if end is None and not problems:
            problem("metadata", "the '# /// script' block is never closed with '# ///'", start + 1, lines[start])
        if end is not None and not problems:
            body = [l[2:] if l.startswith("# ") else l[1:] for l in lines[start + 1:end]]
            try:
                meta = tomllib.loads("\n".join(body) + "\n")
            except tomllib.TOMLDecodeError as e:
                msg = str(e)
                m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
                # "at end of document" (an unclosed array…): the block's last line
                line = start + 1 + int(m.group(1)) if m else max(end, start + 1)
                line = min(line, end)
                problem("metadata", f"malformed TOML in the PEP 723 block: {msg}", line, lines[line - 1])
                meta = {}
    del other

    def line_of(needle, default=None):
        if start is None:
            return default
        for i in range(start, len(lines)):
            if needle in lines[i]:
                return i + 1
        return default

    requires_python = None
    rp = meta.get("requires-python")
    if rp is not None:
        if not isinstance(rp, str):
            problem("requires-python", "requires-python must be a string", line_of("requires-python"))
        else:
            requires_python = rp
            try:
                spec = SpecifierSet(rp)
                if not spec.contains(Version(py["version"]), prereleases=True):
                    problem("requires-python", f"requires-python {rp!r} is not satisfied by the interpreter "
                            f"{py['name']} ({py['implementation']} {py['version']})",
                            line_of("requires-python"), lines[line_of("requires-python", 1) - 1] if start is not None else None)
            except InvalidSpecifier as e:
                problem("requires-python", f"invalid requires-python specifier: {e}", line_of("requires-python"),
                        rp)
    deps = meta.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        problem("dependencies", "dependencies in the PEP 723 block must be an array of strings",
                line_of("dependencies"))
        deps = []
    for key in meta:
        if key not in ("dependencies", "requires-python", "tool"):
            problem("metadata", f"unknown key {key!r} in the PEP 723 block (allowed: dependencies, "
                    "requires-python, [tool])", line_of(key))

    merged = {}
    origins = {}
    for origin, items in (("script", deps), ("parameter", param or [])):
        for i, d in enumerate(items):
            bad = control_char(d)
            if bad is not None:
                where = "" if origin == "script" else f"dependencies[{i}] "
                problem("dependencies", f"invalid requirement {where}{d!r}: it contains the control character "
                        f"{bad!r} (a requirement is one line of printable text)",
                        line_of(d.splitlines()[0] if d.splitlines() else d) if origin == "script" else None, d)
                continue
            try:
                r = Requirement(d)
            except (InvalidRequirement, SyntaxError, ValueError) as e:
                if origin == "script":
                    problem("dependencies", f"invalid requirement {d!r}: {e}", line_of(d), d)
                else:
                    problem("dependencies", f"invalid requirement dependencies[{i}] {d!r}: {e}", None, d)
                continue
            if r.url:
                problem("dependencies", f"requirement {d!r} is a direct URL reference; only packages from the "
                        "configured source can be installed", line_of(d) if origin == "script" else None, d)
                continue
            r.name = canonicalize_name(r.name)
            # packaging turns an escape in a marker string into the character itself ("a\\nb" comes
            # out with a real newline): check what the installer would be handed too (issue 15, 7a).
            bad = control_char(str(r))
            if bad is not None:
                where = "" if origin == "script" else f"dependencies[{i}] "
                problem("dependencies", f"invalid requirement {where}{d!r}: it becomes {str(r)!r}, which contains "
                        f"the control character {bad!r} (a requirement is one line of printable text)",
                        line_of(d) if origin == "script" else None, d)
                continue
            # As mcp-python-exec-sandbox: duplicates by normalized name, the later (the parameter) wins.
            merged[r.name] = str(r)
            origins[str(r)] = {"line": line_of(d) if origin == "script" else None, "text": d}
    return finish(sorted(merged.values()), requires_python, py, origins)


def control_char(s):
    r"""The first character of s that is a control character or a line break for str.splitlines()
    (pip reads a requirements file with it: \v, \f, \x1c-\x1e, \x85, \u2028, \u2029), or None."""
    for ch in s:
        if ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f or ch in "\u2028\u2029":
            return ch
    return None


def finish(requirements, requires_python, py, origins=None):
    h = hashlib.sha256()
    h.update(py.get("id", "").encode())
    for r in requirements:
        h.update(b"\n" + r.encode())
    json.dump({"problems": problems, "requirements": requirements, "requires_python": requires_python,
               "origins": origins or {}, "key": h.hexdigest()[:32]}, sys.stdout)


main()
