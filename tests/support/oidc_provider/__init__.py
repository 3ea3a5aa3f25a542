"""A real OpenID provider for the single sign-on tests: django-oidc-provider in a small Django project
of its own (``settings``, ``urls``, ``claims``), run as its own process over HTTP on a free port with
its own SQLite database, its users, groups and clients set by the test through its management commands
(``process``; the ``oidc_provider`` fixture in ``fixtures``)."""
