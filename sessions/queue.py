"""The names of the sessions app's Celery tasks.

Services enqueue by name, so that they need not import ``tasks`` (which imports them).
"""

# The names are the tasks' module paths, so that messages queued before a deploy still find their task.
DRIVE_SESSION = "sessions.tasks.drive_session"
TELL_EXPIRED = "sessions.tasks.tell_expired"
