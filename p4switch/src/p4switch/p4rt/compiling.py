"""Compile a program sent over P4Runtime in a child process bounded in time and memory.

A pushed program is untrusted: 300 KB of nested parentheses keeps the compiler busy for
seconds, and it holds the interpreter while it does. `compile_pushed` therefore runs the whole
compile (preprocessing with confined includes, parsing, checking, code generation) in a fresh
Python process of its own session, with `RLIMIT_AS` and `RLIMIT_CPU` set, and waits for it at
most `CompileLimits.wall_s` seconds; past that the child's process group (the child and its
`cpp`) is killed and reaped. The compiled program comes back pickled on the child's stdout
(code objects as `marshal` data, `struct.Struct`s by format): the parent does no compiling.

`SourceLoader` is the switch process's `Loader`: it compiles each pushed program that way and
gives the server a fresh state and a pipeline to switch to. A push of the very program the switch
was started with (`Started`: the same bytes, and the same text once preprocessed as a pushed
program is) is not compiled again: the started program is used with a fresh state. A testbed
pushes each switch the program it started it with, one switch after the other, and a compile
costs a second or more of CPU.

Every refusal is a `P4RTError`: INVALID_ARGUMENT for a program the compiler refuses (its
`file:line:col` message, the program itself named `device_config`), RESOURCE_EXHAUSTED for one
over a limit, INTERNAL naming the internal error for a p4switch bug the compiler met (a
`CompilerBug`, or any other exception: the child answers it rather than dying), and INTERNAL if
the child fails otherwise (its output is logged, not returned).

As a command (the child's side): `python -m p4switch.p4rt.compiling --cpu S --memory BYTES
PATH [-I DIR]... [-D NAME=VALUE]...` writes the pickled outcome to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import copyreg
import io
import logging
import marshal
import os
import pickle
import resource
import signal
import struct
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from google.rpc import code_pb2

from p4switch.backends import build_pipeline, log_choice
from p4switch.exceptions import CompilerBug, P4CompileError, P4RTError, one_line

if TYPE_CHECKING:
    from p4.config.v1 import p4info_pb2

    from p4switch.dataplane import PacketProcessor
    from p4switch.p4rt.program import LoadedProgram
    from p4switch.program import CompiledProgram

log = logging.getLogger(__name__)

PUSHED_NAME = "device_config"  # how compile errors name a program sent over P4Runtime
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent.parent  # the folder p4switch/ is in


@dataclass(frozen=True)
class CompileLimits:
    """Bounds on compiling one pushed program (innet.p4 takes 1-2 s and under 150 MiB here);
    the command line checks the values it is given (`--compile-timeout`, `--compile-memory`)."""

    wall_s: float = 20.0  # seconds until the child is killed
    cpu_s: int = 20  # CPU seconds (RLIMIT_CPU): the backstop should the parent die first
    memory_bytes: int = 1 << 30  # address space (RLIMIT_AS)


@dataclass(frozen=True)
class Started:
    """The program a switch was started with: its source, its text preprocessed as a pushed
    program's is (`pushed_text`), and the program compiled from it."""

    source: bytes
    text: str
    program: CompiledProgram

    @classmethod
    def of(
        cls,
        source: bytes,
        program: CompiledProgram,
        include_dirs: Sequence[Path],
        defines: Mapping[str, str],
    ) -> Started | None:
        """None when the source does not preprocess as a pushed program (its includes are not
        all in the allowed directories): a push of it is then compiled, and refused, as any."""
        text = pushed_text(source, include_dirs, defines)
        return None if text is None else cls(source, text, program)


def pushed_text(
    source: bytes, include_dirs: Sequence[Path], defines: Mapping[str, str]
) -> str | None:
    """`source` preprocessed as `compile_pushed` preprocesses it (includes confined to the
    allowed directories, these -D defines); None where that fails."""
    from p4switch.frontend.preprocess import preprocess

    with pushed_file(source) as path:
        try:
            return preprocess(path, include_dirs, defines, confined=True).text
        except (P4CompileError, OSError):
            return None


@contextlib.contextmanager
def pushed_file(source: bytes) -> Iterator[Path]:
    """`source` as the file a pushed program is compiled from (`PUSHED_NAME`.p4, alone in a
    temporary folder), deleted on the way out."""
    with tempfile.TemporaryDirectory(prefix="p4switch-") as tmp:
        path = Path(tmp) / f"{PUSHED_NAME}.p4"
        path.write_bytes(source)
        yield path


@dataclass(frozen=True)
class SourceLoader:
    """A `Loader` for a switch process: the device config is the P4 source, compiled by
    `compile_pushed`; `run` makes the data plane run a pipeline once it is committed."""

    run: Callable[[PacketProcessor], None]
    include_dirs: tuple[Path, ...] = ()
    defines: Mapping[str, str] = field(default_factory=dict)
    limits: CompileLimits = CompileLimits()
    fallback: CompiledProgram | None = None  # the program used when no source is sent
    cpu_port: int | None = None
    parser_reject: str = "ingress"
    backend: str | None = None  # p4switch.backends: None = native where it can run
    started: Started | None = None  # the program the switch was started with, if any

    def __call__(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> LoadedProgram:
        from p4switch.p4rt.program import LoadedProgram

        if device_config:
            compiled = self._started_again(device_config) or compile_pushed(
                device_config, self.include_dirs, self.defines, self.limits
            )
        elif self.fallback is not None:
            compiled = self.fallback  # a fresh copy of the program the switch started with
        else:
            raise ValueError("p4switch expects the P4 program's source as the device config")
        fresh = compiled.new_state()
        built = build_pipeline(
            compiled, fresh, self.backend, cpu_port=self.cpu_port, parser_reject=self.parser_reject
        )
        log_choice("pushed program", built.choice)
        pipeline = built.pipeline
        return LoadedProgram(p4info, device_config, fresh, lambda: self.run(pipeline))

    def _started_again(self, source: bytes) -> CompiledProgram | None:
        """The started program, when `source` is it: the same bytes, and the same preprocessed
        text now (an include may have changed since)."""
        started = self.started
        if started is None or source != started.source:
            return None
        if pushed_text(source, self.include_dirs, self.defines) != started.text:
            return None
        log.info("pushed program: the one the switch started with, not compiled again")
        return started.program


def compile_pushed(
    source: bytes,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    limits: CompileLimits = CompileLimits(),
) -> CompiledProgram:
    """Compile `source` (a SetForwardingPipelineConfig's device config) in a bounded child."""
    with pushed_file(source) as path:
        argv = [sys.executable, "-m", __name__, "--cpu", str(limits.cpu_s)]
        argv += ["--memory", str(limits.memory_bytes), str(path)]
        for directory in include_dirs:
            argv += ["-I", str(directory)]
        for name, value in (defines or {}).items():
            argv += ["-D", f"{name}={value}"]
        out, err, status = _run_bounded(argv, path.parent, limits)
    return _outcome(out, err, status, limits)


def _run_bounded(argv: list[str], cwd: Path, limits: CompileLimits) -> tuple[bytes, bytes, int]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p
    )
    child = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,  # its own process group: the child and its cpp die together
    )
    try:
        out, err = child.communicate(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        _kill_group(child)
        child.communicate()  # reap it and close its pipes
        raise P4RTError(
            code_pb2.RESOURCE_EXHAUSTED,
            f"compiling the program took longer than {limits.wall_s:g} s, the limit for "
            "programs sent over P4Runtime; the running pipeline is unchanged",
        ) from None
    except BaseException:
        _kill_group(child)
        child.communicate()
        raise
    return out, err, child.returncode


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(child.pid, signal.SIGKILL)


def _outcome(out: bytes, err: bytes, status: int, limits: CompileLimits) -> CompiledProgram:
    if status == -signal.SIGXCPU:
        _exhausted(f"compiling the program used more than {limits.cpu_s} s of CPU")
    if status == -signal.SIGKILL:  # not by us (that is the wall-clock case): the kernel's OOM
        _exhausted("the compiler process was killed, out of memory")
    if status == 0 and out:
        try:
            kind, payload = pickle.loads(out)
        except Exception as exc:
            log.error("the compiler process answered garbage: %r", exc)
        else:
            from p4switch.program import CompiledProgram

            if kind == "ok" and isinstance(payload, CompiledProgram):
                return payload
            if kind == "refused":
                raise P4RTError(code_pb2.INVALID_ARGUMENT, payload)
            if kind == "memory":
                _exhausted(
                    f"compiling the program needed more than {limits.memory_bytes >> 20} MiB"
                )
            if kind == "depth":
                _exhausted("the program is nested too deeply for the compiler")
            if kind == "bug":
                log.error("compiling a pushed program: %s", payload)
                raise P4RTError(code_pb2.INTERNAL, f"{payload}; the running pipeline is unchanged")
    log.error(
        "the compiler process failed (exit status %d): %s",
        status,
        err.decode(errors="replace")[-2000:],
    )
    raise P4RTError(
        code_pb2.INTERNAL, f"the compiler process failed (exit status {status}); see the log"
    )


def _exhausted(what: str) -> NoReturn:
    raise P4RTError(
        code_pb2.RESOURCE_EXHAUSTED,
        f"{what}, the limit for programs sent over P4Runtime; the running pipeline is unchanged",
    )


# --- the child's side --------------------------------------------------------------------------


def _dumps(result: tuple[str, Any]) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    table = copyreg.dispatch_table.copy()
    table[types.CodeType] = lambda c: (marshal.loads, (marshal.dumps(c),))
    table[struct.Struct] = lambda s: (struct.Struct, (s.format,))
    pickler.dispatch_table = table
    pickler.dump(result)
    return buf.getvalue()


def _too_deep(exc: BaseException | None) -> bool:
    """Whether a RecursionError lies under `exc` (lark wraps one in a VisitError)."""
    seen = 0
    while exc is not None and seen < 100:
        if isinstance(exc, RecursionError):
            return True
        exc = exc.__cause__ or exc.__context__ or getattr(exc, "orig_exc", None)
        seen += 1
    return False


def _compile_child(path: Path, include: Sequence[Path], defines: dict[str, str]) -> tuple[str, Any]:
    from p4switch.program import compile_file

    try:
        return "ok", compile_file(path, include, defines, confined=True)
    except P4CompileError as exc:
        return "refused", str(exc).replace(str(path), PUSHED_NAME)
    except MemoryError:
        return "memory", None
    except Exception as exc:
        if _too_deep(exc):
            return "depth", None
        bug = exc if isinstance(exc, CompilerBug) else CompilerBug.of(exc)
        return "bug", one_line(bug).replace(str(path), PUSHED_NAME)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="p4switch.p4rt.compiling")
    parser.add_argument("--cpu", type=int, required=True)
    parser.add_argument("--memory", type=int, required=True)
    parser.add_argument("source", type=Path)
    parser.add_argument("-I", dest="include", type=Path, action="append", default=[])
    parser.add_argument("-D", dest="defines", action="append", default=[])
    args = parser.parse_args(argv)
    import p4switch.program  # noqa: F401  (loaded before the limits: they bound the compile)

    resource.setrlimit(resource.RLIMIT_AS, (args.memory, args.memory))
    resource.setrlimit(resource.RLIMIT_CPU, (args.cpu, args.cpu + 1))
    defines = dict(d.partition("=")[::2] for d in args.defines)
    try:
        result = _compile_child(args.source, args.include, defines)
        data = _dumps(result)
    except MemoryError:
        data = _dumps(("memory", None))
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
