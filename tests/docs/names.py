"""The names examples and prose use: calls in illustrations bound to the real signatures, and
modules, classes, functions and files named in the docs."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
import textwrap
import typing

from tests.docs.blocks import PACKAGES, REPO, package_modules
from tests.docs.parsers import placeholder

# --- illustrations: calls bound to the real signatures -------------------------------------------


@functools.cache
def _index() -> dict[str, tuple[object, ...]]:
    """Every class and function defined at the top of a module of innet's packages, by name."""
    found: dict[str, list[object]] = {}
    for name in package_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (inspect.isclass(value) or inspect.isfunction(value)) and getattr(
                value, "__module__", None
            ) == name:
                found.setdefault(attr, []).append(value)
    return {k: tuple(v) for k, v in found.items()}


def _ours(obj: object) -> bool:
    return str(getattr(obj, "__module__", "")).split(".")[0] in PACKAGES


def _returns(func: object) -> object | None:
    """What calling `func` gives, as a class (None when unknown): its return annotation, or
    the class itself; the item type of an iterator (a generator-based context manager)."""
    if inspect.isclass(func):
        return func
    try:
        hint = typing.get_type_hints(func).get("return")
    except Exception:  # an annotation that does not resolve at run time: unknown
        return None
    if typing.get_origin(hint) is not None and typing.get_args(hint):
        origin = str(typing.get_origin(hint))
        if "Iterator" in origin or "Generator" in origin:
            hint = typing.get_args(hint)[0]
    return hint if inspect.isclass(hint) else None


def _attribute(cls: type, name: str) -> tuple[bool, object | None]:
    """(whether `cls` has `name`, the class of its value when known)."""
    try:
        static = inspect.getattr_static(cls, name)
    except AttributeError:
        fields = getattr(cls, "__dataclass_fields__", {})
        if name not in fields and name not in getattr(cls, "__annotations__", {}):
            return False, None
        static = None
    if isinstance(static, property):
        return True, _returns(static.fget)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:
        hints = {}
    hint = hints.get(name)
    return True, hint if inspect.isclass(hint) else None


class CallChecker(ast.NodeVisitor):
    """Binds every call of an innet class, function or method in an illustration to its
    signature (placeholders for the arguments); names of other libraries are left alone."""

    def __init__(self, namespace: dict[str, object], where: str) -> None:
        self.namespace = dict(namespace)
        self.types: dict[str, object] = {}
        self.where = where
        self.problems: list[str] = []

    def resolve(self, node: ast.expr) -> tuple[object | None, str]:
        """(what the expression is: an innet class or function, or an instance's class
        wrapped in a tuple; a readable name)."""
        if isinstance(node, ast.Name):
            if node.id in self.types:
                return (self.types[node.id],), node.id
            value = self.namespace.get(node.id)
            if value is None:
                candidates = _index().get(node.id, ())
                value = candidates[0] if len(candidates) == 1 else None
            return (value if _ours(value) else None), node.id
        if isinstance(node, ast.Attribute):
            base, name = self.resolve(node.value)
            label = f"{name}.{node.attr}"
            if isinstance(base, tuple) and inspect.isclass(base[0]):
                cls = base[0]
                present, kind = _attribute(cls, node.attr)
                if not present:
                    self.problems.append(
                        f"{self.where}: {cls.__name__} has no attribute {node.attr!r}"
                    )
                    return None, label
                member = inspect.getattr_static(cls, node.attr, None)
                if inspect.isfunction(member):
                    return ("method", cls, member), label
                if isinstance(member, classmethod | staticmethod):
                    return getattr(cls, node.attr), label
                return ((kind,) if kind is not None else None), label
            if inspect.isclass(base) or inspect.ismodule(base):
                if not hasattr(base, node.attr):
                    self.problems.append(f"{self.where}: {name} has no attribute {node.attr!r}")
                    return None, label
                value = getattr(base, node.attr)
                return (value if _ours(value) or inspect.ismodule(value) else None), label
            return None, label
        if isinstance(node, ast.Call):
            return self.call(node)
        return None, "expression"

    def call(self, node: ast.Call) -> tuple[object | None, str]:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            self.resolve(arg)
        target, name = self.resolve(node.func)
        if target is None or (isinstance(target, tuple) and target[0] != "method"):
            return None, name
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return None, name
        args = [object()] * len(node.args)
        kwargs = {k.arg: object() for k in node.keywords if k.arg is not None}
        func: object = target
        if isinstance(target, tuple):  # a method called on an instance: self is bound
            func, args = target[2], [object(), *args]
        try:
            signature = inspect.signature(func)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None, name
        try:
            signature.bind(*args, **kwargs)
        except TypeError as err:
            self.problems.append(
                f"{self.where}: {name}(...) does not match {name}{signature}: {err}"
            )
        returned = _returns(func)
        return ((returned,) if returned is not None else None), name

    def visit_Assign(self, node: ast.Assign) -> None:
        value, _ = self.resolve(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if isinstance(value, tuple) and value[0] != "method":
                    self.types[target.id] = value[0]
                else:
                    self.types.pop(target.id, None)
                    self.namespace.pop(target.id, None)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            value, _ = self.resolve(item.context_expr)
            var = item.optional_vars
            if isinstance(var, ast.Name) and isinstance(value, tuple) and value[0] != "method":
                entered = (
                    _attribute(value[0], "__enter__")[1] if inspect.isclass(value[0]) else None
                )
                self.types[var.id] = entered or value[0]
        for statement in node.body:
            self.visit(statement)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.resolve(node.value)

    def visit_For(self, node: ast.For) -> None:
        self.resolve(node.iter)
        for statement in node.body:
            self.visit(statement)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        try:
            module = importlib.import_module(node.module or "")
        except ImportError as err:
            self.problems.append(f"{self.where}: {err}")
            return
        for alias in node.names:
            if not hasattr(module, alias.name):
                self.problems.append(f"{self.where}: {node.module} has no {alias.name!r}")
            else:
                self.namespace[alias.asname or alias.name] = getattr(module, alias.name)


def call_problems(code: str, namespace: dict[str, object], where: str) -> list[str]:
    """What does not match in an illustration that is not run (see CallChecker)."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError as err:
        return [f"{where}: not Python: {err}"]
    checker = CallChecker(namespace, where)
    checker.visit(tree)
    return checker.problems


# --- names of modules and files in prose ----------------------------------------------------

DOTTED = re.compile(r"(?<![\w./-])((?:innet|controller|topo|workers|p4switch)(?:\.[A-Za-z_]\w*)+)")
PATH = re.compile(
    r"(?<![\w./<$-])((?:innet|controller|topo|workers|p4switch|p4src|docs|tests|scripts|bench|"
    r"scenarios)/[\w./*-]*)"
)
PY_FILE = re.compile(r"(?<![\w/.-])([a-z_]\w*\.py)\b")
FILE_EXTENSIONS = frozenset(
    {"p4", "py", "md", "yaml", "json", "jsonl", "txt", "csv", "png", "log", "sock", "lark"}
)


def resolves(dotted: str) -> bool:
    """Whether `a.b.c` names a module of innet's packages or something in one."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@functools.cache
def _py_files() -> frozenset[str]:
    return frozenset(
        p.name for p in REPO.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts
    )


def reference_problems(text: str, where: str) -> list[str]:
    """Modules, attributes and files named in prose that do not exist."""
    problems = []
    for dotted in sorted(set(DOTTED.findall(text))):
        if dotted.rsplit(".", 1)[-1] in FILE_EXTENSIONS or resolves(dotted):
            continue
        problems.append(f"{where}: {dotted} names no module, class or function")
    for path in sorted(set(PATH.findall(text))):
        path = path.rstrip(".")
        if placeholder(path) or "*" in path or (REPO / path).exists():
            continue
        problems.append(f"{where}: {path} does not exist")
    for name in sorted(set(PY_FILE.findall(text)) - _py_files()):
        problems.append(f"{where}: no file is named {name}")
    return problems
