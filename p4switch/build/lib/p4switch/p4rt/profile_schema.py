"""The action profiles of a P4Info, checked against the loaded program's."""

from __future__ import annotations

from dataclasses import dataclass

from p4.config.v1 import p4info_pb2

from p4switch.runtime import SwitchState


@dataclass(frozen=True)
class ProfileInfo:
    id: int
    name: str
    selector: bool  # an action selector: it holds groups too
    size: int
    max_group_size: int  # 0: no limit
    table_ids: tuple[int, ...]  # the tables it implements


def bind_profiles(
    p4info: p4info_pb2.P4Info, state: SwitchState, problems: list[str]
) -> dict[int, ProfileInfo]:
    out = {}
    for p in p4info.action_profiles:
        name = p.preamble.name
        spec = state.profiles[name].spec if name in state.profiles else None
        if spec is None or (spec.selector, spec.size) != (p.with_selector, p.size):
            kind = "action selector" if p.with_selector else "action profile"
            problems.append(f"{kind} {name} (size {p.size}) is not in the program")
        info = ProfileInfo(
            p.preamble.id, name, p.with_selector, p.size, p.max_group_size, tuple(p.table_ids)
        )
        out[info.id] = info
    return out
