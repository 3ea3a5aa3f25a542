"""The approval timeout's audit rows, marked on their Interaction so that each is written once
(interactions/approvals.py): the marks of the rows written before are set from the audit."""

from django.db import migrations, models

TIMED_OUT = "interaction.timed_out"
SUPERSEDED = "interaction.timeout_superseded"


def mark_written_rows(apps, schema_editor):
    AuditEvent = apps.get_model("audit", "AuditEvent")
    Interaction = apps.get_model("interactions", "Interaction")
    for action, field in ((TIMED_OUT, "timeout_audited_at"), (SUPERSEDED, "timeout_superseded_at")):
        for subject, at in (
            AuditEvent.objects.filter(action=action).order_by("at").values_list("subject", "at")
        ):
            _, _, pk = subject.partition(" ")
            if pk.isdigit():
                Interaction.objects.filter(pk=int(pk), **{field: None}).update(**{field: at})


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0001_initial"),
        ("interactions", "0003_kept_presses"),
    ]

    operations = [
        migrations.AddField(
            model_name="interaction",
            name="timeout_audited_at",
            field=models.DateTimeField(
                blank=True, help_text="When the approval's timed_out audit row was written.", null=True
            ),
        ),
        migrations.AddField(
            model_name="interaction",
            name="timeout_superseded_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When a person's decision superseded that timeout in the audit.",
                null=True,
            ),
        ),
        migrations.RunPython(mark_written_rows, migrations.RunPython.noop),
    ]
