from django.apps import AppConfig


class ThreadSessionsConfig(AppConfig):
    # "sessions" is taken by django.contrib.sessions.
    name = "sessions"
    label = "threads"
    verbose_name = "Thread sessions"
