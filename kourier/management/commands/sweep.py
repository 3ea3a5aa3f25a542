"""``manage.py sweep NAME``: runs one sweep now, as beat would, and prints what it did."""

from django.core.management.base import BaseCommand, CommandError

from kourier.sweeps import all_sweeps


class Command(BaseCommand):
    help = "Run one sweep now and print what it did. Without a name, list the sweeps."

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", help="the sweep to run")

    def handle(self, *args, name: str | None = None, **options):
        sweeps = all_sweeps()
        if name is None:
            for known, listed in sweeps.items():
                self.stdout.write(f"{known}: {listed.description()} (every {listed.interval():g} s)")
            return
        sweep = sweeps.get(name)
        if sweep is None:
            raise CommandError(f"No sweep is named {name!r}; there are: {', '.join(sweeps)}.")
        self.stdout.write(f"{name}: {sweep.run()}")
