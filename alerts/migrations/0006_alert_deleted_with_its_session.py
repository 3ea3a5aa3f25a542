"""An alert thread is deleted with its session (at the end of its lifetime), its alerts, occurrences,
posts and their texts with it. The threads whose session an earlier release deleted and kept (their
session emptied, ``thread_started_at`` set) go now: a later notification of their alert opens a new
thread instead of posting notes into one Agent Kourier no longer owns."""

import django.db.models.deletion
from django.db import migrations, models


def delete_the_threads_of_deleted_sessions(apps, schema_editor):
    Alert = apps.get_model("alerts", "Alert")
    Alert.objects.filter(session=None).exclude(thread_started_at=None).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0005_alert_posts_keep_no_record_of_their_own"),
        ("threads", "0011_post_intents_outside_turns"),
    ]

    operations = [
        migrations.AlterField(
            model_name="alert",
            name="session",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="threads.session",
            ),
        ),
        migrations.RunPython(delete_the_threads_of_deleted_sessions, migrations.RunPython.noop),
    ]
