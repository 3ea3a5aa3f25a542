"""Reading what a test's transaction enqueued (kourier/queue.py sends tasks by name after commit)."""

from kourier import queue


def enqueued(callbacks) -> list[tuple[str, tuple]]:
    """The tasks that ``django_capture_on_commit_callbacks`` caught, by short name, with their arguments."""
    return [(name, args) for name, args, _ in enqueued_with_countdowns(callbacks)]


def enqueued_with_countdowns(callbacks) -> list[tuple[str, tuple, float | None]]:
    """As ``enqueued``, with each task's countdown in seconds (None: sent at once)."""
    found = []
    for callback in callbacks:
        func = getattr(callback, "func", None)
        if func is queue.publish:  # publish(task_name, *args)
            name, args, countdown = callback.args[0], callback.args[1:], None
        elif (
            func is queue._publish_later
        ):  # _publish_later(seconds, task_name, args): enqueue_after_commit_in
            countdown, name, args = callback.args
        else:  # work of its own after commit (a Home tab refresh queued once: interactions/home_refresh.py)
            continue
        found.append((name.rsplit(".", 1)[-1], tuple(args), countdown))
    return found
