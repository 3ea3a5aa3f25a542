"""Settings of the OpenID provider the single sign-on tests run (django-oidc-provider, its own process
and database: tests/support/oidc_provider/__init__.py starts it). Not Kourier's."""

import os
from pathlib import Path

SECRET_KEY = "the test provider's own key"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SITE_URL = os.environ["OIDC_PROVIDER_SITE_URL"]  # its issuer is SITE_URL + /openid
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oidc_provider",
    "tests.support.oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tests.support.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["OIDC_PROVIDER_DATABASE"]}
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"

OIDC_USERINFO = "tests.support.oidc_provider.claims.userinfo"
OIDC_EXTRA_SCOPE_CLAIMS = "tests.support.oidc_provider.claims.GroupsClaims"
OIDC_IDTOKEN_PROCESSING_HOOK = "tests.support.oidc_provider.claims.as_quirks_say"

# Browsers keep cookies per host, not per port: Kourier's on 127.0.0.1 would be overwritten by these.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"
