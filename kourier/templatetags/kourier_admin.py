"""Template tags of the admin: breadcrumbs that name the index's sections (kourier/admin_site.py)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from kourier.admin_site import INDEX_SECTIONS

register = template.Library()


@register.simple_tag
def admin_section(opts: Any) -> dict[str, str]:
    """The index section a model is shown in: its name, and where its breadcrumb leads (the app's
    page, or the index for a section that spans apps). A model of no section keeps its app's."""
    key = f"{opts.app_label}.{opts.model_name}"
    for name, app_label, keys in INDEX_SECTIONS:
        if key in keys:
            if app_label:
                return {"name": name, "url": reverse("admin:app_list", kwargs={"app_label": app_label})}
            return {"name": name, "url": reverse("admin:index")}
    return {
        "name": str(opts.app_config.verbose_name),
        "url": reverse("admin:app_list", kwargs={"app_label": opts.app_label}),
    }
