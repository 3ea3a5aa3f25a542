"""The names of the alerts app's Celery tasks (services enqueue by name: see kourier/queue.py)."""

DELIVER_ALERT = "alerts.tasks.deliver_alert"
