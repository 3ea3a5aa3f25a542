from django.apps import AppConfig


class KourierConfig(AppConfig):
    name = "kourier"
    verbose_name = "Agent Kourier"

    def ready(self) -> None:
        # The project's glue: the Binding's live page reads the apps above bindings (sessions,
        # interactions), which bindings may not import.
        from bindings.admin import hand_in_live_state

        from . import checks  # noqa: F401  (registers the start-up checks)
        from .live_state import binding_live_state
        from .slack import budgets  # noqa: F401  (registers the check of Slack's call limits)

        hand_in_live_state(binding_live_state)
