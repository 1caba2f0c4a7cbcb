"""Workflow jobs forked from a warm process, so that a job does not pay for importing torch,
numba, pandas and matplotlib (3-4 CPU seconds, about a quarter of the default run's training
job time) once per job but once per workflow run.

A job script calls :func:`hand_over` before anything else. In a job process it connects to the
job server of its working directory, environment, thread count and dpminimax code (starting
one if there is none): a process that has imported the heavy libraries and forks once per job.
The fork takes the job's working directory, environment, arguments and standard streams, runs
the job's script from the top (where :func:`hand_over` now returns) and reports its exit
status, which the job process exits with. The fork dies with the job process (a killed job
leaves nothing running), and the server exits when it has been idle for
``DPMINIMAX_JOBSERVER_IDLE`` seconds (default 60).

Anything that stops the hand-over before the fork has been told to run (no server could
start, a refused or timed-out socket) leaves the job running in its own process as before, so
a job never runs twice and never fails for want of a server; a server that exits while
starting is not started again for the same code (``<key>.broken`` beside its log).
``DPMINIMAX_JOBSERVER=0`` and SLURM jobs (``SLURM_JOB_ID``: one job per allocation, nothing to
share) do not hand over. ``DPMINIMAX_JOBSERVER_TRACE=FILE``: each fork appends a line there.

This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

#: What the server imports before it forks, those installed (none starts a thread on
#: import); snakemake.script unpickles a job's ``snakemake`` object.
WARM_MODULES = ("numpy", "pandas", "pyarrow.parquet", "torch", "numba", "matplotlib.pyplot",
                "dpminimax.api.training", "dpminimax.api.attacks", "dpminimax.api.reporting",
                "snakemake.script")
#: Seconds a job waits for a server to start (import its modules) or a fork to answer.
START_TIMEOUT = 120.0
HANDSHAKE_TIMEOUT = 30.0
_READY, _GO = b"R", b"G"
_LENGTH = struct.Struct("!Q")
_STATUS = struct.Struct("!i")

#: A file where each fork appends its pid, its server's pid and its script (for tests).
TRACE = "DPMINIMAX_JOBSERVER_TRACE"
#: Set in a fork's environment: hand_over returns there (and in what the job starts).
FORK_MARK = "DPMINIMAX_JOBSERVER_FORK"


def hand_over(threads: int) -> None:
    """Run this job's script (``sys.argv[0]``) in a fork of the warm job server and exit with
    its status; return at once in that fork, or where the hand-over is off or fails before
    the fork runs (the script then runs here)."""
    if os.environ.get(FORK_MARK) or not enabled() or not _called_from_main_script():
        return
    try:
        conn = _connect(max(1, int(threads)))
    except OSError as err:
        print(f"dpminimax job server unavailable ({err}); running the job in this process",
              file=sys.stderr)
        return
    if not _request(conn):
        return
    sys.exit(_wait_for_status(conn))


def _called_from_main_script() -> bool:
    """Only a script run as ``python SCRIPT`` (``__main__``, ``sys.argv[0]``) hands itself
    over, not one another program runs as a module (runpy's default ``run_name``)."""
    caller = sys._getframe(2).f_globals
    script = caller.get("__real_file__", caller.get("__file__"))  # snakemake's script copy
    return (caller.get("__name__") == "__main__" and script is not None and bool(sys.argv)
            and os.path.abspath(script) == os.path.abspath(sys.argv[0]))


def enabled() -> bool:
    """Hand-over on unless ``DPMINIMAX_JOBSERVER=0`` or in a SLURM job."""
    return os.environ.get("DPMINIMAX_JOBSERVER", "1") != "0" and "SLURM_JOB_ID" not in os.environ


def server_key(threads: int, environ: dict[str, str] | None = None) -> str:
    """What a server must share with a job to run it: interpreter, working directory, thread
    count, environment and the dpminimax source files (an edit starts a new server)."""
    environ = dict(os.environ if environ is None else environ)
    digest = hashlib.sha256()
    for part in (sys.executable, os.getcwd(), str(threads), json.dumps(sorted(environ.items())),
                 code_stamp()):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:20]


def code_stamp(package: Path | None = None) -> str:
    """Names, sizes and modification times of the package's Python files."""
    package = package or Path(__file__).parent
    entries = []
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        entries.append(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def socket_path(key: str) -> Path:
    folder = Path(tempfile.gettempdir()) / f"dpminimax-jobserver-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{key}.sock"


def _connect(threads: int) -> socket.socket:
    path = socket_path(server_key(threads))
    broken, log = path.with_suffix(".broken"), path.with_suffix(".log")
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            return _open(path)
        if broken.exists():  # this code's server could not start: no job waits for it again
            raise OSError(f"its last start failed ({log})")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        server = _start_server(path, threads)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                return _open(path)
            except OSError:
                if server.poll() is not None:
                    broken.touch()
                    raise OSError(f"it exited while starting ({log})") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def _open(path: Path) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        raise
    return conn


def _start_server(path: Path, threads: int) -> subprocess.Popen:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), MPLBACKEND="Agg")
    with open(path.with_suffix(".log"), "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "dpminimax.jobserver", str(path)],
                                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, close_fds=True)


def _request(conn: socket.socket) -> bool:
    """Send the job; True once the fork has been told to run it."""
    job = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        conn.settimeout(HANDSHAKE_TIMEOUT)
        socket.send_fds(conn, [_LENGTH.pack(len(job))], [0, 1, 2])
        conn.sendall(job)
        if _recv_exactly(conn, 1) != _READY:
            raise OSError("the job server did not answer")
        conn.sendall(_GO)
    except OSError as err:
        conn.close()
        print(f"dpminimax job server refused the job ({err}); running it in this process",
              file=sys.stderr)
        return False
    conn.settimeout(None)
    return True


def _wait_for_status(conn: socket.socket) -> int:
    try:
        return _STATUS.unpack(_recv_exactly(conn, _STATUS.size))[0]
    except OSError:
        print("dpminimax job server: the job's process died without an exit status",
              file=sys.stderr)
        return 1


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def serve(path: Path, idle: float) -> None:
    """Import the warm modules, then fork one process per connection until idle."""
    for module in WARM_MODULES:
        with contextlib.suppress(ImportError):  # a job that needs it fails as it would alone
            __import__(module)
    if threading.active_count() != 1:
        raise RuntimeError("a warm module started a thread: forking it is unsafe")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the forks
    while select.select([listener], [], [], idle)[0]:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os._exit(_run_job(conn))
        conn.close()
    listener.close()
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and _is_dead(path):
            path.unlink()
        log = path.with_suffix(".log")
        if log.exists() and not log.stat().st_size:
            log.unlink()


def _is_dead(path: Path) -> bool:
    try:
        _open(path).close()
    except OSError:
        return True
    return False


def _run_job(conn: socket.socket) -> int:
    """In the fork: take the job's streams, directory and environment, run its script."""
    try:
        conn.settimeout(HANDSHAKE_TIMEOUT)
        length, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, 3)
        job = json.loads(_recv_exactly(conn, _LENGTH.unpack(length)[0]))
        if len(fds) != 3:
            return 1
        conn.sendall(_READY)
        if _recv_exactly(conn, 1) != _GO:
            return 1
    except OSError:
        return 1
    conn.settimeout(None)
    for fd, target in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(job["cwd"])
    os.environ.clear()
    os.environ.update(job["env"], **{FORK_MARK: "1"})
    # numba re-reads its settings from the environment when it compiles: keep the pool size
    # it was imported with (the job's threads) in view.
    if "numba" in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = str(sys.modules["numba"].config.NUMBA_NUM_THREADS)
    sys.argv = job["argv"]
    if os.environ.get(TRACE):
        with open(os.environ[TRACE], "a") as trace:
            trace.write(f"{os.getpid()} {os.getppid()} {sys.argv[0]}\n")
    sys.path[0] = str(Path(job["argv"][0]).resolve().parent)  # as `python SCRIPT` has it
    threading.Thread(target=_die_with_the_job, args=(conn,), daemon=True).start()
    status = _run_script(job["argv"][0])
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        conn.sendall(_STATUS.pack(status))
    return status


def _run_script(script: str) -> int:
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        code = done.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _die_with_the_job(conn: socket.socket) -> None:
    """The job process waits for the status; if it goes away first, so does this fork."""
    with contextlib.suppress(OSError):
        conn.recv(1)
    os._exit(1)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(os.environ.get("DPMINIMAX_JOBSERVER_IDLE", "60")))
