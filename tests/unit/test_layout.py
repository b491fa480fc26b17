"""The layout's rules, read from the code: which package may import which, p4switch a project of
its own that innet reaches only through its public API, no class name defined twice in a project,
no module that reads the environment at import, functions simple enough (ruff's C901 checks
that). How long a module is, is a reviewer's call (a module does one thing and reads in one
sitting), not a count a test holds: a line cap cut modules by size, not by concern."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import p4switch
import pytest

from innet.exceptions import InnetError

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (  # innet's
    "innet",
    "innet_cli",
    "controller",
    "workers",
    "topo",
    "p4diff",
    "bench",
    "scripts",
)
P4SWITCH = "p4switch"  # a project of its own, which innet depends on
P4SWITCH_SRC = "p4switch/src/p4switch"  # its package (p4switch/ is its project folder)
PROJECT = (*PACKAGES, P4SWITCH, "tests")


def modules(*roots: str) -> Iterator[Path]:
    for root in roots:
        yield from sorted((REPO / root).rglob("*.py"))


def imports(path: Path) -> set[str]:
    """Every module this file imports from the project (absolute imports)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(n for n in names if n.split(".")[0] in PROJECT)
    return found


def importers(root: str, forbidden: tuple[str, ...]) -> list[str]:
    """`file: module` for each import of a forbidden module (or one below it) under `root`."""
    return [
        f"{path.relative_to(REPO)}: {name}"
        for path in modules(root)
        for name in sorted(imports(path))
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


@pytest.mark.parametrize(
    ("root", "forbidden"),
    [
        # the controller speaks only P4Runtime to switches; switch-local facts come from topo
        ("controller", ("p4switch",)),
        # the planner runs anywhere: no root, Mininet or gRPC
        (
            "controller/planner",
            (
                "controller.p4rt",
                "controller.runner",
                "controller.service",
                "controller.testbed",
                "controller.network",
                "topo.mininet_net",
                "topo.p4node",
                "topo.bmv2",
                "workers",
            ),
        ),
        # the core does not know the applications built on it
        ("controller/p4rt", ("controller.runner", "controller.service", "innet_cli")),
        ("controller/runner", ("controller.service", "innet_cli")),
        ("workers", ("controller", "p4switch", "bench", "tests")),
        ("topo", ("controller", "workers", "bench", "tests")),
        (P4SWITCH_SRC, tuple(p for p in PROJECT if p != P4SWITCH)),  # none of innet
        # its tests and benchmarks use none of innet (their `tests` and `bench` are their own)
        ("p4switch/tests", tuple(p for p in PACKAGES if p != "bench")),
        ("p4switch/bench", tuple(p for p in PACKAGES if p != "bench")),
        ("innet", ("controller", "workers", "topo", "p4switch", "bench", "tests")),
        ("p4diff", ("tests", "bench")),
        ("bench", ("tests",)),
        ("scripts", ("tests",)),
    ],
)
def test_dependencies_point_one_way(root: str, forbidden: tuple[str, ...]) -> None:
    assert importers(root, forbidden) == []


def p4switch_imports(path: Path) -> list[str]:
    """What `path` takes from p4switch but its public API: `module` for a module below it,
    `p4switch.NAME` for a name not in p4switch.__all__."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == P4SWITCH:
                found += [
                    f"p4switch.{a.name}" for a in node.names if a.name not in p4switch.__all__
                ]
            elif node.module.startswith(P4SWITCH + "."):
                found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(P4SWITCH + ".")]
    return found


def test_innet_reaches_p4switch_only_through_its_public_api() -> None:
    """Its packages, benchmarks and tests alike: what tests p4switch itself is in its project."""
    found = [
        f"{path.relative_to(REPO)}: {name}"
        for path in modules(*PACKAGES, "tests")
        for name in p4switch_imports(path)
    ]
    assert found == []


def test_the_public_api_check_sees_an_internal_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import p4switch\nfrom p4switch import compile_file, Switch\n"
        "from p4switch.program import compile_file\nimport p4switch.control\n"
    )
    assert p4switch_imports(module) == ["p4switch.Switch", "p4switch.program", "p4switch.control"]


def test_p4switch_s_public_names_are_all_there() -> None:
    """Every name p4switch.__all__ lists is one it has (they are loaded when first used)."""
    missing = [name for name in p4switch.__all__ if getattr(p4switch, name, None) is None]
    assert missing == []
    assert set(p4switch.__all__) == {"EXAMPLES", *p4switch._PUBLIC}


def test_nothing_below_the_command_line_imports_it() -> None:
    """`innet_cli` is the top application: the packages it is built on know nothing of it."""
    below = [package for package in PACKAGES if package != "innet_cli"]
    assert [hit for package in below for hit in importers(package, ("innet_cli",))] == []


def test_the_core_of_the_controller_does_not_import_its_applications() -> None:
    core = list((REPO / "controller").glob("*.py"))
    found = [
        f"{p.name}: {name}"
        for p in core
        for name in sorted(imports(p))
        if name.startswith(("controller.runner", "controller.service", "innet_cli"))
    ]
    assert found == []


def environment_reads_at_import(path: Path) -> list[int]:
    """Lines where a module reads `os.environ` or `os.getenv` outside any function: at import."""

    def walk(node: ast.AST) -> Iterator[int]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue  # read when called, with what the caller's process has then
            if (
                isinstance(child, ast.Attribute)
                and child.attr in ("environ", "environb", "getenv")
                and isinstance(child.value, ast.Name)
                and child.value.id == "os"
            ):
                yield child.lineno
            yield from walk(child)

    return list(walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_no_module_reads_the_environment_at_import() -> None:
    """Facts are values passed where they are used (the packet format, the site plan), never
    fixed for a whole process by what its environment said when a module was imported."""
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in modules(*PACKAGES, P4SWITCH_SRC)
        for line in environment_reads_at_import(path)
    ]
    assert found == []


def test_the_environment_check_sees_a_read_at_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nLANES = int(os.environ.get('X', '32'))\n"
        "def later():\n    return os.getenv('Y')\n"
    )
    assert environment_reads_at_import(module) == [2]


@pytest.mark.parametrize("project", [PACKAGES, (P4SWITCH_SRC,)], ids=["innet", "p4switch"])
def test_no_class_name_is_defined_twice_in_a_project(project: tuple[str, ...]) -> None:
    where: dict[str, list[str]] = {}
    for path in modules(*project):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(REPO)))
    assert {name: files for name, files in where.items() if len(files) > 1} == {}


@pytest.mark.parametrize(
    ("packages", "base"),
    [
        (("innet", "controller", "workers", "topo", "p4diff"), InnetError),
        ((P4SWITCH,), p4switch.P4SwitchError),
    ],
    ids=["innet", "p4switch"],
)
def test_every_exception_descends_from_its_project_s_root(
    packages: tuple[str, ...], base: type[Exception]
) -> None:
    """Every class deriving from an exception, in a project's packages, descends from its root:
    InnetError in innet's, P4SwitchError in p4switch (the pipeline's control-flow signals aside:
    they never leave it)."""
    signals = {"ParserReject", "ControlExit"}  # p4switch's compiled P4 `reject` and `exit`
    strays = []
    for package in packages:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                    continue
                if not issubclass(cls, base) and name not in signals:
                    strays.append(f"{info.name}.{name}")
    assert strays == []
