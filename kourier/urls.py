from django.contrib import admin
from django.urls import path

from kourier import health

# POST /slack/events is served ahead of Django, in kourier/asgi.py.
urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("admin/", admin.site.urls),
]
