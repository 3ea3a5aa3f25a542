import os

from celery import Celery
from celery.signals import beat_init, worker_init, worker_process_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")

app = Celery("kourier")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# With METRICS_PORT set (a pod of its own), a worker and beat serve their own /metrics. The worker's
# main process serves it: with the prefork pool it adds up its children, which share its directory.
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
