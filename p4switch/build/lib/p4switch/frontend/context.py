"""Where a statement sits while the front end checks it: the block kind, what it may touch,
and the calls the program makes (shared by every block)."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch import ir


@dataclass
class LoopFlags:
    """A `for` loop's `break` and `continue`, as two local booleans (frontend/loops.py)."""

    broke: ir.Var
    skipped: ir.Var
    used: bool = False


class CalledActions(set[str]):
    """The actions and functions a program calls, one set shared by every block; of the
    actions, `in_actions` holds those an action body calls and `elsewhere` those a control
    calls. p4c inlines an action that only other actions call, and leaves it out of P4Info."""

    def __init__(self) -> None:
        super().__init__()
        self.in_actions: set[str] = set()
        self.elsewhere: set[str] = set()


@dataclass
class BlockContext:
    """Where a statement sits: which kind of block, and what it may touch."""

    kind: str  # "parser", "control", "deparser", "action" or "function"
    name: str
    called_actions: CalledActions = field(default_factory=CalledActions)
    result: ir.Var | None = None  # in a function with a value: where `return e` puts it
    nested: bool = False  # a control applied by another (inlined: no `return` of its own)
    loop: LoopFlags | None = None  # inside a `for`: its break and continue
