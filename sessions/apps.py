from django.apps import AppConfig


class SessionsConfig(AppConfig):
    """The sessions app, shown as "Sessions". Its label stays ``threads``, what it was first stored
    under ("sessions" is django.contrib.sessions'): the label names its tables, its migrations, its
    permissions and content types, and other apps' migrations depend on it; renaming it would rewrite
    all of those in every deployment for no change anyone sees (docs/architecture.md, "Names")."""

    name = "sessions"
    label = "threads"
    verbose_name = "Sessions"
