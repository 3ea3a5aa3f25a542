from django.contrib import admin
from django.urls import path

from kourier import health
from kourier.slack import views as slack_views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("slack/events", slack_views.slack_events, name="slack-events"),
    path("slack/events/<slug:connection_name>", slack_views.slack_events, name="slack-events-connection"),
    path("admin/", admin.site.urls),
]
