"""Bind `V1Switch(...) main` to its six blocks, and the blocks' parameters to shared variables.

The package's parameters are matched against the block types v1model.p4 declares, which fixes
the headers type H and the metadata type M. Every block's parameters then name the same three
variables (headers, metadata, standard metadata) or the packet.
"""

from __future__ import annotations

from p4switch import ir
from p4switch.exceptions import P4CompileError
from p4switch.frontend import syntax as s
from p4switch.frontend.env import PacketEntity, Scope, TypeEnv

BLOCKS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")


class PackageBinder:
    def __init__(
        self,
        env: TypeEnv,
        top: Scope,
        blocks: dict[str, s.ParserDecl | s.ControlDecl],
        block_types: dict[str, s.BlockTypeDecl],
    ) -> None:
        self.env = env
        self.top = top
        self.blocks = blocks
        self.block_types = block_types

    def bind(
        self, main: s.Instantiation
    ) -> tuple[dict[str, s.ParserDecl | s.ControlDecl], ir.Var, ir.Var, ir.Var]:
        pkg = self.block_types[type_name(main.type)]
        if pkg.name != "V1Switch":
            raise P4CompileError.at(main.loc, f"p4switch runs V1Switch programs, not {pkg.name}")
        if len(pkg.params) != len(BLOCKS):  # a package of the program's own, named V1Switch
            what = f"this V1Switch is a package of {len(pkg.params)} blocks; p4switch runs "
            raise P4CompileError.at(main.loc, what + f"v1model.p4's, of {len(BLOCKS)}")
        if len(main.args) != len(pkg.params):
            raise P4CompileError.at(main.loc, f"V1Switch takes {len(pkg.params)} blocks")
        bound: dict[str, ir.Type] = {}
        blocks: dict[str, s.ParserDecl | s.ControlDecl] = {}
        for role, param, arg in zip(BLOCKS, pkg.params, main.args, strict=True):
            user = self._block_arg(arg)
            assert isinstance(param.type, s.NamedTypeRef)
            expected = self.block_types[param.type.name]
            self._match_block(user, expected, param.type, bound)
            blocks[role] = user
        hdr_t, meta_t = bound.get("H"), bound.get("M")
        if not isinstance(hdr_t, ir.StructT) or hdr_t.is_header:
            raise P4CompileError.at(main.loc, "the headers type of V1Switch must be a struct")
        if not isinstance(meta_t, ir.StructT) or meta_t.is_header:
            raise P4CompileError.at(main.loc, "the metadata type of V1Switch must be a struct")
        for f in hdr_t.fields:
            header = isinstance(f.type, ir.StructT) and (f.type.is_header or f.type.is_union)
            if not (header or isinstance(f.type, ir.StackT)):
                what = f"{hdr_t.name}.{f.name} must be a header, a header union or a header stack"
                raise P4CompileError.at(main.loc, what)
        sm_t = self.env.types["standard_metadata_t"]
        return (
            blocks,
            ir.Var("hdr", hdr_t, True),
            ir.Var("meta", meta_t, True),
            ir.Var("standard_metadata", sm_t, True),
        )

    def _block_arg(self, arg: s.ExprSyntax) -> s.ParserDecl | s.ControlDecl:
        if isinstance(arg, s.CallExpr) and isinstance(arg.callee, s.Name):
            if arg.args:
                raise P4CompileError.at(arg.loc, "constructor parameters are not supported")
            found = self.blocks.get(arg.callee.name)
            if found is not None:
                return found
        raise P4CompileError.at(arg.loc, "expected a parser or control instantiation, e.g. P()")

    def _match_block(
        self,
        user: s.ParserDecl | s.ControlDecl,
        expected: s.BlockTypeDecl,
        ref: s.NamedTypeRef,
        bound: dict[str, ir.Type],
    ) -> None:
        kind = "parser" if isinstance(user, s.ParserDecl) else "control"
        if kind != expected.kind:
            raise P4CompileError.at(user.loc, f"{user.name} must be a {expected.kind}")
        if len(user.params) != len(expected.params):
            raise P4CompileError.at(
                user.loc,
                f"{user.name} must take {len(expected.params)} parameters like {expected.name}",
            )
        tvars = {
            tp: ir.TypeVar(a.name) if isinstance(a, s.NamedTypeRef) else ir.TypeVar(tp)
            for tp, a in zip(expected.type_params, ref.args, strict=True)
        }
        for mine, theirs in zip(user.params, expected.params, strict=True):
            want = self.env.resolve(theirs.type, tvars)
            got = self.env.resolve(mine.type)
            # an `in` parameter where the architecture says `inout` is the stricter promise
            # (the block only reads it), as older v1model programs declare VerifyChecksum
            narrower = (mine.direction, theirs.direction) == ("in", "inout")
            if mine.direction != theirs.direction and not narrower:
                raise P4CompileError.at(
                    mine.loc, f"parameter {mine.name} must be {theirs.direction or 'directionless'}"
                )
            if isinstance(want, ir.TypeVar):
                if bound.setdefault(want.name, got) != got:
                    raise P4CompileError.at(
                        mine.loc, f"{mine.name} is {got}, but {bound[want.name]} elsewhere"
                    )
            elif want != got:
                raise P4CompileError.at(
                    mine.loc, f"parameter {mine.name} must be {want}, not {got}"
                )

    def block_scope(self, decl: s.ParserDecl | s.ControlDecl, shared: list[ir.Var]) -> Scope:
        scope = self.top.child()
        for p in decl.params:
            t = self.env.resolve(p.type)
            entity: ir.Var | PacketEntity
            if isinstance(t, ir.ExternT) and t.name in ("packet_in", "packet_out"):
                entity = PacketEntity(t.name)
            else:
                entity = next(v for v in shared if v.type == t)
                if p.direction == "in":
                    scope.readonly.add(entity)
            scope.declare(p.name, entity, p.loc)
        return scope


def type_name(ref: s.TypeRef) -> str:
    return ref.name if isinstance(ref, s.NamedTypeRef) else ""
