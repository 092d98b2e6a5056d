# probe.py: what an interpreter offers, run by mcp-execd inside the sandbox at start. Packages are
# really imported (find_spec() alone would list CPython extension modules that PyPy finds on its
# path but cannot load), so what check_environment reports is what a run can import.
import importlib.util
import json
import platform
import sys

scientific = [("numpy", "numpy"), ("pandas", "pandas"), ("scipy", "scipy"), ("matplotlib", "matplotlib"),
              ("Pillow", "PIL"), ("scikit-learn", "sklearn"), ("statsmodels", "statsmodels"),
              ("networkx", "networkx"), ("PyYAML", "yaml"), ("Jinja2", "jinja2")]
# stdin "full": also import the packages (check_environment); else only the interpreter's identity
# (at start, fast).
full = sys.stdin.read().strip() == "full"
found = []
for name, mod in scientific if full else []:
    try:
        if importlib.util.find_spec(mod):
            importlib.import_module(mod)
            found.append(name)
    except Exception:
        pass
tools = True
for mod in ("tomllib", "packaging"):
    try:
        tools = tools and importlib.util.find_spec(mod) is not None
    except Exception:
        tools = False
json.dump({"version": platform.python_version(), "implementation": platform.python_implementation(),
           "packages": found if full else None, "metadata_tools": tools}, sys.stdout)
