"""The names the alerts app's Celery tasks are sent by (``kourier.queue.enqueue_after_commit``): its
services send them by name, since ``tasks.py`` imports the services (sessions/task_names.py says
more)."""

DELIVER_ALERT = "alerts.tasks.deliver_alert"
