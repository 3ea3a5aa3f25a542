"""The redaction corpus: real-looking keys of the formats tools are handed (all made up), and a way
to find any of them in what the product wrote.

``CORPUS`` maps a format to a value as a tool's argument may hold it; ``SECRETS`` to the part of it
that must never be shown (the whole value unless it says otherwise: a URL keeps its user and host).
The comparison of detectors on it is ``bench/redaction_corpus.py`` (docs/redaction.md).
"""

from __future__ import annotations

A = "Ab3dE5fG7hJ9kL2mN4pQ6rS8tU1vW3xY5zA7bC9dE"
CORPUS = {
    "slack bot token": "xoxb-" + "2048576123-4096123456789-" + A[:24],
    "slack app token": "xapp-1-A0123456789-1234567890123-" + A[:32],
    "slack webhook": "https://hooks.slack.com/services/T0123ABCD/B0123ABCD/" + A[:24],
    "github pat": "ghp_" + A[:36],
    "github fine-grained": "github_pat_11ABCDEFG0" + A[:30] + "_" + A[:20],
    "aws access key id": "AKIA" + "IOSFODNN7EXAMPLQ",
    "openai key": "sk-proj-" + A[:40],
    "anthropic key": "sk-ant-api03-" + A[:40],
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + A[:30],
    "pem private key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + A + "\n-----END RSA PRIVATE KEY-----",
    "url password": "postgres://app:" + A[:16] + "@db.internal:5432/app",
    "bearer header": "Authorization: Bearer " + A[:32],
    "stripe live key": "sk_live_" + A[:24],
    "stripe restricted": "rk_live_" + A[:24],
    "sendgrid": "SG." + A[:22] + "." + A[:43],
    "google api key": "AIza" + "SyD" + A[:32],
    "gitlab pat": "glpat-" + A[:20],
    "npm token": "npm_" + A[:36],
    "pypi token": "pypi-AgEIcHlwaS5vcmc" + A * 2,
    "twilio api key": "SK" + "0123456789abcdef0123456789abcdef",
    "mailchimp": "0123456789abcdef0123456789abcdef-us12",
    "discord bot token": "MTA" + "xMjM0NTY3ODkwMTIzNDU2Nzg5.GAbCdE." + A[:27],
    "telegram bot token": "123456789:" + "AAE" + A[:32],
    "azure storage key": "AccountKey=" + A + A[:46] + "==",
    "square token": "EAAA" + A[:60],
    "password assignment": "db_password=" + A[:20],
}
SECRETS = {
    **CORPUS,
    "slack webhook": CORPUS["slack webhook"].removeprefix("https://hooks.slack.com/services/"),
    "pem private key": "MIIEow" + A,
    "url password": A[:16],
    "bearer header": A[:32],
    "azure storage key": A + A[:46] + "==",
    "password assignment": A[:20],
}
# Values tools are handed that hold no secret: redaction must leave them exactly as they are.
PLAIN_VALUES = [
    "kubectl get pods -n payments --field-selector=status.phase=Running",
    "https://status.example.com/api/v2/incidents?page=2&limit=50",
    "/var/log/nginx/access.log",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' LIMIT 50",
    "3f2b8c1e9d4a7f6b5c0e1d2a3b4c5d6e7f8a9b0c",  # a commit
    "123e4567-e89b-12d3-a456-426614174000",
    "nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "payments-api-7d9f8b6c5d-x2x9k",
    "projects/my-project/locations/us-central1/clusters/prod-cluster-01",
    "arn:aws:iam::123456789012:role/deploy",
    "8.8.8.8",
    "2024-06-01T12:30:00Z",
    "ada@example.com",
    "C0123ABCD",
    "1700000000.000100",
    "The deploy of payments-api to production failed at step 3 of 7; rolling back.",
    "author: Ada Lovelace, max_tokens=512",
]
# A run of this many characters of a secret is a leak, though the rest of it was redacted.
LEAK_RUN = 12


def leaked(text: str) -> list[str]:
    """The formats of the corpus a part of whose secret (``LEAK_RUN`` characters in a row) is in ``text``.

    Many keys are built from the same random string, so a leak of one names every format it shares a
    run with; the list is empty only when nothing leaked."""
    return [
        name
        for name, secret in SECRETS.items()
        if any(secret[start : start + LEAK_RUN] in text for start in range(len(secret) - LEAK_RUN + 1))
    ]
