"""Reading what a test's transaction enqueued (kourier/queue.py sends tasks by name after commit)."""


def enqueued(callbacks) -> list[tuple[str, tuple]]:
    """The tasks that ``django_capture_on_commit_callbacks`` caught, by short name, with their arguments."""
    # Each callback is kourier.queue.publish(task_name, *args).
    return [(callback.args[0].rsplit(".", 1)[-1], callback.args[1:]) for callback in callbacks]
