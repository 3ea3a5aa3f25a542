from django.contrib import admin
from django.urls import include, path

from kourier import health, metrics_view, simulator_page

# Slack's requests (POST /slack/events) are served ahead of Django: kourier/http_routes.py.
urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view.scrape, name="metrics"),
    # Single sign-on for the admin (kourier/sso/): before the admin's own pages, which would take its paths.
    path("admin/sso/", include("kourier.sso.urls")),
    path("admin/", admin.site.urls),
    # The workspace simulator's page (404 unless `manage.py serve` runs it).
    path("simulator/", simulator_page.index, name="simulator"),
    path("simulator/api/<slug:name>", simulator_page.api, name="simulator-api"),
    path("simulator/<str:name>", simulator_page.asset, name="simulator-asset"),
]
