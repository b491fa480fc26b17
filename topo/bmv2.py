"""The `bmv2` target: the same P4 programs on BMv2's simple_switch_grpc, compiled by p4c.

Where `simple_switch_grpc` and `p4c-bm2-ss` are installed (the Vagrant VM), a testbed can run
its edges on the reference target instead of p4switch. Each edge is one simple_switch_grpc
process started without a program (`--no-p4`): the controller pushes p4c's BMv2 JSON and
P4Info with SetForwardingPipelineConfig, as it pushes the P4 source to p4switch. Device id and
CPU port are given explicitly; BMv2's logging is off (it costs more than the forwarding) unless
`log_console` asks for it. BMv2 cannot delay or rate-limit a port, so links are shaped by the
kernel (netem and HTB); a kernel without netem cannot host this target.

The two tools are found on PATH, else in `EXTRA_TOOL_DIRS`; `require_tools()` raises, in one
line, naming those missing and how to install them. `python -m topo.bmv2` prints where they are
(or that line, with exit status 1). BMv2's Thrift CLI, `simple_switch_CLI`, is found the same
way; it is a Python script that imports Thrift's modules, which a project's venv lacks, so
`cli_command` runs it with an interpreter that can import them (its own `#!` interpreter first,
then the system's python3), not whichever python3 comes first on PATH.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from p4switch import PortStats, load_p4info

from topo.exceptions import Bmv2Error, SwitchControlError, SwitchStartError
from topo.p4node import P4Switch, PortCounters, SwitchPipeline

SIMPLE_SWITCH = "simple_switch_grpc"
P4C = "p4c-bm2-ss"
CLI = "simple_switch_CLI"
P4C_INCLUDE = "P4C_16_INCLUDE_PATH"  # where p4c finds core.p4 and v1model.p4
# Interpreters tried for the CLI after its own: the system's python3 (python3-thrift installs there)
SYSTEM_PYTHONS: tuple[Path, ...] = (Path("/usr/bin/python3"), Path("/usr/local/bin/python3"))
CLI_NEEDS = "thrift"  # the module the CLI's interpreter must import
# Where the tools are looked for when they are not on PATH (a root shell or a service may have a
# shorter one): /usr/local/bin, the default prefix of p4c's and BMv2's source builds, and /opt/p4.
EXTRA_TOOL_DIRS: tuple[Path, ...] = (Path("/usr/local/bin"), Path("/opt/p4/bin"))
INSTALL_HINT = (
    "to install: the VM (vagrant up, README), the p4lang project's packages for "
    "Debian/Ubuntu (p4lang-bmv2, p4lang-p4c), or build BMv2 and p4c from source"
)
# The versions CI runs every bmv2 test with (scripts/provision-vm.sh prints the VM's beside them)
PROVEN_P4C, PROVEN_BMV2 = "1.2.5.16", "1.15.5"
CPU_PORT = 255
THRIFT_BASE_PORT = 9090
KERNEL_COUNTERS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes")


def find_tool(name: str) -> str | None:
    """The path of the executable `name`: on PATH, else in EXTRA_TOOL_DIRS; None if nowhere."""
    for path in (None, *map(str, EXTRA_TOOL_DIRS)):  # None: PATH
        found = shutil.which(name, path=path)
        if found is not None:
            return found
    return None


def missing_tools() -> list[str]:
    """The BMv2 and p4c commands this machine lacks (empty: the target can run here)."""
    return [tool for tool in (SIMPLE_SWITCH, P4C) if find_tool(tool) is None]


def _missing_message(missing: list[str]) -> str:
    where = ", ".join(["PATH", *map(str, EXTRA_TOOL_DIRS)])
    return f"the bmv2 target needs {' and '.join(missing)}, not found here (looked in {where}); "


def require_tools() -> None:
    """Raise Bmv2Error, in one line, naming the missing tools and how to install them."""
    missing = missing_tools()
    if missing:
        raise Bmv2Error(_missing_message(missing) + INSTALL_HINT)


def _script_interpreter(script: Path) -> str | None:
    """The interpreter a script's `#!` line names (`/usr/bin/env python3` resolved on PATH)."""
    try:
        with script.open("rb") as f:
            first = f.readline(256).decode("utf-8", "replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0]


def _imports(interpreter: str, module: str) -> bool:
    try:
        done = subprocess.run(
            [interpreter, "-c", f"import {module}"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def cli_command(thrift_port: int) -> list[str]:
    """simple_switch_CLI for the switch whose Thrift server listens on `thrift_port` (commands
    on its stdin): `[interpreter, script, --thrift-port, N]`, the interpreter the first of the
    script's own and the system's that imports Thrift. Bmv2Error, in one line, where the CLI
    or such an interpreter is missing."""
    script = find_tool(CLI)
    if script is None:
        raise Bmv2Error(_missing_message([CLI]) + INSTALL_HINT)
    own = _script_interpreter(Path(script))
    if own is not None and "python" not in Path(own).name:  # not a Python script: run it as is
        return [script, "--thrift-port", str(thrift_port)]
    tried = list(dict.fromkeys([*([own] if own else []), *map(str, SYSTEM_PYTHONS)]))
    for interpreter in tried:
        if _imports(interpreter, CLI_NEEDS):
            return [interpreter, script, "--thrift-port", str(thrift_port)]
    raise Bmv2Error(
        f"{CLI} ({script}) needs a python3 that imports {CLI_NEEDS}; none of "
        f"{', '.join(tried)} does: install python3-thrift (Debian/Ubuntu) for the system's python3"
    )


@dataclass(frozen=True)
class Compiled:
    json: Path  # BMv2's program
    p4info: Path  # P4Runtime's description, protobuf text


def compile_bmv2(program: Path, out_dir: Path, defines: dict[str, str] | None = None) -> Compiled:
    """p4c-bm2-ss on `program` into `out_dir` (one JSON and P4Info per set of defines)."""
    p4c = find_tool(P4C)
    if p4c is None:
        raise Bmv2Error(_missing_message([P4C]) + INSTALL_HINT)
    defines = dict(defines or {})
    tag = "-".join(f"{k}{v}" for k, v in sorted(defines.items())) or "default"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{Path(program).stem}-{tag}"
    compiled = Compiled(stem.with_suffix(".json"), stem.with_suffix(".p4info.txtpb"))
    argv = [
        p4c,
        "--arch",
        "v1model",
        "--std",
        "p4-16",
        "-o",
        str(compiled.json),
        "--p4runtime-files",
        str(compiled.p4info),
    ]
    for name, value in sorted(defines.items()):
        argv += ["-D", f"{name}={value}"]
    done = subprocess.run(
        [*argv, str(program)], capture_output=True, text=True, check=False, env=p4c_environment(p4c)
    )
    if done.returncode != 0:
        raise Bmv2Error(f"{P4C} refused {program}: {done.stderr.strip()}")
    return compiled


def p4c_environment(p4c: str) -> dict[str, str]:
    """The environment p4c runs in: with P4C_16_INCLUDE_PATH set to the found p4c's own
    `../share/p4c/p4include` where that holds core.p4 and the variable is unset. p4c looks for
    a `p4include` beside itself first, and a relocatable build may leave an empty one there."""
    env = dict(os.environ)
    own = Path(p4c).resolve().parent.parent / "share" / "p4c" / "p4include"
    if P4C_INCLUDE not in env and (own / "core.p4").is_file():
        env[P4C_INCLUDE] = str(own)
    return env


def bmv2_pipeline(program: Path, build_dir: Path, defines: dict[str, str]) -> SwitchPipeline:
    """What SetForwardingPipelineConfig gives BMv2: p4c's P4Info and JSON for `program`."""
    compiled = compile_bmv2(program, build_dir, defines)
    return SwitchPipeline(load_p4info(compiled.p4info), compiled.json.read_bytes())


def bmv2_command(
    ports: dict[int, str],
    grpc_addr: str,
    device_id: int,
    thrift_port: int,
    cpu_port: int = CPU_PORT,
    log_console: bool = False,
) -> list[str]:
    """simple_switch_grpc's argument list: ports, ids and addresses explicit, no program.
    The command is the one `find_tool` finds (its bare name where it finds none)."""
    argv = [find_tool(SIMPLE_SWITCH) or SIMPLE_SWITCH, "--device-id", str(device_id)]
    for port, ifname in sorted(ports.items()):
        argv += ["-i", f"{port}@{ifname}"]
    argv += ["--thrift-port", str(thrift_port), "--no-p4"]
    if log_console:
        argv += ["--log-console"]
    argv += ["--", "--grpc-server-addr", grpc_addr, "--cpu-port", str(cpu_port)]
    return argv


class Bmv2Switch(P4Switch):
    """A Mininet switch backed by one simple_switch_grpc process (no control channel)."""

    def __init__(
        self,
        name: str,
        *,
        thrift_port: int,
        cpu_port: int = CPU_PORT,
        log_console: bool = False,
        **params: object,
    ) -> None:
        # P4Switch's own keywords (program, rundir, ...), passed through as given: unchecked here
        super().__init__(name, **params)  # type: ignore[arg-type]
        self.thrift_port, self.cpu_port, self.log_console = thrift_port, cpu_port, log_console

    def pipeline(self, build_dir: Path) -> SwitchPipeline:
        """p4c's BMv2 JSON and P4Info for this switch's defines, compiled into `build_dir`."""
        return bmv2_pipeline(self.program, build_dir, self.defines)

    def port_counters(self, reset_peaks: bool = False) -> PortCounters:
        """The kernel's counters of the switch's interfaces (BMv2 has no control channel);
        there is no processing-lag reading, so `reset_peaks` has nothing to restart."""
        counters: PortCounters = {}
        for port, name in self.port_interfaces().items():
            stats = Path("/sys/class/net", name, "statistics")
            try:
                kernel = {k: int((stats / k).read_text()) for k in KERNEL_COUNTERS}
                counters[port] = PortStats.from_json({"interface": name, **kernel}, name)
            except (OSError, ValueError) as err:
                raise SwitchControlError(f"{self.name}: {name}: {err}") from err
        return counters

    def control_alive(self) -> bool | None:
        return None

    def engine(self) -> str:
        return "bmv2"

    def command(self) -> list[str]:
        return bmv2_command(
            self.port_interfaces(),
            self.grpc_addr,
            self.device_id,
            self.thrift_port,
            self.cpu_port,
            self.log_console,
        )

    def ready(self) -> bool:
        """True once the P4Runtime server accepts connections; raises if the process exited."""
        if self.process is None:
            raise SwitchStartError(f"{self.name}: {SIMPLE_SWITCH} was never started")
        code = self.process.poll()
        if code is not None:
            raise SwitchStartError(
                f"{self.name}: {SIMPLE_SWITCH} exited with status {code} (log {self.log_path})"
            )
        host, port = self.grpc_addr.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return True
        except OSError:
            return False


def main() -> int:
    """Where simple_switch_grpc and p4c-bm2-ss are, or one line saying what is missing (1)."""
    try:
        require_tools()
    except Bmv2Error as err:
        print(f"bmv2: {err}", file=sys.stderr)
        return 1
    for tool in (SIMPLE_SWITCH, P4C):
        print(f"{tool}: {find_tool(tool)}")
    try:
        print(f"{CLI}: {' '.join(cli_command(THRIFT_BASE_PORT)[:2])}")
    except Bmv2Error as err:  # the target runs without it: only the CLI's users need it
        print(f"{CLI}: not usable: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
