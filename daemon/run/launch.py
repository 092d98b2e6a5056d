# launch.py: how mcp-execd runs the caller's main.py (issue 10). Staged next to it as
# .mcp-execd-launch.py and run as `python -I .mcp-execd-launch.py`; it deletes itself, makes
# outputs/, then runs main.py as __main__ exactly as `python -I main.py` would (same sys.argv,
# __file__, sys.path[0], exit status, and a traceback without this file's frames). Figures without
# ceremony: matplotlib gets the Agg backend; plt.show() saves every open figure to
# outputs/figure-N.png and closes it; figures still open at exit are saved the same way. Nothing
# of matplotlib is imported unless the code imports it.
#
# Session mode (issue 18, `_SESSION = True` after `_WARM = ()`): ready as in warm mode, then one
# call after another in one __main__; see _session(). A ready sandbox of the pool becomes a session
# the same way when its message's first record is named _SESSION_SWITCH (see _warm()).
#
# Warm mode (issue 16, a ready sandbox): the daemon stages this file with a first line
# `_WARM = ("module", ...)` (MCP_EXEC_PRELOAD, maybe empty). Then, before any caller code exists,
# the launcher imports those modules (their output discarded), writes one fixed-size ready line on
# fd 1 ("MCPEXECD-READY <user us> <system us> <rss bytes>": what was spent and held so far, which
# the daemon keeps out of the call's accounting; or "MCPEXECD-FAILED <module>: <error>") and blocks
# reading fd 0. The call's first bytes on fd 0 are one message: an 8-byte little-endian length, then
# records (4-byte name length, 8-byte data length, name, data), main.py first, then the input files;
# the launcher writes them into the working directory itself (as the run's user, charged to the
# run) and goes on exactly as a cold run. What follows the message on fd 0 is the caller's stdin:
# os.read() takes exactly the message, sys.stdin has buffered nothing yet.
import atexit
import gc
import os
import sys

try:
    _WARM
except NameError:
    _WARM = None
try:
    _SESSION
except NameError:
    _SESSION = False

_SCRIPT = "main.py"
_OUT = os.path.join(os.getcwd(), "outputs")  # absolute: the code may chdir
_saved = [0]
_READY_BYTES = 256  # the ready line, one write (atomic on a pipe: at most PIPE_BUF)
# A ready sandbox's message whose first record has this name makes it a session (session_open
# served by the pool). No call can send it: input file names are validated relative, this is not.
_SESSION_SWITCH = "/session"

try:
    os.unlink(__file__)
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


def _warm_line(text):
    b = text.encode("utf-8", "replace")[: _READY_BYTES - 1] + b"\n"
    os.write(1, b.ljust(_READY_BYTES, b" "))


def _warm_read(n):
    parts = []
    while n > 0:
        b = os.read(0, min(n, 1 << 20))
        if not b:  # the daemon dropped this ready sandbox
            os._exit(0)
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


# Set before the ready line (_session_prepare()), so that no SIGINT can find Python's default
# handler between the ready line and the first call: the daemon may send one as soon as it has
# written a call's message. A ready sandbox that becomes a session sets it before its second ready
# line, which the daemon waits for before it writes a call.
_SESSION_FD = [-1]
_SESSION_STDIN = "/dev/stdin"  # the record that holds a call's stdin (input file names are relative)
_SESSION_EARLY = [False]


def _session_sigint(sig, frame):
    # Between calls a SIGINT is kept for the next call (the daemon sends one only for a call it
    # has written: a deadline or a cancel that came before the code started still interrupts it).
    _SESSION_EARLY[0] = True


def _session_prepare():
    import signal

    signal.signal(signal.SIGINT, _session_sigint)
    _SESSION_FD[0] = os.dup(0)  # the messages; fd 0 becomes /dev/null for the code
    nul = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nul, 0)
    os.close(nul)
    import linecache, resource, shutil, traceback, types  # noqa: E401 (before the ready line: not a call's time)


def _warm():
    """Preloads, says ready, waits for the call's message and writes its files (issue 16)."""
    global _SESSION
    # A ready sandbox made in the background weighs less than the runs until a call takes it (the
    # daemon gives the weight back): the sandbox started this process at nice 19, and its session's
    # autogroup is lowered alike here (the kernel allows an unprivileged write once per 100 ms
    # system-wide: retried).
    # getpriority, not os.nice(0): nice(3) also calls setpriority, which mcp-execd.service refuses
    # (SystemCallFilter=~@resources), and the launcher then died at its start (EPERM).
    for _ in range(30 if os.getpriority(os.PRIO_PROCESS, 0) > 0 else 0):
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write("19")
            break
        except BlockingIOError:
            sys.modules["time"].sleep(0.01)
        except OSError:  # no autogroup in this kernel, or not allowed: the runs' weight
            break
    # The preload's output is not the call's: fds 1 and 2 point at /dev/null meanwhile.
    saved = os.dup(1), os.dup(2)
    nul = os.open(os.devnull, os.O_WRONLY)
    os.dup2(nul, 1)
    os.dup2(nul, 2)
    os.close(nul)
    failed = None
    for name in _WARM:
        try:
            __import__(name)
        except BaseException as e:
            failed = "%s: %s: %s" % (name, type(e).__name__, e)
            break
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os.dup2(saved[0], 1)
    os.dup2(saved[1], 2)
    os.close(saved[0])
    os.close(saved[1])
    if failed is not None:
        _warm_line("MCPEXECD-FAILED " + failed.replace("\n", " "))
        os._exit(3)
    if _SESSION:
        _session_prepare()
    _warm_ready()
    if _SESSION:
        return  # _session() runs at the end, once everything is defined
    records = _warm_records(_warm_read(int.from_bytes(_warm_read(8), "little")))
    if records and records[0][0] == _SESSION_SWITCH:
        # session_open took this ready sandbox: it becomes a session, as if made with _SESSION =
        # True. The SIGINT handler is set before the second ready line, and the daemon sends no
        # call (so no SIGINT) before it has read that line: a SIGINT never finds Python's default
        # handler. The line's figures include the switch's own imports: the session's, not its
        # first call's.
        _SESSION = True
        _session_prepare()
        _warm_ready()
        return
    _warm_files(records)


def _warm_ready():
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    if "resource" not in _WARM:  # the call finds sys.modules as a cold run leaves it, plus the preload
        del sys.modules["resource"]
    with open("/proc/self/statm", "rb") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    _warm_line("MCPEXECD-READY %d %d %d" % (round(ru.ru_utime * 1e6), round(ru.ru_stime * 1e6), rss))


def _warm_records(body):
    """The message's records: [(name, data)], in order."""
    out = []
    off = 0
    while off < len(body):
        nlen = int.from_bytes(body[off : off + 4], "little")
        dlen = int.from_bytes(body[off + 4 : off + 12], "little")
        off += 12
        name = body[off : off + nlen].decode("utf-8", "surrogateescape")
        off += nlen
        out.append((name, body[off : off + dlen]))
        off += dlen
    return out


def _warm_files(records, exit_on_error=True):
    cwd = _CWD0
    for name, data in records:
        # Names were validated by the daemon (relative, no . or .., no empty segment).
        path = os.path.join(cwd, name)
        parent = os.path.dirname(path)
        try:
            if parent != cwd:
                os.makedirs(parent, mode=0o755, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                         0o600 if name == _SCRIPT else 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        except OSError as e:  # /tmp full: what a cold run's copy reports, as a result (exit 1)
            os.write(2, ("mcp-execd: the sandbox could not start the run: cannot write %s into %s: %s\n"
                         % (name, cwd, e.strerror)).encode("utf-8", "replace"))
            if exit_on_error:
                os._exit(1)
            return False
    return True


def _session():
    """A Python session (issue 18): one call after another in one __main__ namespace.

    Each call is one message on the private copy of fd 0 (fd 0 itself is /dev/null, so the code
    cannot read the next call's message by accident): records, the first named by the call's nonce
    and holding its code, then its stdin if it has one (named _SESSION_STDIN; the code reads it on
    fd 0 and sys.stdin, which are /dev/null otherwise), then its input files. The code is compiled with its own file name
    (<call-N>, its lines in linecache) so that tracebacks show the call's own lines. The end of a
    call is one line on fd 2 and then fd 1, after everything the call printed was flushed:
    "\\0MCPEXECD-END <nonce> <status>". The nonce is new for every call and exists only in this
    function's frame: code that finds it (or prints a forged line) ends its own call early, and
    gains nothing by it: the daemon freezes the session at the line and reads what the call used
    from the kernel, never from here. SIGINT raises KeyboardInterrupt only while a call's code runs (the daemon's
    deadline or a cancel); between calls it never ends the session: one that comes after the
    message was written but before the code started interrupts the code as it starts, one that
    came for a call that has ended is dropped. A handler the code installs for SIGINT lasts until
    the end of its call."""
    import linecache
    import shutil
    import signal
    import types

    msgfd = _SESSION_FD[0]
    early = _SESSION_EARLY
    between = _session_sigint

    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main

    def read(n):
        parts = []
        while n > 0:
            b = os.read(msgfd, min(n, 1 << 20))
            if not b:  # the daemon closed the session
                os._exit(0)
            parts.append(b)
            n -= len(b)
        return b"".join(parts)

    def stdin_for(data):
        # The call's stdin on fd 0 (an unnamed file in the working directory: nothing to clean up,
        # nothing the code can list), or /dev/null; sys.stdin anew, so nothing a former call left
        # in the old one's buffer is read by this call.
        fd = None
        if data:
            fd = os.open(_CWD0, os.O_TMPFILE | os.O_RDWR, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.lseek(fd, 0, os.SEEK_SET)
        else:
            fd = os.open(os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        os.close(fd)
        std = sys.__stdin__
        sys.stdin = open(0, "r", encoding=std.encoding, errors=std.errors, closefd=False)

    calls = 0
    while True:
        records = _warm_records(read(int.from_bytes(read(8), "little")))
        nonce, code = records[0]
        data = None
        if len(records) > 1 and records[1][0] == _SESSION_STDIN:
            data = records.pop(1)[1]
        calls += 1
        name = "<call-%d>" % calls
        status = 0
        shutil.rmtree(_OUT, ignore_errors=True)  # outputs/ is per call
        try:
            os.makedirs(_OUT, exist_ok=True)
        except OSError:
            pass
        try:
            stdin_for(data)
        except OSError as e:  # /tmp full: as a file that cannot be written
            os.write(2, ("mcp-execd: the session could not give the call its stdin: %s\n" % e.strerror)
                     .encode("utf-8", "replace"))
            status = 1
        if status or not _warm_files(records[1:], exit_on_error=False):
            status = 1
        else:
            text = code.decode("utf-8", "surrogateescape")
            linecache.cache[name] = (len(text), None, text.splitlines(True), name)
            sys.argv[:] = [name]
            # Python's own handler (no frame of ours in the traceback) only while the code runs.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                if early[0]:
                    early[0] = False
                    raise KeyboardInterrupt
                exec(compile(code, name, "exec", dont_inherit=True), main.__dict__)
            except SystemExit as e:
                c = e.code
                if c is None:
                    status = 0
                elif type(c) in (int, bool):
                    status = int(c) & 0xFF
                else:
                    print(c, file=sys.stderr)
                    status = 1
            except BaseException as e:
                tb = e.__traceback__
                while tb is not None and tb.tb_frame.f_code.co_filename != name:
                    tb = tb.tb_next
                e.__traceback__ = tb
                try:
                    # The traceback module reads the call's lines from linecache (the default hook
                    # reads source files from disk, and <call-N> is none); a hook of the code's own
                    # is respected.
                    if sys.excepthook is sys.__excepthook__:
                        import traceback

                        traceback.print_exception(type(e), e, tb)
                    else:
                        sys.excepthook(type(e), e, tb)
                except BaseException:
                    pass
                status = 130 if isinstance(e, KeyboardInterrupt) else 1
            e = tb = None
            signal.signal(signal.SIGINT, between)
            try:
                _save_figures()
            except BaseException:
                pass
        try:
            _flush_std()
        except BaseException:
            pass
        end = b"\0MCPEXECD-END %s %d\n" % (nonce.encode("ascii", "replace"), status)
        for fd in (2, 1):
            try:
                os.write(fd, end)
            except OSError:
                os._exit(1)
        early[0] = False  # one that came for the call just ended: it reached its end anyway
        if data:
            try:
                stdin_for(None)  # its memory is not held until the next call
            except OSError:
                pass


_CWD0 = os.getcwd()
if _WARM is not None:
    _warm()
try:
    os.mkdir(_OUT)
except OSError:
    pass


def _main():
    """Runs main.py as __main__; returns the exit status, or raises what ends the run the slow way."""
    path = os.path.join(os.getcwd(), _SCRIPT)
    with open(path, "rb") as f:
        source = f.read()
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    # SourceFileLoader, as Python gives a script (this file may be bytecode: SourcelessFileLoader).
    import importlib.machinery  # imported by Python's start already

    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = main
    sys.argv[0] = _SCRIPT
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, main.__dict__)
    except SystemExit as e:
        # None and ints end as Python ends them (status & 0xff); a message or another object is
        # printed by Python's own exit path.
        if e.code is None:
            return 0
        if type(e.code) in (int, bool) and -(1 << 31) <= e.code < (1 << 31):
            return int(e.code)
        raise
    except KeyboardInterrupt:
        raise  # Python's exit by SIGINT, as for a script
    except BaseException as e:
        # Print what Python would print for the script itself: the frames from main.py on.
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        e.__traceback__ = tb
        sys.excepthook(type(e), e, tb)
        return 1
    return 0


def _clear_module(d):
    # What Python's finalization does to a module's namespace (_PyModule_ClearDict): names with one
    # leading underscore become None first, then the others but __builtins__; a __del__ that uses a
    # global sees None, as it would at the interpreter's exit.
    for k in list(d):
        if isinstance(k, str) and k[:1] == "_" and k[:2] != "__":
            d[k] = None
    for k in list(d):
        if k != "__builtins__":
            d[k] = None


def _flush_std():
    for f in (sys.stdout, sys.stderr):
        if f is not None and not getattr(f, "closed", False):  # as Python's flush_std_files
            f.flush()


def _finish(status):
    """Ends the run as Python's exit would, without tearing the interpreter down (issue 16).

    Py_FinalizeEx's teardown of every module costs 80-100 ms once numpy and pandas are imported,
    nearly all of a ready sandbox's call; nothing of it reaches the caller except what is done here
    first, in Python's order: non-daemon threads are joined, atexit callbacks run (figures saved,
    logging flushed), the namespaces of __main__ and of the caller's own modules are cleared as
    finalization clears them (their objects' __del__ run, their files are flushed and closed) with
    the cycles among them collected (gc.freeze() at the start keeps this collection to the call's
    objects), the std streams and, when a C extension outside the standard library or ctypes is
    loaded, C stdio are flushed; then os._exit(). Anything that fails on the way (a flush that
    raises, a KeyboardInterrupt while joining) falls back to Python's own exit with the same status,
    which reports it as Python does. Left out, by design: __del__ of objects that only third-party
    modules still hold at exit, which Python would run while tearing those modules down.

    Only CPython: PyPy's objects are not freed when their last reference goes (a file left open is
    flushed by its own exit, not by clearing a namespace), and its exit has no teardown to save."""
    if sys.implementation.name != "cpython":
        sys.exit(status)
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
        for name, m in list(sys.modules.items()):
            f = getattr(m, "__file__", None)
            if m is sys.modules.get("__main__") or (isinstance(f, str) and f.startswith(_CWD + "/")):
                d = getattr(m, "__dict__", None)
                if isinstance(d, dict):
                    _clear_module(d)
        gc.collect()
        _flush_std()
        if "_ctypes" in sys.modules or "_cffi_backend" in sys.modules or any(
            isinstance(getattr(m, "__file__", None), str) and m.__file__.endswith(".so")
            and not m.__file__.startswith(_STDLIB) for m in list(sys.modules.values())
        ):
            import ctypes

            ctypes.CDLL(None).fflush(None)
    except BaseException:
        sys.exit(status)
    os._exit(status & 0xFF)


_CWD = os.getcwd()
_STDLIB = os.path.dirname(os.__file__) + "/"
# What exists now (the launcher, the standard library's start, a ready sandbox's preload) is never
# garbage: the collections of the call, and the last one in _finish(), look only at the call's.
if hasattr(gc, "freeze"):  # CPython 3.7+
    gc.freeze()
if _SESSION:
    _session()  # never returns
_finish(_main())
