"""The benchmark's C programs (bench/native/): built with gcc at run time, and how to call them.

- `sender.c`: pre-built Ethernet/IPv4/UDP frames out of an AF_PACKET socket with sendmmsg, for
  a duration or a count, at most a given rate; it prints what it sent. `Traffic` describes the
  frames and gives the sender's arguments.
- `forwarder.c`: port 1 <-> port 2 with recvmmsg/sendmmsg, the least a switch can do.

Binaries go to build/bench/ (ignored by git) and are rebuilt when their source is newer:

    >>> Traffic("02:00:0a:00:00:01", "02:00:0a:00:00:02", "10.0.0.1", "10.0.0.2").frame_bytes
    60
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from innet.exceptions import InnetError

SOURCES = Path(__file__).resolve().parent / "native"
BUILD_DIR = SOURCES.parents[1] / "build" / "bench"
CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra")
HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP
AGG_BYTES = 4 + 4 * 32  # agg32.p4's header: slot, contributions, 32 int32 lanes


class ForwardingBenchError(InnetError):
    """A benchmark could not run: a tool is missing or failed, or a measurement went wrong."""


def build_tool(name: str, build_dir: Path = BUILD_DIR) -> Path:
    """bench/native/NAME.c compiled to build_dir/NAME (again only when the source is newer)."""
    source = SOURCES / f"{name}.c"
    if not source.is_file():
        raise ForwardingBenchError(
            f"no C source {source}: the tools are {sorted(available_tools())}"
        )
    binary = build_dir / name
    if binary.is_file() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    gcc = shutil.which("gcc")
    if gcc is None:
        raise ForwardingBenchError(
            f"gcc is not installed: it builds {source.name} for the benchmark "
            "(install it, e.g. apt-get install gcc)"
        )
    build_dir.mkdir(parents=True, exist_ok=True)
    partial = build_dir / f".{name}.{os.getpid()}.partial"  # renamed into place when built
    done = subprocess.run(
        [gcc, *CFLAGS, "-o", str(partial), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise ForwardingBenchError(f"gcc could not build {source}:\n{done.stderr.strip()}")
    partial.replace(binary)
    return binary


def available_tools() -> list[str]:
    return [path.stem for path in SOURCES.glob("*.c")]


@dataclass(frozen=True)
class Traffic:
    """The frames the sender builds: h1 -> h2, UDP to `dport` with `payload` bytes.

    `agg_slots` > 0 makes the payload agg32.p4's aggregation header (frame i on slot
    (i % 1024) % agg_slots, lane k holding k + 1), so the program aggregates every frame;
    0 sends zeros.
    """

    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    dport: int = 0x4000
    payload: int = 18
    agg_slots: int = 0

    def __post_init__(self) -> None:
        if self.agg_slots and self.payload < AGG_BYTES:
            raise ForwardingBenchError(
                f"aggregation frames need a UDP payload of at least {AGG_BYTES} bytes "
                f"(slot, contributions, 32 lanes), not {self.payload}: use --size {AGG_BYTES}"
            )

    @property
    def frame_bytes(self) -> int:
        return HEADERS + self.payload

    def arguments(self) -> list[str]:
        """The sender's options that describe these frames."""
        described = [
            *("--src-mac", self.src_mac, "--dst-mac", self.dst_mac),
            *("--src-ip", self.src_ip, "--dst-ip", self.dst_ip),
            *("--dport", str(self.dport), "--payload", str(self.payload)),
        ]
        if self.agg_slots:
            described += ["--agg-slots", str(self.agg_slots)]
        return described


def sender_command(
    sender: Path, traffic: Traffic, interface: str, seconds: float, rate: float | None = None
) -> list[str]:
    """The sender's argument list: `traffic` out of `interface` for `seconds`, capped at `rate`."""
    command = [str(sender), *traffic.arguments(), "--interface", interface]
    command += ["--seconds", f"{seconds:g}"]
    if rate is not None:
        command += ["--rate", f"{rate:g}"]
    return command


def frames_in_hex(sender: Path, traffic: Traffic, count: int) -> list[bytes]:
    """The first `count` frames the sender would send, built by the sender itself."""
    command = [str(sender), *traffic.arguments(), "--print", str(count)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise ForwardingBenchError(f"{sender.name} --print failed: {done.stderr.strip()}")
    return [bytes.fromhex(line) for line in done.stdout.split()]


def last_json_line(output: str, what: str) -> dict[str, Any]:
    """The JSON object a tool prints last (its totals), or an error quoting its output."""
    for line in reversed(output.splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(found, dict):
                return found
    raise ForwardingBenchError(
        f"{what} printed no totals; its output was: {output.strip()[-500:]!r}"
    )
