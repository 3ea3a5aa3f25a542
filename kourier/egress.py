"""Where outbound connections go: through the egress proxy the environment names, or direct (issue 34,
point 2). The one place that reads HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY (either case), with
the standard library's meaning (``urllib.request.getproxies`` and ``proxy_bypass``): every client of
the service asks here, per URL, so nothing goes direct except what NO_PROXY names.

slack_sdk reads HTTPS_PROXY itself but not NO_PROXY, aiohttp (the Socket Mode websocket) reads neither
unless told, and httpx reads them with rules of its own: so each is handed the proxy chosen here.
"""

from __future__ import annotations

import functools
import os
import ssl
import urllib.request
from collections.abc import Callable, Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

import httpx

# The standard library's NO_PROXY rules (typeshed does not declare the function, public since 3.0).
_bypassed: Callable[[str, dict[str, str]], bool] = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]

# A websocket is opened as an HTTP request of its scheme's twin: wss through the https proxy.
_SCHEME_FOR_PROXY = {"wss": "https", "ws": "http"}


# The variables that decide a route (either case), and the CGI marker that voids HTTP_PROXY.
_DECIDING = (
    "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY",
    "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", "REQUEST_METHOD",
)  # fmt: skip


def environment_proxies() -> Mapping[str, str]:
    """The proxies the environment names, by scheme ("https", "http", "all"; "no" holds NO_PROXY).
    Read again only when a variable that decides a route changes: the standard library's reading
    walks and decodes the whole environment, and a turn asks several times (docs/performance.md)."""
    return _proxies_while(tuple(os.environ.get(name) for name in _DECIDING))


@functools.lru_cache(maxsize=8)
def _proxies_while(deciding: tuple[str | None, ...]) -> Mapping[str, str]:
    """The environment's proxies, read once for each set of values of the deciding variables."""
    return MappingProxyType(urllib.request.getproxies_environment())


def proxy_for(url: str, proxies: Mapping[str, str] | None = None) -> str | None:
    """The proxy's URL to reach ``url`` through, or None to go direct: none is set for its scheme, or
    NO_PROXY names its host (a name, a domain suffix, an address, host:port, or "*")."""
    proxies = environment_proxies() if proxies is None else proxies
    parts = urlsplit(url)
    scheme = _SCHEME_FOR_PROXY.get(parts.scheme, parts.scheme)
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or not parts.hostname:
        return None
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if _bypassed(host, dict(proxies)):
        return None
    return proxy


def as_http(url: str) -> str:
    """A websocket URL's HTTP twin (ws → http, wss → https), which its handshake is."""
    parts = urlsplit(url)
    scheme = _SCHEME_FOR_PROXY.get(parts.scheme)
    return parts._replace(scheme=scheme).geturl() if scheme else url


class RoutedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request through the proxy ``proxy_for`` picks for its URL,
    or direct: one connection pool per route, kept for the client's life. The client's own proxy
    reading is off (``trust_env=False`` where it is used), so httpx's rules never differ from these."""

    def __init__(self, *, verify: ssl.SSLContext | bool = True, limits: httpx.Limits | None = None) -> None:
        self._verify = verify
        self._limits = limits or httpx.Limits()
        self._routes: dict[str | None, httpx.AsyncHTTPTransport] = {}

    def _route(self, proxy: str | None) -> httpx.AsyncHTTPTransport:
        transport = self._routes.get(proxy)
        if transport is None:
            transport = httpx.AsyncHTTPTransport(verify=self._verify, limits=self._limits, proxy=proxy)
            self._routes[proxy] = transport
        return transport

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._route(proxy_for(str(request.url))).handle_async_request(request)

    async def aclose(self) -> None:
        routes, self._routes = list(self._routes.values()), {}
        for transport in routes:
            await transport.aclose()
