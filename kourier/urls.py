from django.contrib import admin
from django.urls import path

from kourier import health, metrics_view

# Slack's requests (POST /slack/events) are served ahead of Django: kourier/http_routes.py.
urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view.scrape, name="metrics"),
    path("admin/", admin.site.urls),
]
