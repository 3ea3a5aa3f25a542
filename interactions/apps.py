from django.apps import AppConfig


class InteractionsConfig(AppConfig):
    name = "interactions"
