"""The redaction corpus: real-looking keys of the formats tools are handed, and a comparison of the
hand-kept patterns (kourier/redaction.py) with detect-secrets' plugins on them (docs/redaction.md).

Run: .venv/bin/python bench/redaction_corpus.py  (detect-secrets installed for the comparison only)."""

from __future__ import annotations

import time

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


def hand_kept_catches() -> dict[str, bool]:
    from kourier.redaction import REDACTED, redact_text

    return {
        name: REDACTED in redact_text(f"value: {key}") and key not in redact_text(key)
        for name, key in CORPUS.items()
    }


def detect_secrets_catches() -> dict[str, bool]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    with default_settings():
        return {name: any(True for _ in scan_line(key.replace("\n", " "))) for name, key in CORPUS.items()}


def cost_per_prompt(fn, runs: int = 20) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        fn()
    return (time.perf_counter() - start) / runs * 1000 / len(CORPUS) * 10  # ms for a 10-argument prompt


if __name__ == "__main__":
    import django

    django.setup()
    hand = hand_kept_catches()
    detected = detect_secrets_catches()
    for name in CORPUS:
        print(
            f"{name:24} hand-kept={'yes' if hand[name] else 'no ':3} detect-secrets={'yes' if detected[name] else 'no'}"
        )
    print(
        f"caught: hand-kept {sum(hand.values())}/{len(CORPUS)}, detect-secrets {sum(detected.values())}/{len(CORPUS)}"
    )
    print(
        f"cost of a 10-argument prompt: hand-kept {cost_per_prompt(hand_kept_catches):.2f} ms, "
        f"detect-secrets {cost_per_prompt(detect_secrets_catches, 3):.2f} ms"
    )
