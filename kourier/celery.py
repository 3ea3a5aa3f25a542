import gc
import os

from celery import Celery
from celery.signals import (
    beat_init,
    import_modules,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")

app = Celery("kourier")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# A sweep's task is made by its registration, in its app's sweeps module (kourier/sweeps.py).
app.autodiscover_tasks(related_name="sweeps")


@import_modules.connect
def schedule_sweeps(sender, **kwargs):
    """Beat's schedule, made from the sweeps' registrations (kourier/sweeps.py) once the apps' modules
    are imported: beat imports them at start (after Django's set-up, which Celery's Django fixup
    does first), before it reads its schedule."""
    from kourier.sweeps import beat_schedule

    sender.conf.beat_schedule = beat_schedule()


# With METRICS_PORT set (a pod of its own), a worker and beat serve their own /metrics. The worker's
# main process serves it: with the prefork pool it adds up its children, which share its directory.
@worker_init.connect
def trace_worker(**kwargs):
    """Traces when an OTLP endpoint is configured (kourier/tracing.py). The worker's pool is threads
    (manage.py serve, deploy/): one set-up serves the process."""
    from kourier.tracing import configure

    configure("kourier-worker")


@worker_ready.connect
@worker_process_init.connect
def freeze_start_up_objects(**kwargs):
    """Puts what the worker's start made (Django, Celery, every module: most of the process's objects)
    out of the garbage collector's reach. Each full collection walked them all again, about 150 ms in
    a burst of turns, and more often the more a turn held (docs/performance.md, section g). Made once
    and kept for the process's life, they are never garbage. A prefork child freezes its own."""
    gc.collect()
    gc.freeze()


@worker_shutdown.connect
def flush_worker_spans(**kwargs):
    from kourier.tracing import flush

    flush()


@worker_init.connect
def serve_worker_metrics(**kwargs):
    from kourier.metrics_endpoint import serve_process_metrics

    serve_process_metrics("worker")


@beat_init.connect
def serve_beat_metrics(**kwargs):
    from kourier.metrics_endpoint import serve_process_metrics

    serve_process_metrics("beat")


@worker_process_shutdown.connect
def forget_pool_child_gauges(pid, **kwargs):
    """A prefork child that exits leaves its counters counted and its live gauges (sessions running)
    to be forgotten, as `manage.py serve` does for its children."""
    from kourier import metrics

    directory = metrics.multiprocess_dir()
    if directory is not None:
        metrics.mark_process_dead(pid, directory)
