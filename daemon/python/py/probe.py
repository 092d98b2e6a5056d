# probe.py: what an interpreter offers, run by mcp-execd inside the sandbox once at start; its answer
# is both what the tool descriptions state and what check_environment reports. It must be fast (every
# start waits for it), so a package is looked up, not imported (find_spec() does not import), except
# where a lookup is known to mislead: a package carrying compiled modules built for another
# interpreter (CPython's numpy on PyPy's path) is imported, and listed only if that works.
# The order is the descriptions' order.
import importlib
import importlib.machinery
import importlib.util
import json
import os
import platform
import sys

# (name, module, names it cannot be imported without)
# The first six are what Debian's packages give every run (scripts/deps.sh); the others are listed
# when the host has them (check_environment listed them before the two probes became one).
packages = [("PyYAML", "yaml", ()), ("Jinja2", "jinja2", ()), ("Pillow", "PIL", ()), ("numpy", "numpy", ()),
            ("pandas", "pandas", ("numpy",)), ("matplotlib", "matplotlib", ("numpy",)),
            ("scipy", "scipy", ("numpy",)), ("scikit-learn", "sklearn", ("numpy", "scipy")),
            ("statsmodels", "statsmodels", ("numpy", "scipy", "pandas")), ("networkx", "networkx", ())]
# ".cpython-311-x86_64-linux-gnu.so", ".abi3.so" for CPython 3.11; the bare ".so" says nothing.
own = tuple(s for s in importlib.machinery.EXTENSION_SUFFIXES if s != ".so")


def foreign(path):
    return path.endswith(".so") and not path.endswith(own) and os.path.basename(path).count(".") > 1


def built_for_us(spec):
    """False at the first compiled module built for another interpreter, True at the first for us."""
    if spec.origin and (spec.origin.endswith(own) or foreign(spec.origin)):
        return not foreign(spec.origin)
    for top in spec.submodule_search_locations or []:
        for root, dirs, files in os.walk(top):
            for f in files:
                if f.endswith(own):
                    return True
                if foreign(f):
                    return False
    return True


found = []
for name, mod, needs in packages:
    if not all(n in found for n in needs):
        continue  # and fast: pandas takes most of a second to fail on PyPy
    try:
        spec = importlib.util.find_spec(mod)
        if spec and (built_for_us(spec) or importlib.import_module(mod)):
            found.append(name)
    except Exception:
        pass
tools = True
for mod in ("tomllib", "packaging"):
    try:
        tools = tools and importlib.util.find_spec(mod) is not None
    except Exception:
        tools = False
out = {"version": platform.python_version(), "implementation": platform.python_implementation(),
       "packages": found, "metadata_tools": tools}
# The launcher of the caller's runs (launch.py, staged by the daemon as an input file), compiled by
# this interpreter, for this interpreter: a cold run then loads its bytecode instead of compiling
# its source, about a millisecond of every run (issue 16.5). Named as the file a run executes, so
# its frames are named as they would be from the source.
if os.path.exists("launch.py"):
    import base64
    import marshal

    with open("launch.py", "rb") as f:
        code = compile(f.read(), os.path.join(os.getcwd(), ".mcp-execd-launch.py"), "exec", dont_inherit=True)
    # The header of a .pyc (magic, flags, and two words that only an import checks): Python runs a
    # script whose first bytes are its magic number as bytecode, whatever the file's name.
    pyc = importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)
    out["launcher_pyc"] = base64.b64encode(pyc).decode("ascii")
json.dump(out, sys.stdout)
