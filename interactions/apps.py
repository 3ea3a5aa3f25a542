from django.apps import AppConfig


class InteractionsConfig(AppConfig):
    name = "interactions"

    def ready(self) -> None:
        # The session core knows pauses only through what this app hands in (sessions/pauses.py).
        from sessions import pauses

        from .asking import Asking

        pauses.hand_in(Asking())
