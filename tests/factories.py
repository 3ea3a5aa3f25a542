"""factory-boy factories for the project's models. Each app adds its own below."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from bindings.models import Binding, BindingChannel, Connection

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
