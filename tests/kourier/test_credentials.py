"""A URL's credentials kept out of what people see (kourier/credentials.py)."""

import pytest

from kourier.credentials import kept_credentials, without_credentials


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://user:pass@host.example/a", "https://***@host.example/a"),
        ("https://token@host.example", "https://***@host.example"),
        ("HTTP://u:p%40ss@host.example:8080/x?y=1", "HTTP://***@host.example:8080/x?y=1"),
        (
            "POST http://a:b@one.example/ then https://c:d@two.example/",
            "POST http://***@one.example/ then https://***@two.example/",
        ),
        ("https://***@host.example/", "https://***@host.example/"),
        (
            "https://host.example/path?email=ada@example.com",
            "https://host.example/path?email=ada@example.com",
        ),
        ("https://host.example/a@b", "https://host.example/a@b"),
        ("write to ada@example.com", "write to ada@example.com"),
        ("", ""),
    ],
)
def test_every_urls_user_and_password_are_masked_and_nothing_else(text, shown):
    assert without_credentials(text) == shown


@pytest.mark.parametrize(
    ("submitted", "kept"),
    [
        ("https://***@host.example/a", "https://u:p@host.example/a"),  # as the form showed it
        ("https://host.example/a", "https://host.example/a"),  # the credentials taken out
        ("https://v:q@host.example/a", "https://v:q@host.example/a"),  # new ones typed
        ("https://***@other.example/", "https://***@other.example/"),  # elsewhere: the form refuses it
    ],
)
def test_a_url_submitted_as_the_form_showed_it_keeps_the_stored_credentials(submitted, kept):
    assert kept_credentials(submitted, "https://u:p@host.example/a") == kept
