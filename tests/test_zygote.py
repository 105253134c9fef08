"""The zygote that runs the tests' bncbench commands (conftest.py ``Zygote``, tests/zygote.py): a command run
in its child is seen as one run by a fresh ``python -m``: exit status, output, environment, working directory;
a timeout kills it, and the zygote serves the next command whatever the last one did."""

import json
import os
import subprocess
import sys
import time

import pytest

PROBE = """\
import json, os, subprocess, sys
print("out")
print("err", file=sys.stderr)
inherited = subprocess.run(["env", "-0"], capture_output=True, text=True).stdout
print(json.dumps({"env": dict(os.environ), "inherited": inherited, "cwd": os.getcwd(), "path0": sys.path[0],
                  "argv": sys.argv, "parent": os.getppid()}))
"""

ENDINGS = {
    "exit 0": "import sys; print('fine'); sys.exit(0)",
    "exit 2": "import sys; print('bad', file=sys.stderr); sys.exit(2)",
    "exit with a message": "import sys; sys.exit('a message')",
    "uncaught exception": "print('before'); raise ValueError('boom')",
    "Ctrl-C": "raise KeyboardInterrupt",
    "output that cannot be flushed": "import os, sys; sys.stdout = open(1, 'w', closefd=False); print('x'); os.close(1)",
}


def module(folder, name: str, source: str) -> str:
    (folder / f"{name}.py").write_text(source)
    return name


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_a_command_ends_as_in_a_fresh_process(tmp_path, zygote, cli_env, ending):
    name = module(tmp_path, "ending", ENDINGS[ending])
    child = zygote.run(name, [], tmp_path, cli_env, 60)
    fresh = zygote.run(name, [], tmp_path, cli_env, 60, fresh=True)
    assert (child.returncode, child.stdout) == (fresh.returncode, fresh.stdout)
    if "Traceback" in fresh.stderr:  # the frames above the module's are the zygote's
        assert child.stderr.startswith("Traceback") and last_line(child.stderr) == last_line(fresh.stderr)
    elif ending == "output that cannot be flushed":  # Python also says why, in a line of its own
        assert child.stderr == ""
    else:
        assert child.stderr == fresh.stderr
    assert child.returncode == {"exit 0": 0, "exit with a message": 1, "uncaught exception": 1, "Ctrl-C": -2,
                                "output that cannot be flushed": 120}.get(ending, 2)


@pytest.mark.parametrize(
    "args",
    [["--help"], ["list", "models"], ["run", "--dry-run", "experiment=smoke"], ["run", "--dry-run", "cv.folds=x"],
     ["report", "tracking_uri=sqlite:///nowhere/mlflow.db"]],
    ids=["help", "list", "dry run", "bad setting", "report of no store"],
)
def test_bncbench_answers_as_in_a_fresh_process(tmp_path, zygote, cli_env, args):
    seen = {}
    for kind in ("child", "fresh"):
        (tmp_path / kind).mkdir()
        done = zygote.run("bncbench", args, tmp_path / kind, cli_env, 300, fresh=kind == "fresh")
        seen[kind] = [done.args, done.returncode, *(text.replace(str(tmp_path / kind), "<cwd>")
                                                     for text in (done.stdout, done.stderr))]
    assert seen["child"] == seen["fresh"]
    assert seen["child"][0] == [sys.executable, "-m", "bncbench", *args]
    assert sorted(p.name for p in (tmp_path / "child").rglob("*")) == sorted(
        p.name for p in (tmp_path / "fresh").rglob("*")
    )


def test_the_child_has_the_commands_environment_working_directory_and_arguments(tmp_path, zygote, cli_env):
    env = {name: value for name, value in cli_env.items() if name != "BNCBENCH_DATA_DIR"} | {"ONLY_HERE": "1"}
    (tmp_path / "work").mkdir()
    done = zygote.run(module(tmp_path / "work", "probe", PROBE), ["a", "b c"], tmp_path / "work", env, 60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("out\n") and done.stderr == "err\n"
    seen = json.loads(done.stdout.splitlines()[1])
    assert seen["env"] == env  # nothing of the zygote's own: BNCBENCH_DATA_DIR is gone
    assert dict(entry.split("=", 1) for entry in seen["inherited"].split("\0") if entry) == env  # and in its children
    assert seen["cwd"] == seen["path0"] == str(tmp_path / "work")
    assert seen["argv"] == [str(tmp_path / "work" / "probe.py"), "a", "b c"]
    assert seen["parent"] not in (os.getpid(), 1)  # the zygote's child


def test_an_environment_that_differs_in_what_numba_reads_at_import_runs_fresh(tmp_path, zygote, cli_env):
    threads = "1" if cli_env.get("NUMBA_NUM_THREADS") != "1" else "2"
    name = module(tmp_path, "threads", "import os, numba; print(numba.config.NUMBA_NUM_THREADS, os.getppid())")
    done = zygote.run(name, [], tmp_path, {**cli_env, "NUMBA_NUM_THREADS": threads}, 120)
    assert done.stdout.split() == [threads, str(os.getpid())], done.stderr  # this process's child


def test_a_timeout_kills_the_child_and_the_next_command_runs(tmp_path, zygote, cli_env):
    name = module(tmp_path, "sleeper", "import os, time; print(os.getpid(), flush=True); time.sleep(120)")
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as timed_out:
        zygote.run(name, [], tmp_path, cli_env, 2)
    assert time.monotonic() - start < 30
    pid = int(timed_out.value.output)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    after = zygote.run("bncbench", ["list", "experiments"], tmp_path, cli_env, 60)
    assert after.returncode == 0 and "smoke" in after.stdout, after.stderr


def test_a_command_after_a_failing_one_runs_in_a_clean_child(tmp_path, zygote, cli_env):
    name = module(tmp_path, "spoiler", "import sys, bncbench.app.cli as cli; cli.main = None; sys.exit(3)")
    assert zygote.run(name, [], tmp_path, cli_env, 60).returncode == 3
    after = zygote.run("bncbench", ["list", "suites"], tmp_path, cli_env, 60)
    assert after.returncode == 0 and after.stderr == "", after.stderr


RENDEZVOUS = """\
import os, pathlib, sys, time
pathlib.Path(sys.argv[1]).touch()
deadline = time.monotonic() + 60
while not pathlib.Path(sys.argv[2]).exists():
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.05)
print(os.getpgid(0) == os.getpid(), os.getppid(), flush=True)
print("err", file=sys.stderr)
"""


@pytest.mark.parametrize("fresh", [False, True], ids=["children", "fresh processes"])
def test_commands_at_once_each_run_as_started(tmp_path, zygote, cli_env, fresh):
    """Two commands that wait for each other: each in a zygote of its own (or a fresh process); in a new session,
    its stderr in its stdout, when asked."""
    name = module(tmp_path, "rendezvous", RENDEZVOUS)
    first = zygote.start(name, ["a", "b"], tmp_path, cli_env, stderr="stdout", session=True, fresh=fresh)
    second = zygote.start(name, ["b", "a"], tmp_path, cli_env, fresh=fresh)
    ended = [first.wait(60), second.wait(60)]
    assert [done.returncode for done in ended] == [0, 0], [done.stdout + done.stderr for done in ended]
    (leader, parent), err = ended[0].stdout.split("\n")[0].split(), ended[0].stdout.split("\n")[1]
    assert (leader, err, ended[0].stderr) == ("True", "err", "")
    (leader, other_parent) = ended[1].stdout.split()
    assert (leader, ended[1].stderr) == ("False", "err\n")
    if fresh:
        assert int(parent) == int(other_parent) == os.getpid()
    else:
        assert len({int(parent), int(other_parent), os.getpid()}) == 3  # two zygotes
