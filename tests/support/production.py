"""The production settings of the README ("Production settings"), as the environment gives them.

With them `manage.py check --deploy` reports nothing; deploy/kubernetes/base/config.yaml sets the same
TLS settings.
"""

import secrets

# Behind an Ingress or load balancer that ends TLS and says so in X-Forwarded-Proto.
BEHIND_TLS = {
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECURE_SSL_REDIRECT": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
}

PUBLIC_HOST = "kourier.example.com"


def production_settings() -> dict[str, str]:
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": PUBLIC_HOST,
        "METRICS_TOKEN": secrets.token_urlsafe(32),
        "SIMULATOR": "off",
        "AUDIT_KEY": secrets.token_urlsafe(50),
        **BEHIND_TLS,
    }
