"""Settings, all read from the environment (see .env.example for every variable)."""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from kourier import tracing

BASE_DIR = Path(__file__).resolve().parent.parent

# Used only when DEBUG is on; a system check refuses it otherwise.
INSECURE_DEFAULT_SECRET_KEY = "insecure-development-key-do-not-use-in-production"

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]"]),
    LOG_LEVEL=(str, "INFO"),
    LOG_FORMAT=(str, ""),
    SLACK_API_URL=(str, "https://slack.com/api/"),
    SLACK_CALL_BUDGETS=(bool, True),
    SLACK_CALL_LIMITS=(str, ""),
    SLACK_STREAM_WAIT_SECONDS=(float, 5.0),
    SLACK_UPDATE_WAIT_SECONDS=(float, 10.0),
    SLACK_REACTION_WAIT_SECONDS=(float, 2.0),
    SIMULATOR=(str, "auto"),
    SIMULATOR_PORT=(int, 0),
    A2A_CONNECT_TIMEOUT=(float, 5.0),
    KAGENT_GRPC_PORT=(int, 8084),
    A2A_READ_TIMEOUT=(float, 300.0),
    A2A_REQUEST_TIMEOUT=(float, 3600.0),
    SESSION_LEASE_SECONDS=(int, 60),
    BINDINGS_CACHE_SECONDS=(float, 5.0),
    HOME_TAB_REFRESH_SECONDS=(float, 15.0),
    AGENT_CARD_SECONDS=(float, 60.0),
    RECOVERY_INTERVAL_SECONDS=(float, 30.0),
    WORKER_MAX_SESSIONS=(int, 1000),
    WORKER_DATABASE_THREADS=(int, 8),
    INGRESS_DATABASE_THREADS=(int, 2),
    WORKER_SHUTDOWN_SECONDS=(float, 10.0),
    EMBEDDED_REDIS_PORT=(int, 6399),
    SECURE_SSL_REDIRECT=(bool, False),
    SESSION_COOKIE_SECURE=(bool, False),
    CSRF_COOKIE_SECURE=(bool, False),
    SECURE_HSTS_SECONDS=(int, 0),
    SECURE_HSTS_INCLUDE_SUBDOMAINS=(bool, False),
    SECURE_HSTS_PRELOAD=(bool, False),
    SECURE_PROXY_SSL_HEADER=(str, ""),
    OIDC_ISSUER=(str, ""),
    OIDC_CLIENT_ID=(str, ""),
    OIDC_CLIENT_SECRET=(str, ""),
    OIDC_PROVIDER_NAME=(str, ""),
    OIDC_SCOPES=(list, ["openid", "email", "profile"]),
    OIDC_USERNAME_CLAIM=(str, "email"),
    OIDC_GROUPS_CLAIM=(str, "groups"),
    OIDC_STAFF_GROUPS=(list, []),
    OIDC_SUPERUSER_GROUPS=(list, []),
    OIDC_DECIDE_GROUPS=(list, []),
    OIDC_SESSION_SECONDS=(int, 8 * 3600),
    ADMIN_PASSWORD_LOGIN=(bool, True),
)
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

# Local state of the embedded default: the SQLite database, the private Redis's data, the secret key.
VAR_DIR = Path(env("KOURIER_VAR_DIR", default=str(BASE_DIR / "var")))

# The private Redis-compatible server that the launcher starts when REDIS_URL is not set.
EMBEDDED_REDIS_PORT = env("EMBEDDED_REDIS_PORT")
EMBEDDED_REDIS_URL = f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0"

DEBUG = env("DEBUG")
_SECRET_KEY_FILE = VAR_DIR / "secret_key"  # made once by `make serve`
SECRET_KEY = env("SECRET_KEY", default="") or (
    _SECRET_KEY_FILE.read_text().strip() if _SECRET_KEY_FILE.exists() else INSECURE_DEFAULT_SECRET_KEY
)
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Behind TLS (README, "Production settings"). All off by default: `make serve` answers plain HTTP on
# 127.0.0.1. Behind a proxy that terminates TLS, SECURE_PROXY_SSL_HEADER names the header by which it
# says the client used https (X-Forwarded-Proto); set it only when that proxy overwrites the header,
# or a client could claim https itself.
SECURE_SSL_REDIRECT = env("SECURE_SSL_REDIRECT")
# The probes of an orchestrator and Prometheus' scrapes call the process directly, over plain HTTP: a
# redirect would fail them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SESSION_COOKIE_SECURE = env("SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = env("CSRF_COOKIE_SECURE")
SECURE_HSTS_SECONDS = env("SECURE_HSTS_SECONDS")
SECURE_HSTS_INCLUDE_SUBDOMAINS = env("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env("SECURE_HSTS_PRELOAD")
_forwarded_proto_header = env("SECURE_PROXY_SSL_HEADER")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _forwarded_proto_header.upper().replace("-", "_"), "https")
    if _forwarded_proto_header
    else None
)

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'kourier.sqlite3'}")}
if "ENGINE" not in DATABASES["default"]:  # set, but empty or with no known scheme
    raise ImproperlyConfigured(
        "DATABASE_URL is not a database URL (postgres://USER:PASSWORD@HOST:5432/NAME)."
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so that the processes an end-to-end test starts share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_kourier.sqlite3")}
    # WAL lets the web process read while a worker writes; the timeout rides out short write locks.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
else:
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)

REDIS_URL = env("REDIS_URL", default=EMBEDDED_REDIS_URL)
REDIS_IS_EMBEDDED = "REDIS_URL" not in env.ENVIRON

SLACK_API_URL = env("SLACK_API_URL")
# Slack's budgets, shared by every process through Redis (kourier/slack/budgets.py): a call waits
# its turn in its (workspace, method) budget instead of drawing a 429. SLACK_CALL_LIMITS changes a
# method's from Slack's published tier ("chat.update=40/60,chat.postMessage=1/1/channel").
# SLACK_CALL_BUDGETS=false: only 429s are waited out and every chat reply streams (the naive bridge).
SLACK_CALL_BUDGETS = env("SLACK_CALL_BUDGETS")
SLACK_CALL_LIMITS = env("SLACK_CALL_LIMITS")
# A chat reply streams when a stream start is free within SLACK_STREAM_WAIT_SECONDS; else it is posted
# and updated when an update is free within SLACK_UPDATE_WAIT_SECONDS; else posted once, final
# (docs/manifests.md, "How a reply is shown under Slack's budgets"). The acknowledgment's reaction
# is added when reactions.add is free within SLACK_REACTION_WAIT_SECONDS, else skipped (the turn is
# not held up for it); it is removed when reactions.remove is free within as long, else the sweep
# removes it later.
SLACK_STREAM_WAIT_SECONDS = env("SLACK_STREAM_WAIT_SECONDS")
SLACK_UPDATE_WAIT_SECONDS = env("SLACK_UPDATE_WAIT_SECONDS")
SLACK_REACTION_WAIT_SECONDS = env("SLACK_REACTION_WAIT_SECONDS")
# The workspace simulator (simulator): a local Slack with #demo bound to the demo agent, which
# `manage.py serve` runs beside the service. auto: when no Slack app is configured (no SLACK_BOT_TOKEN,
# and no Connection whose bot token variable is set); on: always; off: never. Never in production:
# `manage.py check --deploy` fails while it runs.
SIMULATOR = env("SIMULATOR").strip().lower()
# Set by `manage.py serve` for its processes while it runs the simulator: the fake's address, where
# the page at /simulator/ forwards to. Not a setting to set by hand.
SIMULATOR_URL = env("SIMULATOR_URL", default="")
# Set by `manage.py serve` beside SIMULATOR_URL, made for the run: the page forwards it, and the
# simulator answers only requests that carry it. Not a setting to set by hand.
SIMULATOR_TOKEN = env("SIMULATOR_TOKEN", default="")
# Where the simulator's Web API listens on 127.0.0.1 (0: a free port).
SIMULATOR_PORT = env("SIMULATOR_PORT")
A2A_CONNECT_TIMEOUT = env("A2A_CONNECT_TIMEOUT")
# kagent 1.0's controller takes feedback on its gRPC API, on this port of the controller's host
# (kourier/a2a/kagent_feedback.py); its HTTP port is the Binding's spec.agent.kagent.controller.
KAGENT_GRPC_PORT = env("KAGENT_GRPC_PORT")
A2A_READ_TIMEOUT = env("A2A_READ_TIMEOUT")
A2A_REQUEST_TIMEOUT = env("A2A_REQUEST_TIMEOUT")
# A runner holds its session this long between renewals; a dead runner's session is taken over after it.
SESSION_LEASE_SECONDS = env("SESSION_LEASE_SECONDS")
# Each worker process runs its sessions on one event loop (sessions/turn_loop.py): at most this many at
# once, their database calls on this many threads; on SIGTERM it waits this long for them to let go.
WORKER_MAX_SESSIONS = env("WORKER_MAX_SESSIONS")
WORKER_DATABASE_THREADS = env("WORKER_DATABASE_THREADS")
WORKER_SHUTDOWN_SECONDS = env("WORKER_SHUTDOWN_SECONDS")
# Threads (each with its database connection) a web process routes Slack's events on, on PostgreSQL:
# two overlap one event's round trip with the next one's work (docs/performance.md, "Point 10");
# more contend for the GIL. SQLite takes one writer at a time, so it always has one.
INGRESS_DATABASE_THREADS = env("INGRESS_DATABASE_THREADS")
# /metrics answers only requests that carry "Authorization: Bearer <METRICS_TOKEN>" when it is set.
METRICS_TOKEN = env("METRICS_TOKEN", default="")
# The key the audit's hash chain is kept with (HMAC-SHA256), outside the database: someone who can
# write the table but does not hold it can neither change a row nor append one that verifies. Every
# process that writes the audit needs the same one; `check --deploy` fails without it (docs/security.md).
AUDIT_KEY = env("AUDIT_KEY", default="")
# The environment variables a Binding's agent headers may read ({fromEnv: NAME}): names, or prefixes
# ending in "*". Empty: none. So that editing a Binding cannot send the service's own secrets
# (SECRET_KEY, DATABASE_URL, a bot token) to an agent URL; apply and the admin refuse any other name.
AGENT_HEADER_VARIABLES = env.list("AGENT_HEADER_VARIABLES", default=[])
# The directories whose files a secret reference may read ({fromFile: /path}, issue 34 point 3): a
# Connection's tokens and signing secret and a trigger's token only inside SECRET_FILE_DIRECTORIES
# (a mounted Kubernetes Secret: /var/run/secrets/kourier), an agent header only inside
# AGENT_HEADER_FILE_DIRECTORIES; the two never overlap. Empty: no file may be read.
SECRET_FILE_DIRECTORIES = env.list("SECRET_FILE_DIRECTORIES", default=[])
AGENT_HEADER_FILE_DIRECTORIES = env.list("AGENT_HEADER_FILE_DIRECTORIES", default=[])
# A worker, beat or Socket Mode process with no web process beside it (a pod of its own) serves its
# own /metrics on this port (kourier/metrics_endpoint.py); unset, it serves none (`make serve`: the
# web processes add up every process's metrics).
_metrics_port = env("METRICS_PORT", default="")
METRICS_PORT: int | None = int(_metrics_port) if _metrics_port else None
# Where the processes of one host write their metrics for /metrics to add up (kourier/metrics.py);
# prometheus_client reads the variable itself, at import. `manage.py serve` makes var/metrics.
PROMETHEUS_MULTIPROC_DIR = env("PROMETHEUS_MULTIPROC_DIR", default="")
# Slack ingress reads Connections and Bindings from a per-process snapshot this old at most
# (bindings/directory.py): an admin edit reaches every web process within this many seconds.
BINDINGS_CACHE_SECONDS = env("BINDINGS_CACHE_SECONDS")
# A worker reads each agent's card once in this many seconds, not once a turn (kourier/a2a/factory.py):
# a card the agent changed is seen within it, or at once after a request that failed.
AGENT_CARD_SECONDS = env("AGENT_CARD_SECONDS")
# The Home tabs of a Connection opened in the last hour are published again this long after an approval
# was put to a thread or ended (interactions/home.py): at most 20 every so often, within views.publish's
# Tier 4 (100 a minute per workspace).
HOME_TAB_REFRESH_SECONDS = env("HOME_TAB_REFRESH_SECONDS")

# Single sign-on for the admin with OpenID Connect (kourier/sso/; docs/operations.md, "Single sign-on"),
# off while OIDC_ISSUER is empty. The provider's endpoints come from its discovery document. Users are
# made at their first sign-in, named by OIDC_USERNAME_CLAIM; their roles follow the groups named in
# OIDC_GROUPS_CLAIM at every sign-in, and a signed-in session lasts OIDC_SESSION_SECONDS at most.
OIDC_ISSUER = env("OIDC_ISSUER").strip()
OIDC_CLIENT_ID = env("OIDC_CLIENT_ID").strip()
OIDC_CLIENT_SECRET = env("OIDC_CLIENT_SECRET")
# Shown on the login page: "Sign in with <OIDC_PROVIDER_NAME>" (default: the issuer's host).
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME").strip()
OIDC_SCOPES = env("OIDC_SCOPES")
OIDC_USERNAME_CLAIM = env("OIDC_USERNAME_CLAIM").strip()
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM").strip()
OIDC_STAFF_GROUPS = env("OIDC_STAFF_GROUPS")
OIDC_SUPERUSER_GROUPS = env("OIDC_SUPERUSER_GROUPS")
OIDC_DECIDE_GROUPS = env("OIDC_DECIDE_GROUPS")
OIDC_SESSION_SECONDS = env("OIDC_SESSION_SECONDS")
# Off: the admin's password form is gone and no password signs anyone in (the users and their
# passwords stay, for when it is turned on again). Only with single sign-on: a check refuses it without.
ADMIN_PASSWORD_LOGIN = env("ADMIN_PASSWORD_LOGIN")
AUTHENTICATION_BACKENDS = [
    *(["django.contrib.auth.backends.ModelBackend"] if ADMIN_PASSWORD_LOGIN or not OIDC_ISSUER else []),
    *(["kourier.sso.backend.OIDCBackend"] if OIDC_ISSUER else []),
]

INSTALLED_APPS = [
    "daphne",
    "kourier.admin_config.KourierAdminConfig",  # django.contrib.admin, with our site (kourier/admin_site.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "kourier",
    "bindings",
    "sessions.apps.SessionsConfig",
    "interactions",
    "audit",
    "alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "kourier.urls"
ASGI_APPLICATION = "kourier.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# The admin's few static files are served from the installed apps directly, with no collectstatic
# step, unless STATIC_ROOT is set: the container image collects them there when it is built.
STATIC_ROOT = env("STATIC_ROOT", default="") or None
WHITENOISE_USE_FINDERS = STATIC_ROOT is None
WHITENOISE_AUTOREFRESH = False
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        # Django's Redis cache, with one redis-py client per pool instead of one per command.
        "BACKEND": "kourier.shared_cache.ClientKeepingRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": env("CACHE_KEY_PREFIX", default="kourier"),
    }
}

CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_DEFAULT_QUEUE = env("CELERY_QUEUE", default="kourier")
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged only once it has run, so a worker killed mid-task leaves it for another.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# The product's LOGGING (JSON lines) applies in workers too.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# How often beat runs a sweep that names no interval of its own. Beat's schedule is made from the
# sweeps' registrations (kourier/sweeps.py, kourier/celery.py), not written here.
RECOVERY_INTERVAL_SECONDS = env("RECOVERY_INTERVAL_SECONDS")

LOG_LEVEL = env("LOG_LEVEL").upper()
# JSON lines in production; readable lines while developing (DEBUG on) unless LOG_FORMAT says otherwise.
LOG_FORMAT = env("LOG_FORMAT") or ("text" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s %(extra_fields)s"},
    },
    "filters": {
        "credentials": {"()": "kourier.logging.CredentialsFilter"},
        "extra_fields": {"()": "kourier.logging.ExtraFieldsFilter"},
        "quiet_sweeps": {"()": "kourier.logging.QuietSweepsFilter"},
        "trace_ids": {"()": "kourier.tracing.TraceIdsFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            # No URL's credentials in any line; readable lines (make serve) also leave out the sweeps
            # that did nothing. With traces on, each line names its trace and span (kourier/tracing.py).
            "filters": (["trace_ids"] if tracing.wanted() else [])
            + (["credentials", "extra_fields", "quiet_sweeps"] if LOG_FORMAT == "text" else ["credentials"]),
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}
