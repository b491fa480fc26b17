"""The layout's rules, read from the code: which package may import which, no class name defined
twice, no module that reads the environment at import, functions simple enough (ruff's C901
checks that). How long a module is, is a reviewer's call (a module does one thing and reads in
one sitting), not a count a test holds: a line cap cut modules by size, not by concern."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from innet.exceptions import InnetError

REPO = Path(__file__).resolve().parents[2]
PACKAGES = (
    "innet",
    "innet_cli",
    "controller",
    "workers",
    "topo",
    "p4switch",
    "p4diff",
    "bench",
    "scripts",
)
PROJECT = (*PACKAGES, "tests")


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
        ("p4switch", ("controller", "workers", "topo", "bench", "tests")),
        ("innet", ("controller", "workers", "topo", "p4switch", "bench", "tests")),
        ("p4diff", ("tests", "bench")),
        ("bench", ("tests",)),
        ("scripts", ("tests",)),
    ],
)
def test_dependencies_point_one_way(root: str, forbidden: tuple[str, ...]) -> None:
    assert importers(root, forbidden) == []


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
        for path in modules(*PACKAGES)
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


def test_no_class_name_is_defined_twice() -> None:
    where: dict[str, list[str]] = {}
    for path in modules(*PACKAGES):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(REPO)))
    assert {name: files for name, files in where.items() if len(files) > 1} == {}


def test_every_innet_exception_descends_from_the_root() -> None:
    """Every class named ...Error, ...Exception or deriving from an exception, in the project's
    packages, is an InnetError (the pipeline's control-flow signals aside: they never leave it)."""
    signals = {"ParserReject", "ControlExit"}  # p4switch's compiled P4 `reject` and `exit`
    strays = []
    for package in ("innet", "controller", "workers", "topo", "p4switch", "p4diff"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ != module.__name__ or not issubclass(cls, BaseException):
                    continue
                if not issubclass(cls, InnetError) and name not in signals:
                    strays.append(f"{info.name}.{name}")
    assert strays == []
