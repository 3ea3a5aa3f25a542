"""Registers a confidential client of the test provider (code flow, RS256, no consent screen)."""

from django.core.management.base import BaseCommand
from oidc_provider.models import Client, ResponseType


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("client_id")
        parser.add_argument("--secret", required=True)
        parser.add_argument("--redirect-uri", action="append", default=[])
        parser.add_argument("--post-logout-redirect-uri", action="append", default=[])

    def handle(self, *args, client_id, secret, redirect_uri, post_logout_redirect_uri, **options):
        client, _ = Client.objects.update_or_create(
            client_id=client_id,
            defaults={
                "name": client_id,
                "client_type": "confidential",
                "client_secret": secret,
                "jwt_alg": "RS256",
                "require_consent": False,
                "_redirect_uris": "\n".join(redirect_uri),
                "_post_logout_redirect_uris": "\n".join(post_logout_redirect_uri),
            },
        )
        client.response_types.set([ResponseType.objects.get(value="code")])
