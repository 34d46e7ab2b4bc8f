"""A real multi-node Ray cluster on this one machine, on loopback only: for tests, benchmarks and trying things.

Every node is a separate `ray start` (its own GCS/raylet/agent processes, its own process group), so a node
can be killed like a lost host. Two Ray quirks are handled here and nowhere else:
- `ray start` turns 127.0.0.1 into the machine's routable address, and Ray's servers then listen on every
  interface. Nodes are therefore launched through `python -m bench.executor.local_cluster node ...`, which
  runs Ray's own `ray start` command with that one mapping disabled: every server listens on 127.0.0.1.
- A driver (`bench ingest --executor ray`) given 127.0.0.1 makes the same mapping; `driver_env()` sets
  RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, under which Ray keeps the loopback address for the driver.
Each node advertises the resources it is given (e.g. `jaxbench_host_cpu: 1`, standing in for an accelerator
host). Nothing here is used by `bench ingest` itself.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = "127.0.0.1"
#: Ray's periodic housekeeping that no evaluation needs, off in every node (and its workers): the memory monitor's
#: polling, idle workers started ahead, metrics collection, and the log monitor (`--include-log-monitor false`;
#: drivers here never ask for workers' logs). Why: this cluster's nodes stand in for hosts on one core each, so
#: each wake-up lands on a core where a runner times. Two one-core nodes, 32 evaluations: 40-42 harness runs
#: (rows re-timed as noisy: "the runner waited 5-8 % of the timed wall time for its core") with Ray's defaults,
#: 36-40 without these (four runs each).
QUIET_RAY = {
    "RAY_memory_monitor_refresh_ms": "0",
    "RAY_enable_worker_prestart": "0",
    "RAY_prestart_worker_first_driver": "0",
    "RAY_enable_metrics_collection": "0",
}
NODE_ENV = "JAXBENCH_NODE_NAME"  # set in each node's environment: "<cluster folder>/<node name>"


@dataclass
class Node:
    name: str
    temp_dir: Path
    pgid: int  # the `ray start` session: its daemons are in it (Ray workers need not be)
    log: Path
    label: str  # the value of NODE_ENV in every process of the node


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _pids_of(node: Node) -> list[tuple[int, str]]:
    """(pid, command) of every live process of a node: its process group, and every process whose environment
    carries the node's label (Ray workers, which may leave the group, and their children)."""
    out, marker = [], f"{NODE_ENV}={node.label}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if fields[0] == "Z":
                continue
            if int(fields[2]) == node.pgid or marker in (proc / "environ").read_bytes().split(b"\0"):
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append((int(proc.name), cmdline))
        except (OSError, ValueError, IndexError):
            continue
    return out


@dataclass
class LocalCluster:
    """Head (coordinator only by default: it offers no host resource) plus worker nodes, all on 127.0.0.1."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="jbray-", dir="/tmp")))
    env: dict[str, str] = field(default_factory=dict)  # extra environment of every node (and its Ray workers)
    object_store_mb: int = 100
    port: int = field(default_factory=_free_port)
    nodes: list[Node] = field(default_factory=list)

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def driver_env(self) -> dict[str, str]:
        """Environment of a driver process (bench ingest --executor ray --address auto) for this cluster."""
        return {"RAY_ADDRESS": self.address, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}

    def _start(
        self, name: str, args: list[str], cpus: float, resources: dict[str, float], cores: set[int] | None = None
    ) -> Node:
        temp_dir = self.root / name  # short: Ray's unix sockets live below it
        log = self.root / f"{name}.log"
        node_label = f"{self.root.name}/{name}"
        cmd = [
            sys.executable,
            "-m",
            "bench.executor.local_cluster",
            "node",
            "start",
            *args,
            "--node-ip-address",
            LOOPBACK,
            "--include-log-monitor",
            "false",
            "--num-cpus",
            str(cpus),
            "--resources",
            json.dumps(resources),
            "--object-store-memory",
            str(self.object_store_mb << 20),
            "--temp-dir",
            str(temp_dir),
        ]
        env = {
            **os.environ,
            **QUIET_RAY,
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
            **self.env,
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1",  # a driver's setting (driver_env) must not reach a node
            NODE_ENV: node_label,
        }  # marks every process of the node, Ray workers included
        pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None  # inherited by every process of the node
        with open(log, "wb") as fh:
            proc = subprocess.Popen(
                cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=pin
            )
        node = Node(name, temp_dir, proc.pid, log, node_label)
        self.nodes.append(node)
        if proc.wait(timeout=120) != 0:
            raise RuntimeError(f"ray start of {name} failed:\n{log.read_text()[-3000:]}")
        return node

    def start_head(self, cpus: float = 1, resources: dict[str, float] | None = None) -> Node:
        return self._start(
            "head",
            ["--head", "--port", str(self.port), "--include-dashboard", "false", "--disable-usage-stats"],
            cpus,
            resources or {},
        )

    def add_worker(self, resources: dict[str, float], cpus: float = 1, cores: set[int] | None = None) -> Node:
        """A worker node; `cores`: the CPU cores every process of the node is confined to (a stand-in for a
        host of its own: the harness pins its runner to the last core it may use, so nodes on disjoint cores
        time on different cores)."""
        return self._start(f"w{len(self.nodes)}", ["--address", self.address], cpus, resources, cores)

    def raylet_pid(self, node: Node) -> int:
        return next(pid for pid, cmd in _pids_of(node) if "/raylet/raylet " in cmd or cmd.startswith("raylet"))

    def kill_node(self, node: Node) -> None:
        """What a lost host looks like: its raylet dies by SIGKILL, then every other process of the node
        (Ray workers and the harness's processes are not in the node's process group)."""
        os.kill(self.raylet_pid(node), signal.SIGKILL)
        self._kill(node)

    @staticmethod
    def _kill(node: Node) -> None:
        for pid, _ in _pids_of(node):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def rss_mb(self) -> float:
        """Resident memory of every process of every node (Ray workers included)."""
        total = 0
        for node in self.nodes:
            for pid, _ in _pids_of(node):
                try:
                    status = Path(f"/proc/{pid}/status").read_text().splitlines()
                    rss = next(line for line in status if line.startswith("VmRSS"))
                    total += int(rss.split()[1])
                except (OSError, StopIteration):
                    continue
        return total / 1024

    def stop(self) -> None:
        """Kill every process of every node (workers before the head) and wait until they are gone."""
        deadline = time.monotonic() + 20
        while any(_pids_of(n) for n in self.nodes) and time.monotonic() < deadline:
            for node in reversed(self.nodes):
                self._kill(node)
            time.sleep(0.2)
        shutil.rmtree(self.root, ignore_errors=True)

    def listening_addresses(self) -> set[str]:
        """Local addresses of the TCP sockets this cluster's processes listen on (from /proc/net/tcp*)."""
        inodes: set[str] = set()
        for node in self.nodes:
            for pid, _ in _pids_of(node):
                try:
                    for fd in Path(f"/proc/{pid}/fd").iterdir():
                        target = os.readlink(fd)
                        if target.startswith("socket:["):
                            inodes.add(target[8:-1])
                except OSError:
                    continue
        found = set()
        for table, v6 in (("/proc/net/tcp", False), ("/proc/net/tcp6", True)):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                    found.add(_decode_address(parts[1].split(":")[0], v6))
        return found


def _decode_address(hexaddr: str, v6: bool) -> str:
    raw = bytes.fromhex(hexaddr)
    if not v6:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


def _node_main(argv: list[str]) -> None:
    """`ray start ...` with Ray's localhost-to-routable-address mapping disabled (see the module docstring)."""
    import ray._private.services as services
    from ray.scripts.scripts import main

    services.resolve_ip_for_localhost = lambda host: host
    sys.argv = ["ray", *argv]
    main()


if __name__ == "__main__" and sys.argv[1:2] == ["node"]:
    _node_main(sys.argv[2:])
