"""An alert thread's posts go through the outbox (sessions' ``PostIntent``): ``AlertPost`` keeps what a
thread owes, until it is delivered, and no record of its own of a post's fate (state, ts, attempted_at).

What the earlier release recorded is carried over before its columns go: a post it confirmed is
delivered (a root message whose ts the alert never kept gets it now); a post a worker began and never
confirmed becomes an intent begun then, so that delivery looks for it in Slack before posting it
again. A root message is found by the metadata it always carried; a note by the note metadata, which
the earlier release did not give it (it posted notes as notices): a note a worker was killed in the
middle of posting during the upgrade may be posted twice.
"""

from django.db import migrations, models
from django.db.models import F


def carry_the_records_over(apps, schema_editor):
    Alert = apps.get_model("alerts", "Alert")
    AlertPost = apps.get_model("alerts", "AlertPost")
    PostIntent = apps.get_model("threads", "PostIntent")
    for post in AlertPost.objects.filter(state="confirmed", kind="message").exclude(ts=""):
        Alert.objects.filter(pk=post.alert_id, root_ts="").update(root_ts=post.ts)
    AlertPost.objects.filter(state="confirmed").update(delivered_at=F("created_at"))
    begun = AlertPost.objects.filter(state="intended").exclude(attempted_at=None).select_related("alert")
    for post in begun.iterator():
        PostIntent.objects.get_or_create(
            key=post.key,
            defaults={
                "kind": "alert" if post.kind == "message" else "note",
                "session_id": post.alert.session_id,
            },
        )
        # The intent's age is how far back delivery looks for it (auto_now_add set it to now).
        PostIntent.objects.filter(key=post.key, state="intended").update(created_at=post.attempted_at)


def record_them_again(apps, schema_editor):
    AlertPost = apps.get_model("alerts", "AlertPost")
    AlertPost.objects.exclude(delivered_at=None).update(state="confirmed")


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0003_alert_delivery_failures"),
        ("threads", "0011_post_intents_outside_turns"),
    ]

    operations = [
        migrations.AddField(
            model_name="alertpost",
            name="delivered_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When it was posted (and a note filed in the thread's session).",
                null=True,
            ),
        ),
        migrations.RunPython(carry_the_records_over, record_them_again),
    ]
