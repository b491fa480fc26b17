"""The C side's copy of the tables and the replication engine, kept in step with `SwitchState`.

Registers and counters need no copy: their cells are C memory (`ctypes` arrays the C code reads
and writes in place). Tables and the packet replication engine are copied into C whenever they
change (each `TableState` and the `PacketReplication` count their changes in `version`), and the
direct counters, which only C increments, are read back into the `TableEntry` objects; so are
the hits of tables with support_timeout (C flags the entries hit, the Python side stamps them
with the state's clock: at once for frames run through `NativePipeline.process`, when the lock
is next taken for frames a native I/O loop ran).

`StateLock` replaces `SwitchState.lock`: holding it also holds the mutex the C packet path
takes per frame, so the control plane and the data plane exclude each other as before. Taking it
(outermost) reads the direct counters back and brings stale copies up to date; releasing it
(outermost) copies what changed while it was held.
"""

from __future__ import annotations

import ctypes
import operator
import threading
import weakref
from types import TracebackType

from p4switch import runtime
from p4switch.exceptions import NativeBuildError
from p4switch.native.cmodule import NativeCode

_VERSION = operator.attrgetter("version")
U64 = ctypes.c_uint64
U32 = ctypes.c_uint32


def _u64(values: list[int]) -> ctypes.Array[ctypes.c_uint64]:
    return (U64 * max(1, len(values)))(*values)


def _u8(n: int) -> ctypes.Array[ctypes.c_uint8]:
    return (ctypes.c_uint8 * max(1, n))()


def _u32(values: list[int]) -> ctypes.Array[ctypes.c_uint32]:
    return (U32 * max(1, len(values)))(*values)


def _rank(e: runtime.TableEntry) -> tuple[int, int]:
    """The lookup order of `runtime.TableState` for tables that are not exact-only."""
    return (-e.priority, -sum(bin(m.mask).count("1") for m in e.match))


class StateSync:
    """One C context's copies of one state's tables and replication engine."""

    def __init__(self, lib: ctypes.CDLL, ctx: int, code: NativeCode, state: runtime.SwitchState):
        self.lib = lib
        self.ctx = ctx
        self.tables = [state.table(name) for name in code.tables]
        self.pre = state.pre
        self.actions = {name: i for i, name in enumerate(code.actions)}
        self.units = code.direct_units
        self.direct = [u is not None for u in self.units]
        self.ageing = [t.spec.support_timeout for t in self.tables]
        self.nargs = [
            max((len(state.actions[a].params) for a in t.spec.actions), default=0)
            for t in self.tables
        ]
        self.pushed: list[list[runtime.TableEntry]] = [[] for _ in self.tables]
        self._versions = [-1] * len(self.tables)
        self._pre_version = -1
        self._pre: tuple[object, ...] = ()
        self.stamp = -1  # sum of the versions copied: any change moves it

    def current(self) -> int:
        version: int = sum(map(_VERSION, self.tables), self.pre.version)
        return version

    # --- C to Python ------------------------------------------------------------------------------

    def pull_counts(self) -> None:
        for i, t in enumerate(self.tables):
            if not self.direct[i]:
                continue
            entries = self.pushed[i]
            packets, nbytes = _u64([0] * (len(entries) + 1)), _u64([0] * (len(entries) + 1))
            self.lib.p4s_table_counts(self.ctx, i, packets, nbytes)
            for e, p, b in zip(entries, packets, nbytes, strict=False):
                e.packets, e.bytes = p, b
            t.default_packets, t.default_bytes = packets[len(entries)], nbytes[len(entries)]

    def pull_hits(self) -> None:
        """Stamp the entries C flagged as hit (tables with support_timeout) with the time now."""
        for i, t in enumerate(self.tables):
            if not self.ageing[i]:
                continue
            entries = self.pushed[i]
            hits = _u8(len(entries))
            self.lib.p4s_table_hits(self.ctx, i, hits)
            flags = bytes(hits)[: len(entries)]
            at = flags.find(1)
            if at < 0:
                continue
            now = t.clock()
            while at >= 0:
                entries[at].last_hit = now
                at = flags.find(1, at + 1)

    def count_touched(self, touched: ctypes.Array[ctypes.c_int64], n: int) -> None:
        """Apply the last frame's direct counter updates and ageing hits (`p4s_touched`: table,
        entry or -1 for the default, packet length) to the Python entries, as C applied them to
        its own."""
        if n * 3 > len(touched):
            self.pull_counts()
            self.pull_hits()
            return
        for k in range(n):
            i, e, length = touched[3 * k], touched[3 * k + 1], touched[3 * k + 2]
            if self.ageing[i] and e >= 0:
                self.pushed[i][e].last_hit = self.tables[i].clock()
            if not self.direct[i]:
                continue
            unit = self.units[i]
            packets, nbytes = int(unit != "bytes"), length if unit != "packets" else 0
            if e < 0:
                self.tables[i].default_packets += packets
                self.tables[i].default_bytes += nbytes
            else:
                entry = self.pushed[i][e]
                entry.packets += packets
                entry.bytes += nbytes

    # --- Python to C ------------------------------------------------------------------------------

    def push(self) -> None:
        """Copy every table and the replication engine that changed, and all direct counts."""
        for i, t in enumerate(self.tables):
            if t.version != self._versions[i]:
                self._push_table(i)
            elif self.direct[i]:
                self._push_counts(i)
            self._push_default(i)
        pre = (tuple(self.pre.groups.items()), tuple(self.pre.sessions.items()))
        if self.pre.version != self._pre_version or pre != self._pre:
            self._push_pre()
            self._pre = pre  # compared too: the dictionaries may be changed in place
        self.stamp = self.current()

    def _push_table(self, i: int) -> None:
        t, nargs = self.tables[i], self.nargs[i]
        entries = list(t.entries())
        if not all(k.match_kind == "exact" for k in t.spec.keys):
            entries.sort(key=_rank)
        keys, masks, actions, args = [], [], [], []
        for e in entries:
            assert isinstance(e.action, runtime.ActionCall)  # native refuses action profiles
            keys += [m.value for m in e.match]
            masks += [m.mask for m in e.match]
            actions.append(self.actions[e.action.name])
            args += [*e.action.args, *([0] * (nargs - len(e.action.args)))]
        packets = [e.packets for e in entries]
        nbytes = [e.bytes for e in entries]
        done = self.lib.p4s_table_set(
            self.ctx,
            i,
            len(entries),
            _u64(keys),
            _u64(masks),
            _u32(actions),
            _u64(args),
            _u64(packets),
            _u64(nbytes),
        )
        if done < 0:
            raise NativeBuildError(f"no memory for the {len(entries)} entries of {t.spec.name}")
        self.pushed[i] = entries
        self._versions[i] = t.version

    def _push_counts(self, i: int) -> None:
        entries = self.pushed[i]
        t = self.tables[i]
        packets = _u64([*(e.packets for e in entries), t.default_packets])
        nbytes = _u64([*(e.bytes for e in entries), t.default_bytes])
        self.lib.p4s_table_set_counts(self.ctx, i, packets, nbytes)

    def _push_default(self, i: int) -> None:
        t = self.tables[i]
        args = [*t.default.args, *([0] * (self.nargs[i] - len(t.default.args)))]
        self.lib.p4s_table_default(
            self.ctx,
            i,
            self.actions[t.default.name],
            _u64(args),
            t.default_packets,
            t.default_bytes,
        )

    def _push_pre(self) -> None:
        groups = {g: [(r.egress_port, r.instance) for r in rs] for g, rs in self.pre.groups.items()}
        self._push_replicas(0, groups, {})
        sessions = {
            s.id: [(r.egress_port, r.instance) for r in s.replicas]
            for s in self.pre.sessions.values()
        }
        cuts = {s.id: s.packet_length_bytes for s in self.pre.sessions.values()}
        self._push_replicas(1, sessions, cuts)
        self._pre_version = self.pre.version

    def _push_replicas(
        self, which: int, replicas: dict[int, list[tuple[int, int]]], cuts: dict[int, int]
    ) -> None:
        ids = sorted(replicas)
        first: list[int] = []
        count: list[int] = []
        ports: list[int] = []
        rids: list[int] = []
        for k in ids:
            first.append(len(ports))
            count.append(len(replicas[k]))
            ports += [p for p, _ in replicas[k]]
            rids += [r for _, r in replicas[k]]
        done = self.lib.p4s_pre_set(
            self.ctx,
            which,
            len(ids),
            _u64(ids),
            _u32(first),
            _u32(count),
            _u64([cuts.get(k, 0) for k in ids]),
            len(ports),
            _u64(ports),
            _u64(rids),
        )
        if done < 0:
            raise NativeBuildError("no memory for the multicast groups and clone sessions")


class StateLock:
    """A re-entrant lock that also holds the C mutex of every pipeline running the state."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._members: weakref.WeakSet[NativeMember] = weakref.WeakSet()

    def add(self, member: NativeMember) -> None:
        with self._lock:
            if self._depth:  # held by this thread: the new member's mutex is held too
                member.lib.p4s_lock(member.ctx)
            self._members.add(member)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1:
            for m in list(self._members):
                m.lib.p4s_lock(m.ctx)
                m.sync.pull_counts()
                m.sync.pull_hits()
                if m.sync.current() != m.sync.stamp:
                    m.sync.push()
        return True

    def release(self) -> None:
        if self._depth == 1:
            for m in list(self._members):
                m.sync.push()
                m.lib.p4s_unlock(m.ctx)
        self._depth -= 1
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class NativeMember:
    """What `StateLock` needs of a pipeline: its library, context and copies."""

    def __init__(self, lib: ctypes.CDLL, ctx: int, sync: StateSync) -> None:
        self.lib = lib
        self.ctx = ctx
        self.sync = sync
