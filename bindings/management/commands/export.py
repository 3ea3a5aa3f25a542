"""``manage.py export``: every Connection and Binding as manifests that ``apply`` takes back unchanged."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from bindings import services


class Command(BaseCommand):
    help = (
        "Print every Connection and Binding as manifests (YAML). Applying the output changes nothing. "
        "Secrets appear only as the names of their environment variables."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(services.export_manifests(), ending="")
