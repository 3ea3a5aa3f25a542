"""Start-up checks of the settings, with messages that say what to change."""

import os

from django.conf import settings
from django.core.checks import Error, Tags, register


@register(Tags.security, deploy=False)
def check_secret_key(app_configs, **kwargs):
    if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_DEFAULT_SECRET_KEY:
        return [
            Error(
                "SECRET_KEY is not set and DEBUG is off.",
                hint="Set SECRET_KEY to a long random value (or DEBUG=true for local development only).",
                id="kourier.E001",
            )
        ]
    return []


@register()
def check_slack_api_url(app_configs, **kwargs):
    if not settings.SLACK_API_URL.startswith(("http://", "https://")) or not settings.SLACK_API_URL.endswith(
        "/"
    ):
        return [
            Error(
                f"SLACK_API_URL must be an http(s) URL ending in '/', got {settings.SLACK_API_URL!r}.",
                hint="The default is https://slack.com/api/.",
                id="kourier.E002",
            )
        ]
    return []


@register()
def check_worker_limits(app_configs, **kwargs):
    errors = []
    for name in ("WORKER_MAX_SESSIONS", "WORKER_DATABASE_THREADS", "SESSION_LEASE_SECONDS"):
        value = getattr(settings, name)
        if value < 1:
            errors.append(
                Error(
                    f"{name} must be at least 1, got {value}.",
                    hint="Unset it to use the default (see .env.example).",
                    id="kourier.E003",
                )
            )
    if settings.HOME_TAB_REFRESH_SECONDS < 1:
        errors.append(
            Error(
                f"HOME_TAB_REFRESH_SECONDS must be at least 1, got {settings.HOME_TAB_REFRESH_SECONDS}.",
                hint="Unset it to use the default (15): each refresh spends views.publish's budget.",
                id="kourier.E003",
            )
        )
    if settings.WORKER_SHUTDOWN_SECONDS < 0:
        errors.append(
            Error(
                f"WORKER_SHUTDOWN_SECONDS must not be negative, got {settings.WORKER_SHUTDOWN_SECONDS}.",
                hint="Unset it to use the default (see .env.example).",
                id="kourier.E003",
            )
        )
    return errors


@register()
def check_metrics_directory(app_configs, **kwargs):
    directory = settings.PROMETHEUS_MULTIPROC_DIR
    if directory and not (os.path.isdir(directory) and os.access(directory, os.W_OK)):
        return [
            Error(
                f"PROMETHEUS_MULTIPROC_DIR names {directory!r}, which is not a writable directory.",
                hint="Create it, empty, before the processes start (manage.py serve makes var/metrics), "
                "or unset it to run a single process.",
                id="kourier.E004",
            )
        ]
    return []


@register()
def check_trace_sampling(app_configs, **kwargs):
    from kourier import tracing

    problem = tracing.sampling_problem() if tracing.wanted() else ""
    if problem:
        return [
            Error(
                problem,
                hint="Leave OTEL_TRACES_SAMPLER unset to keep every trace, or set "
                "OTEL_TRACES_SAMPLER=parentbased_traceidratio and OTEL_TRACES_SAMPLER_ARG=0.1 to keep a tenth.",
                id="kourier.E047",
            )
        ]
    return []


@register()
def check_agent_header_variables(app_configs, **kwargs):
    import re

    bad = [
        entry
        for entry in settings.AGENT_HEADER_VARIABLES
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\*?", entry)
    ]
    if bad:
        return [
            Error(
                f"AGENT_HEADER_VARIABLES holds {', '.join(repr(entry) for entry in bad)}, which is not a "
                "variable name or a prefix ending in '*'.",
                hint="List names such as OPS_AGENT_TOKEN or prefixes such as AGENT_TOKEN_*, comma-separated.",
                id="kourier.E006",
            )
        ]
    return []


@register()
def check_secret_file_directories(app_configs, **kwargs):
    import posixpath

    named = {
        "SECRET_FILE_DIRECTORIES": settings.SECRET_FILE_DIRECTORIES,
        "AGENT_HEADER_FILE_DIRECTORIES": settings.AGENT_HEADER_FILE_DIRECTORIES,
    }
    errors = []
    for setting, directories in named.items():
        bad = [
            d
            for d in directories
            if not d.startswith("/") or posixpath.normpath(d) != d.rstrip("/") or d == "/"
        ]
        if bad:
            errors.append(
                Error(
                    f"{setting} holds {', '.join(repr(d) for d in bad)}, which is not an absolute "
                    "directory path other than /.",
                    hint="Name directories such as /var/run/secrets/kourier, comma-separated.",
                    id="kourier.E045",
                )
            )

    def overlap(a: str, b: str) -> bool:
        a, b = a.rstrip("/") + "/", b.rstrip("/") + "/"
        return a.startswith(b) or b.startswith(a)

    shared = [
        (secret, header)
        for secret in settings.SECRET_FILE_DIRECTORIES
        for header in settings.AGENT_HEADER_FILE_DIRECTORIES
        if overlap(secret, header)
    ]
    if shared:
        errors.append(
            Error(
                "SECRET_FILE_DIRECTORIES and AGENT_HEADER_FILE_DIRECTORIES overlap "
                f"({', '.join(f'{a} and {b}' for a, b in shared)}): an agent header could send a bot token.",
                hint="Mount the Connections' secrets and the agent headers' in separate directories.",
                id="kourier.E046",
            )
        )
    return errors


@register(Tags.security, deploy=True)
def check_metrics_token(app_configs, **kwargs):
    # Deploy only: a developer's /metrics may stay open; a production one tells every scraper the
    # Bindings' names and the load, so it is closed with a token.
    if not settings.METRICS_TOKEN:
        return [
            Error(
                "METRICS_TOKEN is not set: /metrics would answer anyone who reaches the service.",
                hint="Set METRICS_TOKEN to a long random value and give Prometheus "
                '"Authorization: Bearer <METRICS_TOKEN>" (README, "Metrics").',
                id="kourier.E005",
            )
        ]
    return []


AUDIT_KEY_MIN_LENGTH = 32


@register()
def check_audit_key(app_configs, **kwargs):
    if settings.AUDIT_KEY and len(settings.AUDIT_KEY) < AUDIT_KEY_MIN_LENGTH:
        return [
            Error(
                f"AUDIT_KEY is {len(settings.AUDIT_KEY)} characters long: a key the audit's chain is kept with "
                f"must be at least {AUDIT_KEY_MIN_LENGTH}.",
                hint='Set it to a long random value: python3 -c "import secrets; print(secrets.token_urlsafe(50))".',
                id="kourier.E008",
            )
        ]
    return []


@register(Tags.security, deploy=True)
def check_audit_key_is_set(app_configs, **kwargs):
    # Deploy only: without the key anyone who can write the audit's table can rewrite its chain.
    if not settings.AUDIT_KEY:
        return [
            Error(
                "AUDIT_KEY is not set: the audit's hash chain would be a plain SHA-256, which anyone who "
                "can write its table can recompute after changing or appending rows.",
                hint="Set AUDIT_KEY to a long random value, the same in every process, kept outside the "
                'database (docs/operations.md, "The audit key").',
                id="kourier.E007",
            )
        ]
    return []


SIMULATOR_CHOICES = ("auto", "on", "off")


@register()
def check_simulator(app_configs, **kwargs):
    if settings.SIMULATOR not in SIMULATOR_CHOICES:
        return [
            Error(
                f"SIMULATOR must be auto, on or off, got {settings.SIMULATOR!r}.",
                hint="auto (the default): `make serve` runs the workspace simulator when no Slack app is configured.",
                id="kourier.E020",
            )
        ]
    return []


@register(Tags.security, deploy=True)
def check_simulator_is_off_in_production(app_configs, **kwargs):
    # A simulated Slack in production would take the place of the real one: its bot token and signing
    # secret are made up, and anyone who reaches /simulator/ could act as anyone. Fails whenever it
    # could run: on, running, or auto without SLACK_BOT_TOKEN (`serve` also counts the Connections'
    # variables, which a check, run before the database may be reachable, does not read).
    if settings.SIMULATOR == "on" or settings.SIMULATOR_URL or settings.SIMULATOR_TOKEN:
        message = "The workspace simulator is on: it stands in for Slack and lets anyone act as anyone."
    elif settings.SIMULATOR == "auto" and not os.environ.get("SLACK_BOT_TOKEN"):
        message = (
            "SIMULATOR is auto and SLACK_BOT_TOKEN is not set: `manage.py serve` may run the workspace "
            "simulator, which stands in for Slack and lets anyone act as anyone."
        )
    else:
        return []
    return [
        Error(
            message,
            hint="Set SIMULATOR=off in production (and configure your Slack app); the simulator is "
            "for trying Kourier with `make serve` on your machine.",
            id="kourier.E021",
        )
    ]


SSO_DOC = 'docs/operations.md, "Single sign-on"'


@register(Tags.security)
def check_single_sign_on(app_configs, **kwargs):
    """Single sign-on is off, or configured whole: a half-set one would send people to a provider that
    cannot sign them in, or map groups that nothing reads."""
    from urllib.parse import urlsplit

    errors = []
    issuer = settings.OIDC_ISSUER
    given = {
        name: bool(getattr(settings, name))
        for name in ("OIDC_ISSUER", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET")
    }
    if any(given.values()) and not all(given.values()):
        missing = [name for name, value in given.items() if not value]
        errors.append(
            Error(
                f"Single sign-on is half configured: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                f"not set, while {', '.join(name for name, value in given.items() if value)} "
                f"{'is' if sum(given.values()) == 1 else 'are'}.",
                hint=f"Set OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET together, or none of them ({SSO_DOC}).",
                id="kourier.E040",
            )
        )
    if issuer:
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            errors.append(
                Error(
                    f"OIDC_ISSUER must be the identity provider's issuer, an http(s) URL with no query or "
                    f"fragment, got {issuer!r}.",
                    hint="Its discovery document is read from <OIDC_ISSUER>/.well-known/openid-configuration.",
                    id="kourier.E041",
                )
            )
        if "openid" not in settings.OIDC_SCOPES:
            errors.append(
                Error(
                    f"OIDC_SCOPES must include openid, got {','.join(settings.OIDC_SCOPES)!r}.",
                    hint="The default is openid,email,profile; add the scope your provider puts the groups under.",
                    id="kourier.E042",
                )
            )
        for name in ("OIDC_USERNAME_CLAIM", "OIDC_GROUPS_CLAIM"):
            if not getattr(settings, name):
                errors.append(
                    Error(
                        f"{name} is empty.",
                        hint="Unset it to use the default (see .env.example).",
                        id="kourier.E042",
                    )
                )
        if settings.OIDC_SESSION_SECONDS < 60:
            errors.append(
                Error(
                    f"OIDC_SESSION_SECONDS must be at least 60, got {settings.OIDC_SESSION_SECONDS}.",
                    hint="Unset it to use the default, 8 hours.",
                    id="kourier.E042",
                )
            )
    else:
        mapped = [
            name
            for name in ("OIDC_STAFF_GROUPS", "OIDC_SUPERUSER_GROUPS", "OIDC_DECIDE_GROUPS")
            if getattr(settings, name)
        ]
        if mapped:
            errors.append(
                Error(
                    f"{', '.join(mapped)} {'is' if len(mapped) == 1 else 'are'} set, but single sign-on is off "
                    "(OIDC_ISSUER is not set): no group is mapped to anything.",
                    hint=f"Set OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET ({SSO_DOC}), or unset them.",
                    id="kourier.E043",
                )
            )
        if not settings.ADMIN_PASSWORD_LOGIN:
            errors.append(
                Error(
                    "ADMIN_PASSWORD_LOGIN is off, but single sign-on is off too (OIDC_ISSUER is not set): "
                    "nobody could sign in to the admin.",
                    hint=f"Configure single sign-on ({SSO_DOC}), or unset ADMIN_PASSWORD_LOGIN.",
                    id="kourier.E043",
                )
            )
    return errors


@register(Tags.security, deploy=True)
def check_single_sign_on_over_tls(app_configs, **kwargs):
    # Deploy only: a developer's provider may run on localhost over plain HTTP, a production one may not
    # (its discovery document and keys would be anyone's on the way to change).
    if settings.OIDC_ISSUER.startswith("http://"):
        return [
            Error(
                f"OIDC_ISSUER {settings.OIDC_ISSUER!r} is plain HTTP: the provider's endpoints and signing keys "
                "would be read unprotected.",
                hint="Use the provider's https issuer.",
                id="kourier.E044",
            )
        ]
    return []
