# launch.py: how mcp-execd runs the caller's main.py (issue 10). Staged next to it as
# .mcp-execd-launch.py and run as `python -I .mcp-execd-launch.py`; it deletes itself, makes
# outputs/, then runs main.py as __main__ exactly as `python -I main.py` would (same sys.argv,
# __file__, sys.path[0], exit status, and a traceback without this file's frames). Figures without
# ceremony: matplotlib gets the Agg backend; plt.show() saves every open figure to
# outputs/figure-N.png and closes it; figures still open at exit are saved the same way. Nothing
# of matplotlib is imported unless the code imports it.
import atexit
import os
import sys

_SCRIPT = "main.py"
_OUT = os.path.join(os.getcwd(), "outputs")  # absolute: the code may chdir
_saved = [0]

try:
    os.unlink(__file__)
except OSError:
    pass
try:
    os.mkdir(_OUT)
except OSError:
    pass
os.environ.setdefault("MPLBACKEND", "agg")


def _save_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        os.makedirs(_OUT, exist_ok=True)
    except OSError:
        pass
    try:
        numbers = sorted(plt.get_fignums())
    except Exception:
        return
    for num in numbers:
        try:
            fig = plt.figure(num)
            _saved[0] += 1
            fig.savefig(os.path.join(_OUT, "figure-%d.png" % _saved[0]), format="png")
        except Exception as e:  # one bad figure does not lose the others
            print("mcp-execd: cannot save figure %s: %s" % (num, e), file=sys.stderr)
        try:
            plt.close(num)
        except Exception:
            pass


def _show(*args, **kwargs):
    """Saves every open figure to outputs/figure-N.png and closes it (mcp-execd)."""
    _save_figures()


class _PyplotHook:
    """Replaces matplotlib.pyplot.show once pyplot has been imported (by whatever route)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        sys.meta_path.remove(cls)
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.show = _show
            # After pyplot's own atexit (Gcf.destroy_all), so that ours runs first (LIFO).
            atexit.register(_save_figures)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PyplotHook)


def _main():
    path = os.path.join(os.getcwd(), _SCRIPT)
    with open(path, "rb") as f:
        source = f.read()
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__loader__ = type(__loader__)("__main__", path)  # SourceFileLoader, as for a script
    sys.modules["__main__"] = main
    sys.argv[0] = _SCRIPT
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        # Print what Python would print for the script itself: the frames from main.py on.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        e.__traceback__ = tb
        sys.excepthook(type(e), e, tb)
        sys.exit(1)


_main()
