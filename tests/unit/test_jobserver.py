"""Workflow jobs handed over to a warm job server run once, in a fork that has the job's
directory, environment, arguments and streams, and report the job's exit status
(dpminimax.jobserver)."""

from __future__ import annotations

import json
import os
import runpy
import signal
import socket
import subprocess
import sys
import time

import pytest

from dpminimax import jobserver

pytestmark = pytest.mark.skipif(not hasattr(socket, "send_fds"), reason="needs SCM_RIGHTS")

JOB = """
import json, os, sys
from dpminimax.jobserver import hand_over
hand_over(1)
print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "warm": "torch" in sys.modules,
                  "argv": sys.argv[1:], "cwd": os.getcwd(), "x": os.environ.get("X")}))
print("to stderr", file=sys.stderr)
action = sys.argv[1]
if action == "fail":
    raise ValueError("planted failure")
if action == "sleep":
    open("fork.pid", "w").write(str(os.getpid()))
    import time; time.sleep(120)
with open("runs.txt", "a") as runs:
    runs.write(action + "\\n")
sys.exit(int(action))
"""


@pytest.fixture
def job(tmp_path, monkeypatch):
    """Run the job script in ``tmp_path`` as a workflow job would (its own process)."""
    (tmp_path / "job.py").write_text(JOB)
    env = {**os.environ, "DPMINIMAX_JOBSERVER_IDLE": "20", "X": f"{tmp_path.name}"}
    env.pop("DPMINIMAX_JOBSERVER", None)
    env.pop(jobserver.FORK_MARK, None)
    monkeypatch.chdir(tmp_path)

    def run(*argv, **extra):
        return subprocess.run([sys.executable, "job.py", *argv], cwd=tmp_path,
                              env={**env, **extra}, capture_output=True, text=True,
                              timeout=300)
    run.env = env
    return run


def report(result) -> dict:
    return json.loads(result.stdout.splitlines()[0])


def test_jobs_run_once_in_forks_of_one_warm_server(job, tmp_path):
    first, second = job("0"), job("3")
    assert (first.returncode, second.returncode) == (0, 3)
    one, two = report(first), report(second)
    assert one["warm"] and two["warm"]                 # torch imported before the script ran
    assert one["ppid"] == two["ppid"] != one["pid"]     # both forked by the same server
    assert (one["argv"], one["cwd"], one["x"]) == (["0"], str(tmp_path), tmp_path.name)
    assert "to stderr" in first.stderr and "to stderr" in second.stderr
    assert (tmp_path / "runs.txt").read_text().split() == ["0", "3"]


def test_a_failing_job_fails_with_its_traceback(job):
    result = job("fail")
    assert result.returncode == 1
    assert "ValueError: planted failure" in result.stderr


def test_off_the_job_runs_in_its_own_process(job, tmp_path):
    result = job("0", DPMINIMAX_JOBSERVER="0")
    assert result.returncode == 0
    assert not report(result)["warm"]
    assert (tmp_path / "runs.txt").read_text().split() == ["0"]


def test_a_server_that_refuses_leaves_the_job_here_and_it_runs_once(job, tmp_path):
    path = jobserver.socket_path(jobserver.server_key(1, job.env))
    refusing = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)
    refusing.bind(str(path))
    refusing.listen(1)
    try:
        process = subprocess.Popen([sys.executable, "job.py", "0"], cwd=tmp_path, env=job.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        conn, _ = refusing.accept()
        conn.close()                                     # hangs up before the fork answers
        out, err = process.communicate(timeout=300)
    finally:
        refusing.close()
        path.unlink(missing_ok=True)
    assert process.returncode == 0, err
    assert "refused the job" in err
    assert not json.loads(out.splitlines()[0])["warm"]
    assert (tmp_path / "runs.txt").read_text().split() == ["0"]


def test_a_killed_job_takes_its_fork_with_it(job, tmp_path):
    process = subprocess.Popen([sys.executable, "job.py", "sleep"], cwd=tmp_path, env=job.env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid_file = tmp_path / "fork.pid"
    deadline = time.monotonic() + 300
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    fork = int(pid_file.read_text())
    assert fork != process.pid
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while _alive(fork):
        assert time.monotonic() < deadline, "the fork outlived its job"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_server_key_follows_threads_environment_and_code(tmp_path):
    base = jobserver.server_key(1, {"A": "1"})
    assert jobserver.server_key(2, {"A": "1"}) != base
    assert jobserver.server_key(1, {"A": "2"}) != base
    (tmp_path / "module.py").write_text("x = 1\n")
    before = jobserver.code_stamp(tmp_path)
    (tmp_path / "module.py").write_text("x = 22\n")
    assert jobserver.code_stamp(tmp_path) != before


def test_a_script_run_by_another_program_is_not_handed_over(tmp_path, monkeypatch):
    """runpy from a test (sys.argv[0] is pytest, the script not ``__main__``) runs the script
    here."""
    monkeypatch.delenv("DPMINIMAX_JOBSERVER", raising=False)
    script = tmp_path / "adapter.py"
    script.write_text("import os\nfrom dpminimax.jobserver import hand_over\nhand_over(1)\n"
                      "RAN_IN = os.getpid()\n")
    assert runpy.run_path(str(script))["RAN_IN"] == os.getpid()


def test_a_server_that_cannot_start_is_not_waited_for_twice(job, tmp_path):
    """A warm import that raises (planted): the server exits, the job runs in its own process,
    and the next job does not start (or wait for) another server of the same code."""
    fake = tmp_path / "fake" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('planted: no warm start')\n")
    path = os.pathsep.join([str(fake.parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    first, second = job("0", PYTHONPATH=path), job("0", PYTHONPATH=path)
    assert first.returncode == second.returncode == 0
    assert "exited while starting" in first.stderr
    assert "last start failed" in second.stderr
    assert not report(first)["warm"] and not report(second)["warm"]
    assert (tmp_path / "runs.txt").read_text().split() == ["0", "0"]
