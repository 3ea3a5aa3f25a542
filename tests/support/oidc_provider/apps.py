from django.apps import AppConfig


class TestProviderConfig(AppConfig):
    name = "tests.support.oidc_provider"
    label = "test_oidc_provider"
