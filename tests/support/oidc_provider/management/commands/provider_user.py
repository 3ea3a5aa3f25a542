"""Makes or changes a user of the test provider: its password, email and exactly these groups."""

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--email", default="")
        parser.add_argument("--groups", default="", help="comma-separated; quirk:<what> for a fault")

    def handle(self, *args, username, password, email, groups, **options):
        user, _ = User.objects.get_or_create(username=username)
        user.email = email
        user.set_password(password)
        user.save()
        names = [name for name in groups.split(",") if name]
        user.groups.set([Group.objects.get_or_create(name=name)[0] for name in names])
