from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = "Alert threads"
    default_auto_field = "django.db.models.BigAutoField"
