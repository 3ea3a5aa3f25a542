"""The models and their migrations agree: a change to a model ships with its migration."""

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_its_migration():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits 1 when one is missing
