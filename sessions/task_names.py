"""The names the sessions app's Celery tasks are sent by (``kourier.queue.enqueue_after_commit``).

A service sends a task by its name, not by importing it: ``tasks.py`` imports the services, so the
names live apart from both, and ``tasks.py`` gives each task its name from here. Another app sends
these tasks the same way (interactions drives a session). A name is its task's module path, so that
a message queued before a deploy still finds its task. The sweeps' tasks are not here: each sweep's
is made from its registration (kourier/sweeps.py).
"""

DRIVE_SESSION = "sessions.tasks.drive_session"
TELL_EXPIRED = "sessions.tasks.tell_expired"
