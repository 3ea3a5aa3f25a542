from django.apps import AppConfig


class BindingsConfig(AppConfig):
    name = "bindings"

    def ready(self) -> None:
        from . import directory  # noqa: F401  (connects the signals that drop the snapshot on a change)
