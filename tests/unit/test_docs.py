"""The docs run: every module's doctests, the commands and code of README.md and docs/*.md (run,
parsed with the programs' own parsers, or marked with the reason they cannot run here), and the
names of modules and files the docs and docstrings use. The rules are in tests/docs/__init__.py.

The blocks marked `netns` (the emulated WAN, as root) are run by tests/netns/test_docs_netns.py;
here they are parsed.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest
import yaml

from tests.docs import blocks, names, parsers

# Module docstrings whose Python example is not a doctest, and why. Their calls are still bound
# to the real signatures (test_illustrations_call_what_exists).
ILLUSTRATIONS = {
    "p4diff.netns": "creates a network namespace with veth pairs: root",
    "p4diff.targets": "starts a switch process in a network namespace: root",
    "controller.bringup": "brings a Mininet testbed up: root",
    "controller.cluster.bringup": "brings a testbed up on a running Ray cluster's machines",
    "innet.torch": "a torch.distributed script: needs ranks started together",
    "workers.distributed": "a torch.distributed script: needs ranks started together",
    "controller.service.cluster": "brings the service's testbed up on a running Ray cluster",
    "controller.cluster.islands": "island processes on a running Ray cluster's machines",
    "controller.cluster.network": "builds a network on a running Ray cluster's machines",
    "controller.cluster.runs": "joins a running Ray cluster and measures it",
    "controller.cluster.raycluster": "joins a running Ray cluster",
    "controller.testbed": "a Testbed over a running Mininet network: root",
    "controller.p4rt.connection": "connects to a running P4Runtime switch",
    "controller.p4rt.schema": "needs a P4Info: the switches' program compiled by p4switch, "
    "which the controller does not import",
    "controller.p4rt.fabric": "connects to running P4Runtime switches",
    "controller.runner.run": "a run builds Mininet testbeds and island processes: root",
    "controller.service.api": "an app over a running Testbed, served by uvicorn",
    "controller.service.client": "talks to a running service",
    "topo.mininet_net": "builds a Mininet network: root",
    "workers.quantise": "a formula (the shared scale), not code",
}

# Modules whose doctests must be found (a finder that finds nothing must not pass).
DOCTESTED = {
    "controller.rounds",
    "controller.runner.emulation",
    "controller.runner.records",
    "innet.checksum",
    "p4switch.inprocess",
    "p4switch.program",
    "topo.siteplan",
    "workers.config",
    "workers.protocol",
}

MODULES = blocks.package_modules()
BLOCKS, BLOCK_PROBLEMS = blocks.all_blocks()


def ids(found: list[blocks.Block]) -> list[str]:
    return [b.where for b in found]


def marked(mode: str, *langs: str) -> list[blocks.Block]:
    return [b for b in BLOCKS if b.mode == mode and (not langs or b.lang in langs)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return blocks.workdir(tmp_path_factory.mktemp("checkout"))


# --- module docstrings ------------------------------------------------------------------------


def run_doctests(name: str) -> tuple[int, int, str]:
    """(examples, failures, report) of a module's doctests."""
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out = io.StringIO()
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    return result.attempted, result.failed, out.getvalue()


@pytest.mark.parametrize("name", MODULES)
def test_doctests_pass(name: str) -> None:
    _, failed, report = run_doctests(name)
    assert failed == 0, report


def examples(name: str) -> int:
    module = importlib.import_module(name)
    return sum(len(t.examples) for t in doctest.DocTestFinder().find(module, name))


def package_folder(package: str) -> Path:
    """Where a package's sources are (p4switch's: src/p4switch in its project folder)."""
    return Path(importlib.import_module(package).__file__ or "").parent


def test_every_example_in_the_packages_is_found() -> None:
    """Every `>>>` line of the packages' sources is an example doctest runs (none hides where
    the finder does not look), and the modules known to have doctests have them."""
    found = {name: examples(name) for name in MODULES}
    assert all(found[name] for name in DOCTESTED), {n: found[n] for n in DOCTESTED}
    prompts = sum(
        line.lstrip().startswith(">>>")
        for package in blocks.PACKAGES
        for path in package_folder(package).rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
    )
    assert sum(found.values()) == prompts >= 25


def python_examples(name: str) -> list[str]:
    """The Python examples of a module's docstring that are not doctests."""
    doc = importlib.import_module(name).__doc__
    return [b for b in blocks.docstring_blocks(doc) if ">>>" not in b and blocks.python_code(b)]


def test_every_docstring_example_is_a_doctest_or_an_illustration_with_a_reason() -> None:
    unlisted = [n for n in MODULES if python_examples(n) and n not in ILLUSTRATIONS]
    assert unlisted == [], (
        f"{unlisted}: make the docstring's example a doctest (>>> with its output), or, if it "
        "cannot run without root, a network or a service, list the module in ILLUSTRATIONS "
        "with the reason"
    )
    stale = [n for n in ILLUSTRATIONS if not python_examples(n)]
    assert stale == [], f"{stale} have no Python example left: take them off ILLUSTRATIONS"


@pytest.mark.parametrize("name", sorted(ILLUSTRATIONS))
def test_illustrations_call_what_exists(name: str) -> None:
    module = importlib.import_module(name)
    problems = [
        p
        for block in python_examples(name)
        for p in names.call_problems(block, vars(module), f"{name} docstring")
    ]
    assert problems == []


def test_docstring_command_lines_name_real_commands_and_options() -> None:
    problems, checked = [], 0
    for name in MODULES:
        for block in blocks.docstring_blocks(importlib.import_module(name).__doc__):
            if ">>>" in block:
                continue
            for line in blocks.command_lines(block):
                checked += 1
                problems += parsers.synopsis_problems(line, f"{name} docstring: `{line}`")
    assert problems == []
    assert checked >= 10


# Stale names in docstrings that are not examples (for the code's owner to fix; an entry that
# is no longer found can go).
KNOWN_STALE: set[str] = set()  # problems known and not yet fixed (none now)


def test_docs_and_docstrings_name_modules_and_files_that_exist() -> None:
    problems = []
    for path in blocks.DOCS:
        problems += names.reference_problems(path.read_text(), str(path.relative_to(blocks.REPO)))
    for name in MODULES:
        doc = importlib.import_module(name).__doc__ or ""
        problems += names.reference_problems(doc, f"{name} docstring")
    assert [p for p in problems if p not in KNOWN_STALE] == []


def test_commands_and_options_in_prose_exist() -> None:
    problems = []
    for path in blocks.DOCS:
        problems += parsers.inline_problems(path.read_text(), str(path.relative_to(blocks.REPO)))
    for name in MODULES:
        doc = importlib.import_module(name).__doc__ or ""
        problems += parsers.inline_problems(doc, f"{name} docstring", options=False)
    assert problems == []


# --- README.md and docs/*.md --------------------------------------------------------------------


def test_every_block_names_its_language_and_says_how_it_is_tested() -> None:
    assert BLOCK_PROBLEMS == []
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("block", marked("run", "sh"), ids=ids(marked("run", "sh")))
def test_sh_blocks_run(block: blocks.Block, workdir: Path) -> None:
    cmds = blocks.commands(block)
    assert cmds, f"{block.where}: no command"
    unsafe = [f"{c.where}: `{c.text}` {why}" for c in cmds if (why := blocks.needs_marking(c))]
    assert unsafe == [], "mark these blocks netns, parse or skip (nothing was run)"
    env = blocks.command_env()
    problems = [blocks.outcome(c, blocks.run_command(c, workdir, env, timeout=120)) for c in cmds]
    assert [p for p in problems if p] == []


@pytest.mark.parametrize("block", marked("run", "python"), ids=ids(marked("run", "python")))
def test_python_blocks_run(block: blocks.Block, workdir: Path) -> None:
    why = blocks.python_needs_marking(block)
    assert why is None, f"{block.where} {why}: mark it netns or skip (nothing was run)"
    assert blocks.run_python(block, workdir, blocks.command_env()) is None


PARSED = marked("parse", "sh") + marked("netns", "sh")


@pytest.mark.parametrize("block", PARSED, ids=ids(PARSED))
def test_commands_too_long_or_needing_root_parse(block: blocks.Block) -> None:
    cmds = blocks.commands(block)
    assert cmds
    assert [p for c in cmds for p in parsers.parse_problems(c)] == []


@pytest.mark.parametrize("block", marked("options"), ids=ids(marked("options")))
def test_synopses_name_real_commands_and_options(block: blocks.Block) -> None:
    cmds = blocks.commands(block)
    assert cmds
    assert [
        p for c in cmds for p in parsers.synopsis_problems(c.text, f"{c.where}: `{c.text}`")
    ] == []


NOT_RUN = marked("skip", "python") + marked("netns", "python")


@pytest.mark.parametrize("block", NOT_RUN, ids=ids(NOT_RUN))
def test_python_blocks_not_run_here_call_what_exists(block: blocks.Block) -> None:
    compile(block.text, block.where, "exec")
    assert names.call_problems(block.text, {}, block.where) == []


@pytest.mark.parametrize("block", marked("run", "yaml"), ids=ids(marked("run", "yaml")))
def test_yaml_blocks_parse(block: blocks.Block) -> None:
    assert isinstance(yaml.safe_load(block.text), dict)


@pytest.mark.parametrize("block", marked("run", "text"), ids=ids(marked("run", "text")))
def test_text_blocks_hold_no_command(block: blocks.Block) -> None:
    commands = [line for line in block.text.splitlines() if blocks.COMMAND.match(line.strip())]
    assert commands == [], f"{block.where}: commands belong in a ```sh block"


def test_what_the_docs_test_does() -> None:
    """The counts, printed with -s; and at least some of each kind."""
    counts = {
        "doctest examples": sum(examples(n) for n in MODULES),
        "modules with doctests": sum(bool(examples(n)) for n in MODULES),
        "commands run": sum(len(blocks.commands(b)) for b in marked("run", "sh")),
        "python blocks run": len(marked("run", "python")),
        "commands parsed (too long)": sum(len(blocks.commands(b)) for b in marked("parse", "sh")),
        "commands run as root (netns), parsed here": sum(
            len(blocks.commands(b)) for b in marked("netns", "sh")
        ),
        "command lines whose options are checked": sum(
            len(blocks.commands(b)) for b in marked("options")
        ),
        "blocks skipped": len(marked("skip")) + len(marked("vm")),
        "docstring illustrations (calls checked)": len(ILLUSTRATIONS),
        "docstring command lines (options checked)": sum(
            len(blocks.command_lines(b))
            for n in MODULES
            for b in blocks.docstring_blocks(importlib.import_module(n).__doc__)
            if ">>>" not in b
        ),
    }
    print("\n".join(f"{k}: {v}" for k, v in counts.items()))
    skipped = [f"{b.where}: {b.reason}" for b in marked("skip")]
    print("skipped:\n  " + "\n  ".join(skipped))
    assert counts["commands run"] >= 8 and counts["commands parsed (too long)"] >= 4
    assert counts["commands run as root (netns), parsed here"] >= 5


# --- the test can fail ----------------------------------------------------------------------------


def write_doc(tmp_path: Path, text: str) -> tuple[list[blocks.Block], list[str]]:
    path = tmp_path / "doc.md"
    path.write_text(text)
    return blocks.markdown(path)


def test_a_block_without_a_language_or_a_reason_or_with_unfenced_code_is_refused(
    tmp_path: Path,
) -> None:
    _, problems = write_doc(tmp_path, "```\ninnet topo\n```\n")
    assert any("must name its language" in p for p in problems)
    _, problems = write_doc(tmp_path, "<!-- docs-test: skip -->\n```sh\ninnet topo\n```\n")
    assert any("must say why" in p for p in problems)
    _, problems = write_doc(tmp_path, "text\n\n    .venv/bin/innet topo\n\nmore\n")
    assert any("fence it" in p for p in problems)
    _, problems = write_doc(tmp_path, "<!-- docs-test: skip: no block follows -->\n\ntext\n")
    assert any("right above a block" in p for p in problems)


def test_a_broken_command_fails(tmp_path: Path, workdir: Path) -> None:
    (block,), _ = write_doc(tmp_path, "```sh\n.venv/bin/innet plan --memroy 64MB\n```\n")
    (cmd,) = blocks.commands(block)
    assert blocks.outcome(cmd, blocks.run_command(cmd, workdir, blocks.command_env())) is not None
    assert parsers.parse_problems(cmd) != []
    (block,), _ = write_doc(tmp_path, "```sh\nsudo .venv/bin/innet run scenarios/nope.yaml\n```\n")
    assert "does not exist" in " ".join(parsers.parse_problems(blocks.commands(block)[0]))
    assert parsers.synopsis_problems("innet net up [--hostz 1]", "x") != []
    assert parsers.synopsis_problems("innet net upp", "x") != []
    assert parsers.synopsis_problems("innet net up [--shaping auto|kernel|netem]", "x") != []
    assert parsers.synopsis_problems("python -m controller.nothing --flag", "x") != []
    assert parsers.inline_problems("with `--scael 1000` or `innet plan sweep --pointz 3`", "x")


def test_an_illustration_with_a_stale_call_fails() -> None:
    stale = "from topo.mininet_net import build_network\nbuild_network(wan, hosts_per_city=2)\n"
    assert names.call_problems(stale, {}, "x") != []
    missing = (
        "driver = RoundDriver(fabric, wan, schedule, job=1, addressing=a)\ndriver.wait_done(0)\n"
    )
    assert "no attribute 'wait_done'" in " ".join(names.call_problems(missing, {}, "x"))
    assert names.reference_problems("see `controller.rounds.base_plan` and controller/api.py", "x")
