"""The egress proxy test's plugin, loaded by proxy.py in its own process (tests/support/egress_proxy.py
starts it): names under ``.kourier.test`` resolve to 127.0.0.1 here and nowhere else, and every
upstream host:port the proxy connects to is appended to the file KOURIER_EGRESS_HOSTS_LOG names."""

from __future__ import annotations

import os

from proxy.http.proxy import HttpProxyBasePlugin

TEST_DOMAIN = ".kourier.test"


class OnlyTheProxyResolves(HttpProxyBasePlugin):
    def resolve_dns(self, host: str, port: int) -> tuple[str | None, None]:
        with open(os.environ["KOURIER_EGRESS_HOSTS_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{host}:{port}\n")
        return ("127.0.0.1" if host.endswith(TEST_DOMAIN) else None), None
