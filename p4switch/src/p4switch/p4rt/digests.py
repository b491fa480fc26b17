"""Digests over P4Runtime: DigestEntry writes and reads configure them, `DigestStreamer` sends
their lists to the primary client as DigestList messages, and DigestListAck messages release
the lists' values (runtime.digests says how lists are made; digestinfo how values are encoded).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.exceptions import P4RTError
from p4switch.p4rt.arbitration import Arbiter, Session
from p4switch.p4rt.codec import InstalledPipeline, Undo, invalid, untranslated
from p4switch.p4rt.digestinfo import DigestInfo
from p4switch.runtime import DigestConfig, DigestEngine, DigestList

log = logging.getLogger(__name__)

INSERT, MODIFY, DELETE = (
    p4runtime_pb2.Update.INSERT,
    p4runtime_pb2.Update.MODIFY,
    p4runtime_pb2.Update.DELETE,
)


# --- DigestEntry ---------------------------------------------------------------------------


def _info(pipeline: InstalledPipeline, digest_id: int) -> DigestInfo:
    info = pipeline.schema.digests.get(digest_id)
    if info is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"no digest with id {digest_id:#x}")
    return info


def digest_entry(pipeline: InstalledPipeline, utype: int, msg: p4runtime_pb2.DigestEntry) -> Undo:
    """INSERT configures a digest, MODIFY changes its configuration, DELETE stops it."""
    if msg.digest_id == 0:
        raise invalid("digest id 0 is not valid in a write")
    info = _info(pipeline, msg.digest_id)
    engine = pipeline.state.digests
    before = engine.config(info.name)
    if utype == DELETE:
        if before is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"digest {info.name} is not configured")
        config = None
    else:
        if not msg.HasField("config"):
            raise invalid(f"digest {info.name}: the entry has no config")
        if utype == INSERT and before is not None:
            raise P4RTError(code_pb2.ALREADY_EXISTS, f"digest {info.name} is configured already")
        if utype == MODIFY and before is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"digest {info.name} is not configured")
        if info.translated:
            raise untranslated(f"digest {info.name}: a value", info.translated)
        c = msg.config
        config = DigestConfig(c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns)
        if min(c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns) < 0:
            raise invalid(f"digest {info.name}: timeouts and list size cannot be negative")
    engine.configure(info.name, config)
    return lambda: engine.configure(info.name, before)


def read_digests(
    pipeline: InstalledPipeline, q: p4runtime_pb2.DigestEntry
) -> list[p4runtime_pb2.Entity]:
    """The configured digests (digest_id 0: all of them)."""
    infos = [_info(pipeline, q.digest_id)] if q.digest_id else pipeline.schema.digests.values()
    out = []
    for info in infos:
        config = pipeline.state.digests.config(info.name)
        if config is None:
            continue
        entity = p4runtime_pb2.Entity()
        entry = entity.digest_entry
        entry.digest_id = info.id
        entry.config.max_timeout_ns = config.max_timeout_ns
        entry.config.max_list_size = config.max_list_size
        entry.config.ack_timeout_ns = config.ack_timeout_ns
        out.append(entity)
    return out


def digest_ack(pipeline: InstalledPipeline, ack: p4runtime_pb2.DigestListAck) -> None:
    """Release an acknowledged list; P4RTError if it names no digest or no list sent."""
    info = _info(pipeline, ack.digest_id)
    try:
        pipeline.state.digests.ack(info.name, ack.list_id)
    except Exception as err:
        raise invalid(str(err)) from None


# --- the stream ----------------------------------------------------------------------------


class DigestStreamer:
    """A thread sending one pipeline's digest lists, as they become ready, through `send`
    (False: the list could not be sent, and is dropped and counted in `lists_dropped`)."""

    def __init__(
        self,
        pipeline: InstalledPipeline,
        send: Callable[[p4runtime_pb2.StreamMessageResponse], bool],
    ) -> None:
        self._engine: DigestEngine = pipeline.state.digests
        self._by_name = {i.name: i for i in pipeline.schema.digests.values()}
        self._send = send
        self._stop = threading.Event()
        self.lists_dropped = 0
        self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)

    def start(self) -> None:
        if self._by_name:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._engine.wake()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for ready in self._engine.take_ready():
                    self._deliver(ready)
            except Exception:  # a bug must not end digests for good: log it and go on
                log.exception("sending digest lists failed")
            self._engine.wait(0.5)

    def _deliver(self, ready: DigestList) -> None:
        info = self._by_name.get(ready.digest)
        if info is None:  # the P4Info left this digest out: nobody can ack it
            self._engine.ack(ready.digest, ready.list_id)
            return
        msg = p4runtime_pb2.StreamMessageResponse(digest=info.message(ready, time.time_ns()))
        if not self._send(msg):
            self.lists_dropped += 1
            self._engine.ack(ready.digest, ready.list_id)  # no one will: let its values go


class DigestChannel:
    """The P4Runtime server's digests: a `DigestStreamer` for the running pipeline, sending to
    the primary client, and the acknowledgements clients send on their streams."""

    def __init__(self, arbiter: Arbiter) -> None:
        self._arbiter = arbiter
        self._streamer: DigestStreamer | None = None
        self._lock = threading.Lock()

    def run(self, pipeline: InstalledPipeline | None) -> None:
        """Stream `pipeline`'s digests from now on (None: nobody's)."""
        with self._lock:
            if self._streamer is not None:
                self._streamer.stop()
            self._streamer = None
            if pipeline is not None:
                self._streamer = DigestStreamer(pipeline, self._to_primary)
                self._streamer.start()

    def stop(self) -> None:
        self.run(None)

    def _to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        primary = self._arbiter.primary()
        return primary is not None and primary.send_packet_in(msg)

    def ack(
        self,
        session: Session,
        pipeline: InstalledPipeline | None,
        ack: p4runtime_pb2.DigestListAck,
    ) -> None:
        """A client's DigestListAck; a StreamError back if it is not the primary's or names no
        list that was sent."""
        try:
            if not session.arbitrated or self._arbiter.primary() is not session:
                raise P4RTError(code_pb2.PERMISSION_DENIED, "only the primary acknowledges digests")
            if pipeline is None:
                raise P4RTError(code_pb2.FAILED_PRECONDITION, "no pipeline is running")
            digest_ack(pipeline, ack)
        except P4RTError as err:
            error = p4runtime_pb2.StreamError(canonical_code=err.code, message=err.message)
            error.digest_list_ack.digest_list_ack.CopyFrom(ack)
            session.send(p4runtime_pb2.StreamMessageResponse(error=error))
