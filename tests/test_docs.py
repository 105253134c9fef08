"""The documentation (README.md and docs/*.md) against the code, so that it cannot rot unnoticed.

Every fenced block of every page is checked where that is cheap:

- ``sh``: each ``bncbench ...`` or ``python -m bncbench ...`` line goes through the real command line
  (``bncbench.app.cli.main``) in a temporary directory, so its options are parsed and its overrides
  composed into a plan; nothing runs: ``run`` stops before its cells (``run_plan``), ``--dry-run``
  prints the plan of an empty store, ``report``, ``export``, ``import`` and ``data add`` stop after composing
  (an import's bundles must exist). ``bncbench list`` and ``--help`` lines and ``lint-imports`` run for
  real; ``python benchmarks/<name>.py`` must name a benchmark and options it takes. Any other command
  fails the test, unless the block is marked skipped.
- ``python``: run, the blocks of one page in one namespace, in a temporary directory.
- ``yaml``: an experiment, composed from a search path.
- ``text``: not run; one marked ``<!-- docs-test: output of <command> -->`` must be lines of that
  command's output.

A block that cannot run in a test (a cluster, hours, a network, an install) is marked on the line
before its fence with ``<!-- docs-test: skip (why) -->``. Links between pages and to files of the
repository must resolve, paths of the repository in backquotes must exist, and ``bncbench.<module>...``
names must import.
"""

import contextlib
import glob
import io
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bncbench.app.config import compose
from bncbench.core.errors import BncbenchError

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = ("sh", "python", "yaml", "text")
MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")
SKIP = re.compile(r"^skip \((.+)\)$")
OUTPUT = re.compile(r"^output of (.+)$")
FENCE = re.compile(r"^```(\S*)\s*$")
#: The README's commands for a fresh machine, as CI parses and runs them: the README's first sh block.
FRESH_MACHINE = """\
```sh
# 1. install, then run the main job: the `smoke` experiment (SQLite store in runs/, report in runs/reports/smoke/);
#    `bncbench run` is the same command
python -m venv .venv && . .venv/bin/activate && pip install -e . && python -m bncbench

# 2. run the tests (the datasets are read from ../shared/datasets)
pip install -e '.[test]' && BNCBENCH_DATA_DIR=../shared/datasets pytest -q
```
"""
README_MAX_LINES = 150
#: The subcommands of ``bncbench``; without one, a command line is ``run``'s.
COMMANDS = ("run", "report", "list", "export", "import", "data")
#: Folders of the repository whose paths the pages name in backquotes.
REPO_FOLDERS = ("bncbench", "conf", "tests", "benchmarks", "reports", "docs", ".ci")


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, text, and the ``docs-test`` marker on the line before."""

    page: Path
    line: int
    language: str
    text: str
    marker: str | None

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def skipped(self) -> bool:
        return self.marker is not None and self.marker.startswith("skip")


def read_page(page: Path) -> tuple[list[Block], list[str], list[str]]:
    """The blocks of ``page``, its lines outside blocks, and its markers that precede no block."""
    blocks, prose, stray = [], [], []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            prose.append(lines[i])
            marker = MARKER.match(lines[i].strip())
            if marker and not (i + 1 < len(lines) and FENCE.match(lines[i + 1])):
                stray.append(f"{page.relative_to(REPO)}:{i + 1}: {lines[i].strip()}")
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page.relative_to(REPO)}:{i + 1}: a fence that is never closed"
        before = MARKER.match(lines[i - 1].strip()) if i > 0 else None
        blocks.append(Block(page, i + 1, opening.group(1), "\n".join(lines[i + 1 : end]) + "\n",
                            before.group(1) if before else None))
        i = end + 1
    return blocks, prose, stray


PARSED = {page: read_page(page) for page in PAGES}
BLOCKS = [block for blocks, _, _ in PARSED.values() for block in blocks]
SH_BLOCKS = [b for b in BLOCKS if b.language == "sh" and not b.skipped]
YAML_BLOCKS = [b for b in BLOCKS if b.language == "yaml" and not b.skipped]
OUTPUT_BLOCKS = [b for b in BLOCKS if b.marker and OUTPUT.match(b.marker)]
PYTHON_PAGES = sorted({b.page for b in BLOCKS if b.language == "python" and not b.skipped})


def ids(blocks) -> list[str]:
    return [str(block) for block in blocks]


# --- markers and pages ------------------------------------------------------------------------------


@pytest.mark.parametrize("block", BLOCKS, ids=ids(BLOCKS))
def test_block_language_and_marker(block):
    assert block.language in LANGUAGES, f"{block}: a block is one of {LANGUAGES}, got {block.language!r}"
    if block.marker is None:
        return
    skip, output = SKIP.match(block.marker), OUTPUT.match(block.marker)
    assert skip or output, f"{block}: a marker is 'skip (why)' or 'output of <command>', got {block.marker!r}"
    if skip:
        assert block.language != "text", f"{block}: a text block is never run, so it is never skipped"
        assert len(skip.group(1).split()) >= 3, f"{block}: a skipped block says why, in words: {block.marker!r}"
    else:
        assert block.language == "text", f"{block}: the output of a command is a text block"


def test_every_marker_precedes_a_block():
    stray = [line for _, _, markers in PARSED.values() for line in markers]
    assert not stray, "docs-test markers must be on the line right before a fence:\n" + "\n".join(stray)


def test_readme_is_the_front_door():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < README_MAX_LINES
    blocks, _, _ = PARSED[REPO / "README.md"]
    first_sh = next(block for block in blocks if block.language == "sh")
    assert f"```sh\n{first_sh.text}```\n" == FRESH_MACHINE, "the fresh-machine commands changed: CI runs them"
    linked = {(REPO / "README.md").parent / target for target in re.findall(r"\]\((docs/[^)#]+)\)", readme)}
    unlinked = [page.name for page in PAGES[1:] if page not in linked]
    assert not unlinked, f"README's 'Where to read more' does not link {unlinked}"


def test_readme_quotes_the_browse_lines():
    """The two lines a sweep prints to browse its runs, as the README shows them."""
    from bncbench.app.ui import browse_hint

    blocks, _, _ = PARSED[REPO / "README.md"]
    shown = next(block.text.strip() for block in blocks if "browse the runs" in block.text)
    uri = re.search(r"--backend-store-uri (\S+)", shown).group(1)
    assert shown == browse_hint(uri, re.search(r"experiments/(\d+)/", shown).group(1))


# --- shell blocks -----------------------------------------------------------------------------------


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a shell snippet, as argument lists: line continuations joined, comments
    dropped, split at ``&&``, ``||``, ``;`` and ``|``."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        command = []
        for token in lexer:
            if token in (";", "&&", "||", "|", "&"):
                commands.append(command)
                command = []
            else:
                command.append(token)
        commands.append(command)
    return [command for command in commands if command]


def without_environment(command: list[str]) -> list[str]:
    """``command`` without its leading ``NAME=value`` assignments."""
    while command and re.match(r"^[A-Z_][A-Z0-9_]*=", command[0]):
        command = command[1:]
    return command


class StoppedHere(Exception):
    """Raised where a command of the pages would run cells, write a report or a bundle, import, or convert
    a dataset."""


#: Plans composed by the commands of the pages, by their overrides: pages repeat a configuration (a
#: headline command, then its --dry-run and its report), whose composing takes seconds.
COMPOSED = {}


def compose_once(overrides=()):
    key = tuple(overrides)
    if key not in COMPOSED:
        COMPOSED[key] = compose(key)
    return COMPOSED[key]


@pytest.fixture
def bncbench_command(monkeypatch, tmp_path, shared_data_dir):
    """``command(argv, prog)``: run a bncbench command line in-process in a temporary directory, with
    nothing run, reported, exported or imported; returns (status, output, calls)."""
    import bncbench.app.config
    import bncbench.app.sweep
    import bncbench.app.reporting
    import bncbench.bundles
    import bncbench.data.original_files
    import bncbench.report.writer
    import bncbench.tracking
    from bncbench.app import cli

    calls = []

    def record(name):
        def called(*args, **kwargs):
            calls.append((name, args, kwargs))
            raise StoppedHere(name)

        return called

    def no_store(tracking_uri):
        raise BncbenchError(f"no store at {tracking_uri} in this test")

    monkeypatch.setattr(bncbench.app.config, "compose", compose_once)
    monkeypatch.setattr(bncbench.app.sweep, "run_plan", record("run"))
    monkeypatch.setattr(bncbench.tracking, "open_existing_store", no_store)
    monkeypatch.setattr(bncbench.report.writer, "plan_runs", lambda plan, tracking_uri: None)  # read by the report
    monkeypatch.setattr(bncbench.app.reporting, "write_plan_report", record("report"))
    monkeypatch.setattr(bncbench.bundles, "export_bundle", record("export"))
    monkeypatch.setattr(bncbench.bundles, "import_bundles", record("import"))
    monkeypatch.setattr(bncbench.data.original_files, "add_original_files", record("data"))
    monkeypatch.setenv("BNCBENCH_DATA_DIR", str(shared_data_dir))
    monkeypatch.chdir(tmp_path)

    def command(argv: list[str], prog: str):
        calls.clear()
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = cli.main(list(argv), prog=prog)
            except StoppedHere:  # composed, about to run, report, export or import
                status = 0
            except SystemExit as exit_:  # --help
                status = exit_.code
        return status, out.getvalue(), list(calls)

    return command


def bncbench_argv(command: list[str]) -> tuple[list[str], str] | None:
    """``(argv, prog)`` of a bncbench command line, or None for another program."""
    if command[0] == "bncbench":
        return command[1:], "bncbench"
    if command[:3] == ["python", "-m", "bncbench"]:
        return command[3:], "python -m bncbench"
    return None


def repository_paths(argv: list[str]) -> list[str]:
    """``argv`` with each argument that is a shell pattern (``reports/x/bundles/*``) expanded in the
    repository, and the folders an import or a report's ``--bundles`` names made absolute; a pattern must match."""
    expanded, bundles = [], False
    for arg in argv:
        if "=" in arg or arg.startswith("-"):
            bundles = arg == "--bundles"
            expanded.append(arg)
        elif any(char in arg for char in "*?["):
            matches = sorted(glob.glob(str(REPO / arg)))
            assert matches, f"{arg} matches nothing in the repository"
            expanded += matches
        elif (argv[0] == "import" and arg != "import") or bundles:
            expanded.append(str(REPO / arg))
        else:
            expanded.append(arg)
    return expanded


def check_bncbench(argv: list[str], prog: str, run) -> None:
    line = " ".join([prog, *argv])
    argv = repository_paths(argv)
    status, output, calls = run(argv, prog)
    assert status == 0, f"{line}\n{output}"
    if "--help" in argv or "-h" in argv:
        assert "usage:" in output, line
        return
    command = argv[0] if argv and argv[0] in COMMANDS else "run"
    if command == "list":
        assert output.strip(), f"{line} listed nothing"
    elif command == "run" and "--dry-run" in argv:
        assert output.startswith("bncbench: experiment '"), f"{line}: no plan printed\n{output}"
    elif command == "run" and "--cfg" in argv:
        assert "experiment" in yaml.safe_load(output), f"{line}: no config printed\n{output}"
    else:
        assert [name for name, _, _ in calls] == [command], f"{line}: expected one {command}, got {calls}"
        args = calls[0][1]
        if command == "run":
            assert len(args[0].plan) > 0, f"{line}: a plan without cells"
        if command == "import":
            bundles = args[1]
            assert bundles and all((Path(b) / "manifest.json").is_file() for b in bundles), f"{line}: {bundles}"


def check_benchmark(command: list[str]) -> None:
    script = REPO / command[1]
    assert script.is_file() and script.parent == REPO / "benchmarks", f"no benchmark {command[1]}"
    source = script.read_text(encoding="utf-8")
    for option in (arg.split("=")[0] for arg in command[2:] if arg.startswith("--")):
        assert f'"{option}"' in source, f"{command[1]} takes no option {option}"


def check_lint_imports() -> None:
    program = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    result = subprocess.run([program], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("block", SH_BLOCKS, ids=ids(SH_BLOCKS))
def test_shell_block(block, bncbench_command):
    commands = [without_environment(command) for command in shell_commands(block.text)]
    assert commands, f"{block}: a shell block without a command"
    for command in commands:
        bncbench = bncbench_argv(command)
        if bncbench is not None:
            check_bncbench(*bncbench, bncbench_command)
        elif command[0] == "python" and len(command) > 1 and command[1].startswith("benchmarks/"):
            check_benchmark(command)
        elif command == ["lint-imports"]:
            check_lint_imports()
        else:
            pytest.fail(
                f"{block}: tests/test_docs.py cannot check {shlex.join(command)!r}; check it there, or mark the "
                "block '<!-- docs-test: skip (why) -->'"
            )


@pytest.mark.parametrize("block", OUTPUT_BLOCKS, ids=ids(OUTPUT_BLOCKS))
def test_output_block(block, bncbench_command):
    """A text block marked as the output of a command holds lines that command prints."""
    command = shlex.split(OUTPUT.match(block.marker).group(1))
    argv, prog = bncbench_argv(command) or pytest.fail(f"{block}: not a bncbench command: {command}")
    assert argv[0] == "list" or "--help" in argv, f"{block}: only list and --help outputs are quoted"
    status, output, _ = bncbench_command(argv, prog)
    assert status == 0, output

    def words(line):
        return " ".join(line.split())

    printed = {words(line) for line in output.splitlines()}
    missing = [line for line in block.text.splitlines() if line.strip() and words(line) not in printed]
    assert not missing, f"{block}: not printed by {' '.join(command)}: {missing}"


# --- python and yaml blocks -------------------------------------------------------------------------


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=[str(p.relative_to(REPO)) for p in PYTHON_PAGES])
def test_python_blocks(page, monkeypatch, tmp_path, shared_data_dir):
    monkeypatch.setenv("BNCBENCH_DATA_DIR", str(shared_data_dir))
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "docs"}
    for block in PARSED[page][0]:
        if block.language == "python" and not block.skipped:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(block.text, str(block), "exec"), namespace)


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=ids(YAML_BLOCKS))
def test_yaml_experiment(block, tmp_path, monkeypatch, shared_data_dir):
    assert block.text.startswith("# @package _global_\n"), f"{block}: a yaml block is an experiment's file"
    name = yaml.safe_load(block.text)["experiment"]["name"]
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / f"{name}.yaml").write_text(block.text, encoding="utf-8")
    monkeypatch.setenv("BNCBENCH_DATA_DIR", str(shared_data_dir))
    plan = compose([f"hydra.searchpath=[file://{tmp_path}]", f"experiment={name}"]).plan
    assert plan.experiment == name and len(plan) > 0 and plan.comparisons


# --- links and names --------------------------------------------------------------------------------


def inline_code(prose: list[str]) -> list[str]:
    return re.findall(r"`([^`]+)`", "\n".join(prose))


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of the headings of ``page``."""
    _, prose, _ = PARSED.get(page) or read_page(page)
    anchors = set()
    for line in prose:
        heading = re.match(r"^#+\s+(.*)$", line)
        if heading:
            text = heading.group(1).replace("`", "").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_links_resolve(page):
    _, prose, _ = PARSED[page]
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", "\n".join(prose)):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        outside = not resolved.is_relative_to(REPO) or not resolved.exists()
        if outside or (anchor and (resolved.suffix != ".md" or anchor not in heading_anchors(resolved))):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: links that do not resolve: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_named_paths_exist(page):
    """Paths of the repository in backquotes (``bncbench/app/sweep.py``) exist; placeholders
    (``<experiment>``) and patterns are left alone."""
    pattern = re.compile(rf"^({'|'.join(map(re.escape, REPO_FOLDERS))})/[\w./-]*$")
    named = [code for code in inline_code(PARSED[page][1]) if pattern.match(code)]
    missing = [path for path in named if not (REPO / path).exists()]
    assert not missing, f"{page.relative_to(REPO)}: no such files: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_named_modules_import(page):
    """Names such as ``bncbench.protocol.models`` or ``bncbench.report.compute_report(...)`` name a
    module or one of its attributes (tag names such as ``bncbench.copied_from`` are not modules)."""
    import importlib
    import pkgutil

    import bncbench

    packages = {module.name for module in pkgutil.iter_modules(bncbench.__path__)}
    unknown = []
    for code in inline_code(PARSED[page][1]):
        name = re.match(r"^bncbench((?:\.\w+)+)", code)
        if not name or name.group(1).split(".")[1] not in packages:
            continue
        parts = f"bncbench{name.group(1)}".split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
                break
            except ImportError:
                continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute, None)
        if found is None:
            unknown.append(code)
    assert not unknown, f"{page.relative_to(REPO)}: names that do not import: {unknown}"
