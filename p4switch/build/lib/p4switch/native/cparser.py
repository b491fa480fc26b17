"""The parser as one C function: a label per state, `goto` for transitions.

`p4g_parse` returns the offset where parsing stopped (the payload), or -1 after setting
`parser_error` and the payload slot, as `parse` of the python back end does when it catches a
`ParserReject`.
"""

from __future__ import annotations

from collections.abc import Callable

from p4switch import ir
from p4switch.compiler.layout import PAYLOAD
from p4switch.compiler.support import PARSER_STEPS
from p4switch.native.cexprs import literal
from p4switch.native.cstmts import CBlock, CStmtCompiler

Function = Callable[[str, Callable[[], None], set[str]], None]


class ParserGenerator:
    def __init__(self, program: ir.Program, stmts: CStmtCompiler, function: Function) -> None:
        self.p = program
        self.stmts = stmts
        self.src = stmts.src
        self.function = function
        self.perr = stmts.names.sm["parser_error"]
        self.no_match = program.errors.index("NoMatch")

    def generate(self) -> None:
        x = self.stmts.x
        x.in_parser = True
        x.where = f"{self.p.path} (parser)"
        self.src.line(
            f"#define P4S_REJECT(code) do {{ S[{self.perr}] = (code); S[{PAYLOAD}] = off; "
            "return -1; } while (0)"
        )
        targets = {c.next_state for s in self.p.parser.states for c in s.cases}
        header = (
            "static int64_t p4g_parse(p4s_ctx *c, uint64_t *S, const uint8_t *data, uint64_t n)"
        )

        timeout = self.p.errors.index("ParserTimeout")

        def body() -> None:
            self.src.line("uint64_t off = 0;")
            # states run so far (start, when no label counts it), at most PARSER_STEPS
            self.src.line(f"uint32_t steps = {0 if 'start' in targets else 1};")
            self.src.line("(void)data; (void)n; (void)steps;")
            for state in self.p.parser.states:
                if state.name in targets:
                    self.src.line(f"P_{state.name}:;")
                    self.src.line(f"if (++steps > {PARSER_STEPS}) P4S_REJECT({timeout});")
                with self.src.block(""):
                    self.stmts.block(state.body, CBlock("parser"))
                    self._select(state)

        self.function(header, body, set())
        self.src.line("#undef P4S_REJECT")
        x.in_parser = False

    def _select(self, state: ir.ParserState) -> None:
        keys = []
        for k in state.keys:
            tmp = self.src.temp("_k")
            self.src.line(f"uint64_t {tmp} = {self.stmts.x.expr(k)};")
            keys.append((tmp, ir.key_mask(k.type)))
        for case in state.cases:
            conds = []
            for (key, full), ks in zip(keys, case.keysets, strict=True):
                if isinstance(ks, ir.KeyRange):
                    conds.append(f"{key} >= {literal(ks.low)} && {key} <= {literal(ks.high)}")
                    continue
                if isinstance(ks, ir.ValueSetKey):  # cmodule refuses value sets beforehand
                    raise AssertionError(f"value set {ks.value_set} in the native parser")
                if ks is None or ks[1] == 0:
                    continue
                value, mask = ks
                conds.append(
                    f"{key} == {literal(value)}"
                    if mask == full
                    else f"({key} & {literal(mask)}) == {literal(value)}"
                )
            go = self._goto(case.next_state)
            if not conds:
                self.src.line(go)
                return
            self.src.line(f"if ({' && '.join(conds)}) {go}")
        self.src.line(f"P4S_REJECT({self.no_match});")

    def _goto(self, state: str) -> str:
        if state == "accept":
            return "return (int64_t)off;"
        if state == "reject":
            return f"{{ S[{PAYLOAD}] = off; return -1; }}"
        return f"goto P_{state};"
