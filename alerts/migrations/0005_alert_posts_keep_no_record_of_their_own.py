"""The columns ``AlertPost`` kept of a post's fate go, once 0004 carried them over (a migration of its
own: PostgreSQL alters no table whose rows the same transaction changed)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0004_alert_posts_through_the_outbox"),
    ]

    operations = [
        migrations.RemoveField(model_name="alertpost", name="attempted_at"),
        migrations.RemoveField(model_name="alertpost", name="state"),
        migrations.RemoveField(model_name="alertpost", name="ts"),
    ]
