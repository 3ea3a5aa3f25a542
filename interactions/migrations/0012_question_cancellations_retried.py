"""A question's paused task is now cancelled with the retries an approval's gets: an ended question
whose ``task_cancelled_at`` is empty is owed a cancellation (interactions/cancellations.py). Questions
that ended before this release had theirs tried once, as it then was, and are marked so, or the first
sweep after the upgrade would cancel every one of them again."""

from django.db import migrations, models
from django.db.models.functions import Coalesce


def mark_ended_questions_as_cancelled(apps, schema_editor):
    Interaction = apps.get_model("interactions", "Interaction")
    Interaction.objects.filter(
        kind="question", state__in=["timed_out", "cancelled"], task_cancelled_at=None
    ).update(task_cancelled_at=Coalesce("closed_at", "created_at"))


class Migration(migrations.Migration):
    dependencies = [
        ("interactions", "0011_interaction_requester_and_policy_denials"),
    ]

    operations = [
        migrations.AlterField(
            model_name="interaction",
            name="task_cancelled_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When the paused task's cancellation was settled, after its pause ended unanswered (interactions/cancellations.py).",
                null=True,
            ),
        ),
        migrations.RunPython(mark_ended_questions_as_cancelled, migrations.RunPython.noop),
    ]
