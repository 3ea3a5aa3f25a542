"""The names the interactions app's Celery tasks are sent by (``kourier.queue.enqueue_after_commit``):
its services send them by name, since ``tasks.py`` imports the services (sessions/task_names.py says
more)."""

CLOSE_PROMPT = "interactions.tasks.close_prompt"
RETRY_PRESS = "interactions.tasks.retry_approval_press"
SEND_FEEDBACK = "interactions.tasks.send_feedback"
REFRESH_HOME_TABS = "interactions.tasks.refresh_home_tabs"
