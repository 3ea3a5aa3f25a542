"""The real web process with the production settings behind TLS (README, "Production settings"): the
orchestrator's probes still answer over plain HTTP, everything else of Django is sent to https, and
what comes through the TLS proxy gets HSTS and secure cookies."""

import httpx
import pytest

from tests.support.production import PUBLIC_HOST, production_settings

pytestmark = pytest.mark.slow

# The address the kubelet's probes put in the Host header: the pod's own IP, which the web Deployment
# adds to ALLOWED_HOSTS (deploy/kubernetes/base/web.yaml). Here the process listens on 127.0.0.1.
POD_IP = "127.0.0.1"


@pytest.fixture
def web(start_stack) -> str:
    stack = start_stack(env={**production_settings(), "ALLOWED_HOSTS": f"{PUBLIC_HOST},{POD_IP}"}, workers=0)
    return stack.base_url


@pytest.mark.parametrize("probe", ["/healthz", "/readyz"])
def test_the_probes_answer_over_plain_http(web, probe):
    response = httpx.get(web + probe)

    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_the_admin_over_plain_http_is_sent_to_https(web):
    response = httpx.get(web + "/admin/login/")

    assert response.status_code == 301
    assert response.headers["location"] == web.replace("http://", "https://") + "/admin/login/"


def test_the_admin_through_the_tls_proxy_has_hsts_and_secure_cookies(web):
    response = httpx.get(web + "/admin/login/", headers={"Host": PUBLIC_HOST, "X-Forwarded-Proto": "https"})

    assert response.status_code == 200
    assert response.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    [csrf_cookie] = response.headers.get_list("set-cookie")
    assert csrf_cookie.startswith("csrftoken=")
    assert "; Secure" in csrf_cookie
