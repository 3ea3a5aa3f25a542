import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kourier.settings")

app = Celery("kourier")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
