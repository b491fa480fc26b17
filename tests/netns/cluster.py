"""A Ray cluster of several "machines" on this one: each node a network namespace of its own with
its own address on a bridge, the head in the first.

    fabric (namespace <P>f): bridge br0
      <P>v1 -- eth0 10.250.0.1/24  node 1 (namespace <P>n1): ray start --head
      <P>v2 -- eth0 10.250.0.2/24  node 2 (namespace <P>n2): ray start --address=10.250.0.1:6379
      ...

The bridge lives in a namespace of its own, so the root namespace holds nothing of the cluster
and carries no 10.x address. Every node is started with one token (Ray's token authentication,
passed in the environment, never written to a file) and a temporary folder of its own under the
cluster's folder. A driver runs inside a node's namespace (`driver_argv`), as one would run
`innet` on a cluster's head.

Stopping: every process in a node's namespace was started for the cluster (`ray start`, what
Ray started, the drivers and what they started), so `stop` sends SIGTERM to exactly those,
SIGKILL after STOP_GRACE_S to what is left, waits until they are gone, then deletes the
namespaces and the folder. `kill_node` SIGKILLs one node's processes: a machine lost.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.cluster.agent import RUN_DIR_PREFIX
from controller.cluster.janitor import alive
from tests.netns.topology import destroy, in_ns, run

SUBNET = "10.250.0"
RAY_PORT = 6379
STOP_GRACE_S = 5.0
GONE_TIMEOUT_S = 20.0
START_TIMEOUT_S = 120.0
OBJECT_STORE_BYTES = 100 * 2**20  # Ray asks for 30% of the memory by default, per node
VENV_BIN = Path(sys.executable).parent
CHECKOUT = Path(__file__).resolve().parents[2]
# what innet starts on a node: switches, link emulators, Mininet's host shells, janitors
INNET_PROCESSES = ("p4switch", "linkemu", "mininet:", "controller.cluster.janitor")


def why_not_here() -> str | None:
    """Why a cluster test cannot run here (None if it can). Ray is one of innet's dependencies:
    a setup without it fails the tests rather than skip them."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    return None


@dataclass
class LocalCluster:
    """Ray nodes in namespaces `<prefix>n1`.., joined by a bridge in `<prefix>f`."""

    prefix: str
    folder: Path
    nodes: int = 3
    cpus: int = 2  # what each node tells Ray it has
    token: str = field(default_factory=lambda: secrets.token_hex(32))
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)  # every PID seen in a node's namespace

    @property
    def fabric(self) -> str:
        return f"{self.prefix}f"

    def namespace(self, i: int) -> str:
        """Node i's namespace, i from 1."""
        return f"{self.prefix}n{i}"

    @property
    def namespaces(self) -> list[str]:
        return [self.fabric, *(self.namespace(i) for i in range(1, self.nodes + 1))]

    def address(self, i: int) -> str:
        return f"{SUBNET}.{i}"

    @property
    def head(self) -> str:
        return f"{self.address(1)}:{RAY_PORT}"

    @property
    def env(self) -> dict[str, str]:
        """What every Ray process and driver of this cluster is started with."""
        return {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": self.token,
            "RAY_USAGE_STATS_ENABLED": "0",
            "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
        }

    # --- up ----------------------------------------------------------------------------------

    def start(self) -> None:
        """Build the namespaces and the bridge, then start the nodes, the head first."""
        try:
            self._wire()
            for i in range(1, self.nodes + 1):
                self._start_node(i)
            self._wait_joined()
        except BaseException:
            self.stop()
            raise

    def _wire(self) -> None:
        run(["ip", "netns", "add", self.fabric])
        in_ns(self.fabric, "ip", "link", "add", "br0", "type", "bridge")
        in_ns(self.fabric, "ip", "link", "set", "br0", "up")
        for i in range(1, self.nodes + 1):
            ns = self.namespace(i)
            run(["ip", "netns", "add", ns])
            outside = f"{self.prefix}v{i}"
            # both ends made inside their namespaces: the root namespace never holds one
            in_ns(ns, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", outside)
            in_ns(ns, "ip", "link", "set", outside, "netns", self.fabric)
            in_ns(self.fabric, "ip", "link", "set", outside, "master", "br0", "up")
            in_ns(ns, "ip", "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            in_ns(ns, "ip", "link", "set", "eth0", "up")
            in_ns(ns, "ip", "link", "set", "lo", "up")

    def _start_node(self, i: int) -> None:
        role = ["--head", f"--port={RAY_PORT}", "--include-dashboard=false"]
        if i > 1:
            role = [f"--address={self.head}"]
        temp = self.folder / f"n{i}"
        temp.mkdir(parents=True, exist_ok=True)
        ray_start = [
            str(VENV_BIN / "ray"),
            "start",
            *role,
            "--block",
            f"--node-ip-address={self.address(i)}",
            f"--num-cpus={self.cpus}",
            f"--object-store-memory={OBJECT_STORE_BYTES}",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ]
        argv = self.driver_argv(i, ray_start)
        log = (self.folder / f"ray-n{i}.log").open("wb")
        with log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.started.append(proc)
        if i == 1:
            self._wait_head()

    def _wait_head(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            tcp = f"exec 3<>/dev/tcp/{self.address(1)}/{RAY_PORT}"
            probe = subprocess.run(self.driver_argv(1, ["bash", "-c", tcp]), capture_output=True)
            if probe.returncode == 0:
                return
            self._check_alive()
            time.sleep(0.2)
        raise RuntimeError(f"the head did not listen on {self.head}: see {self.folder}")

    def _wait_joined(self) -> None:
        """Until the head counts every node alive (asked by a driver in the head's namespace)."""
        script = (
            "import ray,sys\n"
            f"ray.init(address='{self.head}', log_to_driver=False)\n"
            "print(sum(1 for n in ray.nodes() if n['Alive']))\n"
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            done = self.driver(1, [sys.executable, "-c", script], timeout=START_TIMEOUT_S)
            if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == [str(self.nodes)]:
                return
            self._check_alive()
            time.sleep(0.5)
        raise RuntimeError(f"not every node joined the head at {self.head}: see {self.folder}")

    def _check_alive(self) -> None:
        for i, proc in enumerate(self.started, start=1):
            if proc.poll() is not None:
                log = (self.folder / f"ray-n{i}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ray start on node {i} exited {proc.returncode}: {log}")

    # --- drivers -----------------------------------------------------------------------------

    def driver_argv(self, i: int, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(i), *argv]

    def driver(
        self,
        i: int,
        argv: Sequence[str],
        *,
        timeout: float = 300.0,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` in node i's namespace with the cluster's environment, from the checkout
        (so `python -m tests...` finds the tests), to its end."""
        return subprocess.run(
            self.driver_argv(i, argv),
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.env, **(env or {})},
            cwd=CHECKOUT,
            check=False,
        )

    def start_driver(self, i: int, argv: Sequence[str]) -> subprocess.Popen[str]:
        """Start `argv` in node i's namespace as `driver` runs it, its stdout piped; the
        caller stops it (the cluster's `stop` would too: it runs in the namespace)."""
        return subprocess.Popen(
            self.driver_argv(i, argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=CHECKOUT,
        )

    def made_by_innet(self, i: int) -> list[str]:
        """What innet made in node i's namespace and left there: interfaces beside the node's
        own (lo, eth0), and processes of switches, link emulators, host shells or janitors."""
        links = in_ns(self.namespace(i), "ip", "-o", "link", "show")
        names = [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()]
        found = [f"interface {name}" for name in names if name not in ("lo", "eth0")]
        for pid in self.pids(i):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if any(what in cmd for what in INNET_PROCESSES):
                found.append(f"process {pid}: {cmd[:120]}")
        return found

    # --- down --------------------------------------------------------------------------------

    def pids(self, i: int) -> list[int]:
        """Every process in node i's namespace (none when it is gone)."""
        done = subprocess.run(
            ["ip", "netns", "pids", self.namespace(i)], capture_output=True, text=True
        )
        pids = [int(p) for p in done.stdout.split()] if done.returncode == 0 else []
        self.seen.update(pids)
        return pids

    def kill_node(self, i: int) -> None:
        """Node i lost: every process of its namespace killed outright."""
        for pid in self.pids(i):
            _signal(pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop every process of the nodes' namespaces, delete the namespaces and the folder."""
        nodes = range(1, self.nodes + 1)
        pids = sorted({p for i in nodes for p in self.pids(i)} | self._own_pids())
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        left = _wait_gone(pids, time.monotonic() + STOP_GRACE_S)
        for pid in left:
            _signal(pid, signal.SIGKILL)
        left = _wait_gone(left, time.monotonic() + GONE_TIMEOUT_S)
        for proc in self.started:
            if proc.poll() is None:
                proc.wait(timeout=GONE_TIMEOUT_S)
        destroy(self.namespaces)
        shutil.rmtree(self.folder, ignore_errors=True)
        for path in self._agent_dirs():  # a lost machine's: its janitor went with it
            shutil.rmtree(path, ignore_errors=True)
        if left:
            raise RuntimeError(f"processes of the cluster still running after SIGKILL: {left}")

    def _own_pids(self) -> set[int]:
        return {p.pid for p in self.started if p.poll() is None}

    def leftovers(self) -> list[str]:
        """What of the cluster is still there: namespaces, processes naming its folder, the
        folder itself; empty when it is all gone."""
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        names = {line.split()[0] for line in listed.splitlines() if line.strip()}
        found = [f"namespace {ns}" for ns in self.namespaces if ns in names]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                if str(self.folder) in cmd:
                    found.append(f"process {entry.name}: {cmd[:120]}")
        if self.folder.exists():
            found.append(f"folder {self.folder}")
        found += [f"agent run directory {path}" for path in self._agent_dirs()]
        return found

    def _agent_dirs(self) -> list[Path]:
        """The run directories of the agents that ran on the nodes (by their PIDs)."""
        folders = (Path(tempfile.gettempdir(), f"{RUN_DIR_PREFIX}{pid}") for pid in self.seen)
        return sorted(path for path in folders if path.exists())


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def _wait_gone(pids: Sequence[int], deadline: float) -> list[int]:
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if alive(p)]
    return left
