from django.test import override_settings

from kourier.a2a.factory import make_client


@override_settings(A2A_CONNECT_TIMEOUT=1.5, A2A_READ_TIMEOUT=20.0, A2A_REQUEST_TIMEOUT=600.0)
def test_timeouts_come_from_settings():
    client = make_client(
        "http://agent/", headers={"Authorization": "Bearer x"}, protocol_version="1.0", extensions=["urn:x"]
    )
    assert (client.connect_timeout, client.read_timeout, client.request_timeout) == (1.5, 20.0, 600.0)
    assert (client.url, client.protocol_version, client.extensions) == ("http://agent/", "1.0", ("urn:x",))
