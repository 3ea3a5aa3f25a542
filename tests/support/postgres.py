"""A PostgreSQL cluster of one's own in a temporary directory (initdb + pg_ctl), for what must restart
the database under the product: an end-to-end test, the benchmarks.

As .ci/run starts its cluster: trust authentication for the user kourier on 127.0.0.1, fsync off (a
test's data, not a store), run as the postgres user when this process is root (PostgreSQL refuses
to run as root).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.private_redis import free_port

DATABASE = "kourier"
USER = "kourier"


def postgres_bin_dir() -> Path | None:
    """Where initdb and pg_ctl are: on PATH, else the newest /usr/lib/postgresql/*/bin; None when absent."""
    initdb = shutil.which("initdb")
    if initdb is not None:
        return Path(initdb).resolve().parent
    installed = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return installed[-1].parent if installed else None


@dataclass
class PostgresCluster:
    bin_dir: Path
    data_dir: Path
    port: int
    as_postgres: list[str]

    @property
    def url(self) -> str:
        return f"postgres://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def restart(self) -> None:
        """Stops the server, ending every connection (``-m fast``: as a deploy or a failover does), and
        starts it again on the same port; returns once it accepts connections."""
        self._pg_ctl("-m", "fast", "-w", "-l", str(self.log), "restart")

    @property
    def log(self) -> Path:
        return self.data_dir / "server.log"

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_postgres, str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args],
            check=True, capture_output=True,
        )  # fmt: skip


@contextlib.contextmanager
def postgres_cluster(
    bin_dir: Path, *, max_connections: int = 200, options: str = "", directory: Path | None = None
) -> Iterator[PostgresCluster]:
    """A started cluster with an empty database ``kourier``, stopped and removed afterwards (its data
    directory is left alone when ``directory`` is given: the caller owns it)."""
    parent = directory or Path(tempfile.mkdtemp(prefix="kourier-pg-"))
    parent.chmod(0o755)  # the postgres user must reach its data directory inside
    data_dir = parent / "pg"
    data_dir.mkdir()
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        as_postgres = ["runuser", "-u", "postgres", "--"]
        shutil.chown(data_dir, "postgres")
    cluster = PostgresCluster(bin_dir, data_dir, free_port(), as_postgres)
    subprocess.run(
        [*as_postgres, str(bin_dir / "initdb"), "-D", str(data_dir), "-U", USER, "--auth=trust", "-E", "UTF8"],
        check=True, capture_output=True,
    )  # fmt: skip
    server_options = (
        f"-p {cluster.port} -k {data_dir} -c listen_addresses=127.0.0.1 "
        f"-c max_connections={max_connections} -c fsync=off {options}"
    )
    cluster._pg_ctl("-l", str(cluster.log), "-w", "-o", server_options, "start")
    try:
        subprocess.run(
            [*as_postgres, str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(cluster.port), "-U", USER,
             DATABASE],
            check=True, capture_output=True,
        )  # fmt: skip
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            cluster._pg_ctl("-m", "immediate", "-w", "stop")
        if directory is None:
            shutil.rmtree(parent, ignore_errors=True)
