"""Which environment variables a secret reference may read: a Connection's bot token, signing secret and
app token, and a trigger's token (issue 32, point 5), and which files (issue 34, point 3). Pure: it
reads the settings, not the database.

A file (``{fromFile: /path}``) follows the same rules by directory: a Connection's or trigger's secret
only inside SECRET_FILE_DIRECTORIES, an agent header's only inside AGENT_HEADER_FILE_DIRECTORIES, and
never one of the other's.

Whoever can point a Connection's signing secret at a variable whose value they know can sign
requests as Slack, and so act as any user; a trigger's token likewise opens alert threads. So these
read only a variable named as a secret is, ending in ``_TOKEN`` or ``_SECRET`` (``SLACK_BOT_TOKEN``,
``SLACK_SIGNING_SECRET``, ``OPS_TRIGGER_TOKEN``), never one of the service's own secrets, never one
an agent header may read (the agent would know its value); and a variable holds one kind of secret:
a Connection's is never a trigger's token, whose alert source knows it. A public variable (``PATH``,
``HOME``, ``HOSTNAME``, ``DATABASE_URL``, Kubernetes' ``KUBERNETES_*``) is none of these.

``apply`` and the admin refuse such a reference (``refuse_unfit``); the models check the naming rule
again at every read (``Connection.signing_secret`` and the others), so a row written around them is
never used.
"""

from __future__ import annotations

from collections.abc import Iterator, Set

from django.conf import settings

from bindings import manifest
from bindings.manifest import Problem, Validation, secret_refs

SUFFIXES = ("_TOKEN", "_SECRET")

# Never readable by an agent header or a secret reference, whatever the settings say: the service's own.
SERVICE_SECRET_VARIABLES = frozenset(
    {
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "METRICS_TOKEN",
        "DJANGO_SUPERUSER_PASSWORD",
        "AUDIT_KEY",
        "OIDC_CLIENT_SECRET",
    }
)

NOT_NAMED_AS_A_SECRET = (
    "is not named as a secret is: a Connection's tokens and signing secret and a trigger's token read "
    "only a variable whose name ends in _TOKEN or _SECRET, such as SLACK_SIGNING_SECRET"
)
A_SERVICE_SECRET = "is one of the service's own secrets, which no Connection or trigger may read"
AN_AGENT_HEADERS = "is a variable agent headers may read (AGENT_HEADER_VARIABLES), so an agent may know it"
A_TRIGGERS_TOKEN = (
    "is a trigger's token, which its alert source knows: give the Connection a variable of its own"
)
A_CONNECTIONS_SECRET = "is a Connection's secret: give the trigger a variable of its own"


NOT_IN_SECRET_DIRECTORIES = (
    "is not in a directory secrets may be read from: a Connection's tokens and signing secret and a "
    "trigger's token read only files inside SECRET_FILE_DIRECTORIES"
)
AN_AGENT_HEADERS_FILE = (
    "is in a directory agent headers may read (AGENT_HEADER_FILE_DIRECTORIES), so an agent may know it"
)
NOT_IN_HEADER_DIRECTORIES = (
    "is not in a directory agent headers may read: list its directory in AGENT_HEADER_FILE_DIRECTORIES"
)
A_SECRETS_FILE = "is in a directory of Connections' and triggers' secrets (SECRET_FILE_DIRECTORIES)"


def why_unfit(variable: str) -> str | None:
    """Why a secret reference may not read ``variable`` (a variable's name or a file's path), or None
    when it may."""
    if secret_refs.is_file(variable):
        if secret_refs.within(variable, settings.AGENT_HEADER_FILE_DIRECTORIES):
            return AN_AGENT_HEADERS_FILE
        if not secret_refs.within(variable, settings.SECRET_FILE_DIRECTORIES):
            return NOT_IN_SECRET_DIRECTORIES
        return None
    if variable in SERVICE_SECRET_VARIABLES:
        return A_SERVICE_SECRET
    if not variable.endswith(SUFFIXES):
        return NOT_NAMED_AS_A_SECRET
    if manifest.header_variable_allowed(variable, settings.AGENT_HEADER_VARIABLES):
        return AN_AGENT_HEADERS
    return None


def why_unfit_header_file(path: str) -> str | None:
    """Why an agent header may not read the file at ``path``, or None when it may: only inside
    AGENT_HEADER_FILE_DIRECTORIES, never inside SECRET_FILE_DIRECTORIES."""
    if secret_refs.within(path, settings.SECRET_FILE_DIRECTORIES):
        return A_SECRETS_FILE
    if not secret_refs.within(path, settings.AGENT_HEADER_FILE_DIRECTORIES):
        return NOT_IN_HEADER_DIRECTORIES
    return None


def _connection_secrets(spec: manifest.ConnectionSpec) -> Iterator[tuple[str, str]]:
    """(path, variable) of each of the Connection's secrets."""
    yield f"spec.botToken.{secret_refs.source(spec.bot_token_env)}", spec.bot_token_env
    yield f"spec.signingSecret.{secret_refs.source(spec.signing_secret_env)}", spec.signing_secret_env
    if spec.app_token_env:
        yield f"spec.appToken.{secret_refs.source(spec.app_token_env)}", spec.app_token_env


def refuse_unfit(
    validation: Validation, *, connection_secrets: Set[str], trigger_tokens: Set[str]
) -> Validation:
    """Refuses every resource with a secret reference it may not read. ``connection_secrets`` and
    ``trigger_tokens`` are the variables the database's other Connections and Bindings read (those of
    the validation are added here)."""
    connection_secrets = set(connection_secrets) | {
        variable for spec in validation.connections for _, variable in _connection_secrets(spec)
    }
    trigger_tokens = set(trigger_tokens) | {
        trigger.token_env for spec in validation.bindings for trigger in spec.triggers
    }
    refused: set[tuple[str, str]] = set()

    def refuse(kind: manifest.Kind, name: str, path: str, variable: str, why: str) -> None:
        refused.add((kind.value, name))
        validation.errors.append(Problem(manifest.subject_for(kind.value, name), path, f"{variable} {why}"))

    for connection in validation.connections:
        for path, variable in _connection_secrets(connection):
            why = why_unfit(variable) or (A_TRIGGERS_TOKEN if variable in trigger_tokens else None)
            if why:
                refuse(manifest.Kind.CONNECTION, connection.name, path, variable, why)
    for binding in validation.bindings:
        for index, trigger in enumerate(binding.triggers):
            variable = trigger.token_env
            why = why_unfit(variable) or (A_CONNECTIONS_SECRET if variable in connection_secrets else None)
            if why:
                refuse(
                    manifest.Kind.BINDING,
                    binding.name,
                    f"spec.triggers[{index}].token.{secret_refs.source(variable)}",
                    variable,
                    why,
                )
    validation.connections = [
        spec for spec in validation.connections if (manifest.Kind.CONNECTION.value, spec.name) not in refused
    ]
    validation.bindings = [
        spec for spec in validation.bindings if (manifest.Kind.BINDING.value, spec.name) not in refused
    ]
    return validation
