"""The names of the interactions app's Celery tasks (services enqueue by name; see kourier/queue.py)."""

CLOSE_PROMPT = "interactions.tasks.close_prompt"
RETRY_PRESS = "interactions.tasks.retry_approval_press"
SEND_FEEDBACK = "interactions.tasks.send_feedback"
