"""factory-boy factories for the project's models. Each app adds its own below."""

from __future__ import annotations

from datetime import timedelta

import factory
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from factory.django import DjangoModelFactory

from alerts.models import Alert
from bindings.models import Binding, BindingChannel, Connection
from interactions.models import Interaction
from kourier.slack.outbox import PostKind
from sessions.models import PostIntent, Session, Turn
from sessions.turns import message_id_for

# --- bindings ----------------------------------------------------------------------------------------


class ConnectionFactory(DjangoModelFactory[Connection]):
    """A Connection whose secrets are read from SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET (no Socket Mode)."""

    class Meta:
        model = Connection

    name = factory.Sequence(lambda n: f"workspace-{n}")
    bot_token_env = "SLACK_BOT_TOKEN"
    signing_secret_env = "SLACK_SIGNING_SECRET"
    app_token_env = ""


class BindingFactory(DjangoModelFactory[Binding]):
    """A Binding with the spec's defaults on the a2a dialect, bound to one fresh channel.

    Pass ``channels=["C0123456789", ...]`` for particular channels, or ``channels=[]`` for none.
    """

    class Meta:
        model = Binding
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"binding-{n}")
    connection = factory.SubFactory(ConnectionFactory)
    agent_url = "http://127.0.0.1:8083/"
    dialect = Binding.Dialect.A2A

    @factory.post_generation
    def channels(obj: Binding, create: bool, extracted: list[str] | None, **kwargs: object) -> None:
        if not create:
            return
        channel_ids = extracted if extracted is not None else [f"C{obj.pk:09d}"]
        for channel_id in channel_ids:
            BindingChannelFactory(binding=obj, channel_id=channel_id)


class BindingChannelFactory(DjangoModelFactory[BindingChannel]):
    class Meta:
        model = BindingChannel

    binding = factory.SubFactory(BindingFactory, channels=[])
    connection = factory.SelfAttribute("binding.connection")
    channel_id = factory.Sequence(lambda n: f"C{n:09d}X")


# --- sessions ----------------------------------------------------------------------------------------


class SessionFactory(DjangoModelFactory[Session]):
    """A chat thread's session on its Binding's first channel, live for a day."""

    class Meta:
        model = Session

    binding = factory.SubFactory(BindingFactory)
    connection = factory.SelfAttribute("binding.connection")
    channel_id = factory.LazyAttribute(lambda session: session.binding.channel_ids()[0])
    thread_ts = factory.Sequence(lambda n: f"1700000000.{n:06d}")
    last_activity_at = factory.LazyFunction(timezone.now)
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=1))


class TurnFactory(DjangoModelFactory[Turn]):
    """A person's message in the session's thread, queued."""

    class Meta:
        model = Turn

    session = factory.SubFactory(SessionFactory)
    connection = factory.SelfAttribute("session.connection")
    channel_id = factory.SelfAttribute("session.channel_id")
    message_ts = factory.Sequence(lambda n: f"1700000100.{n:06d}")
    user_id = "U0ADA"
    text = "hello"
    message_id = factory.LazyAttribute(
        lambda turn: message_id_for(turn.connection.pk, turn.channel_id, turn.message_ts)
    )


class PostIntentFactory(DjangoModelFactory[PostIntent]):
    """A notice the turn means to post, not yet confirmed."""

    class Meta:
        model = PostIntent

    turn = factory.SubFactory(TurnFactory)
    key = factory.Sequence(lambda n: f"notice-{n}")
    kind = PostKind.NOTICE.value
    text = "Something went wrong."


# --- interactions ------------------------------------------------------------------------------------


class InteractionFactory(DjangoModelFactory[Interaction]):
    """An open question put to the turn's thread, due in an hour (``kind=Interaction.Kind.APPROVAL`` for a tool approval)."""

    class Meta:
        model = Interaction

    turn = factory.SubFactory(TurnFactory, state=Turn.State.DONE, outcome=Turn.Outcome.ASKED)
    session = factory.SelfAttribute("turn.session")
    channel_id = factory.SelfAttribute("turn.channel_id")
    kind = Interaction.Kind.QUESTION
    pause = factory.LazyFunction(dict)
    deadline = factory.LazyFunction(lambda: timezone.now() + timedelta(hours=1))


# --- alerts ------------------------------------------------------------------------------------------


class AlertFactory(DjangoModelFactory[Alert]):
    """An alert thread of one alert, firing, its message not yet posted."""

    class Meta:
        model = Alert

    binding = factory.SubFactory(BindingFactory)
    trigger = "prometheus"
    key = factory.Sequence(lambda n: f"fingerprint-{n}")
    title = "PodCrashLooping"
    channel_id = "C0123456789"
    first_fired_at = factory.LazyFunction(timezone.now)
    message_text = "PodCrashLooping"


# --- people of the admin -----------------------------------------------------------------------------


class StaffUserFactory(DjangoModelFactory[User]):
    """A staff member (not a superuser) who may log in to the admin and do nothing there.

    Pass ``permissions=["threads.view_turn", ...]`` for what they may do."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"staff-{n}")
    is_staff = True

    @factory.post_generation
    def permissions(obj: User, create: bool, extracted: list[str] | None, **kwargs: object) -> None:
        for name in extracted or []:
            app_label, codename = name.split(".")
            obj.user_permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )
