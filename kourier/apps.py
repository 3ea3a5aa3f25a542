from django.apps import AppConfig


class KourierConfig(AppConfig):
    name = "kourier"
    verbose_name = "Agent Kourier"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the start-up checks)
