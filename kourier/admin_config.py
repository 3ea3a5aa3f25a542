from django.contrib.admin.apps import AdminConfig


class KourierAdminConfig(AdminConfig):
    """django.contrib.admin with our site as ``admin.site``, so every ``@admin.register`` lands on it.

    In a module of its own: kourier/apps.py must hold one AppConfig, and the site's module imports the
    admin, which cannot be imported before the apps are loaded."""

    default_site = "kourier.admin_site.KourierAdminSite"
