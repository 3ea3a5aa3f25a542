"""spec.directMessages: a Binding that takes its Connection's direct messages instead of channels."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from bindings import directory, manifest, services
from bindings.manifest import DirectMessagesSpec, SuggestedPrompt
from bindings.models import Binding
from tests.factories import BindingFactory, ConnectionFactory

from .manifests import CONNECTION, MINIMAL_BINDING, as_yaml, documents, errors_of, varied

B = 'Binding "ops"'
PROMPT = {"title": "Deploys", "message": "What is deploying?"}


def dm_binding(direct_messages, **spec):
    document = varied(MINIMAL_BINDING, "spec.channels")
    document = varied(document, "spec.directMessages", direct_messages)
    for path, value in spec.items():
        document = varied(document, f"spec.{path}", value)
    return document


def read(document) -> manifest.BindingSpec:
    validation = manifest.validate(documents(document), connections=["acme"])
    assert validation.errors == []
    return validation.bindings[0]


def test_direct_messages_true_takes_everyone_with_a_warning_saying_so():
    validation = manifest.validate(documents(dm_binding(True)), connections=["acme"])

    assert validation.bindings[0].direct_messages == DirectMessagesSpec()
    assert validation.bindings[0].channels == ()
    assert [str(w) for w in validation.warnings] == [
        f"{B}: spec.directMessages has no allowedUsers and no allowedGroups: "
        "every member of the workspace may talk to the agent in private"
    ]


def test_direct_messages_read_their_options_and_have_no_warning_with_a_list():
    document = dm_binding(
        {
            "allowedUsers": ["U0ADA"],
            "allowedGroups": ["S0OPS"],
            "suggestedPrompts": [PROMPT],
            "approvalsChannel": "C0APPROVE",
        }
    )
    validation = manifest.validate(documents(document), connections=["acme"])

    assert validation.warnings == []
    assert validation.bindings[0].direct_messages == DirectMessagesSpec(
        allowed_users=("U0ADA",),
        allowed_groups=("S0OPS",),
        suggested_prompts=(SuggestedPrompt("Deploys", "What is deploying?"),),
        approvals_channel="C0APPROVE",
    )


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            varied(MINIMAL_BINDING, "spec.directMessages", True),
            [f"{B}: spec.directMessages: a Binding takes channels or directMessages, not both"],
            id="both",
        ),
        pytest.param(
            dm_binding(False),
            [f"{B}: spec.directMessages: must be true or a mapping of allowedUsers, allowedGroups, "
             "suggestedPrompts, approvalsChannel (got false)"],
            id="false",
        ),
        pytest.param(
            dm_binding({"suggestedPrompts": [PROMPT] * 5}),
            [f"{B}: spec.directMessages.suggestedPrompts: at most 4 prompts are allowed (got 5)"],
            id="five prompts",
        ),
        pytest.param(
            dm_binding({"suggestedPrompts": [{"title": "T"}]}),
            [f"{B}: spec.directMessages.suggestedPrompts[0].message: is required"],
            id="prompt without message",
        ),
        pytest.param(
            dm_binding({"allowedUsers": ["ada"]}),
            [f'{B}: spec.directMessages.allowedUsers[0]: must be a Slack user ID such as U0123456789 (got "ada")'],
            id="bad user",
        ),
        pytest.param(
            dm_binding({"approvalsChannel": "D0123"}),
            [f'{B}: spec.directMessages.approvalsChannel: must be a Slack channel ID such as C0123456789 (got "D0123")'],
            id="dm as approvals channel",
        ),
        pytest.param(
            dm_binding(
                {"allowedUsers": ["U0ADA"]},
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": ["S0OPS"]},
            ),
            [f"{B}: spec.directMessages.approvalsChannel: is required with approver groups: "
             "an approver outside a direct message cannot see its prompt"],
            id="approver groups without an approvals channel",
        ),
        pytest.param(
            dm_binding({"allowedUsers": ["U0ADA"], "alowedGroups": []}),
            [f'{B}: spec.directMessages.alowedGroups: unknown field (did you mean "allowedGroups"?)'],
            id="unknown field",
        ),
    ],
)  # fmt: skip
def test_direct_messages_are_refused_naming_the_field(document, expected):
    assert errors_of(document) == expected


def test_a_second_binding_taking_a_connections_direct_messages_is_refused():
    other = varied(dm_binding(True), "metadata.name", "other")

    assert errors_of(dm_binding(True), other) == [
        'Binding "other": spec.directMessages: Connection "acme" already has its direct messages taken by '
        'Binding "ops" (at most one Binding per Connection)'
    ]
    assert errors_of(dm_binding(True), direct_message_bindings={"acme": "triage"}) == [
        f'{B}: spec.directMessages: Connection "acme" already has its direct messages taken by Binding "triage" '
        "(at most one Binding per Connection)"
    ]
    assert errors_of(dm_binding(True), direct_message_bindings={"acme": "ops"}) == []  # itself, reapplied


@pytest.mark.django_db
def test_apply_refuses_a_second_direct_message_binding_and_export_writes_the_first_back():
    first = dm_binding({"allowedUsers": ["U0ADA"], "suggestedPrompts": [PROMPT]})
    assert services.apply_manifests(as_yaml(CONNECTION, first)).ok

    second = services.apply_manifests(as_yaml(varied(dm_binding(True), "metadata.name", "other")))

    assert not second.ok
    assert Binding.objects.count() == 1
    exported = services.export_manifests()
    assert "  directMessages:\n    allowedUsers: [U0ADA]\n" in exported
    assert "channels" not in exported
    assert services.apply_manifests(exported).changed is False


@pytest.mark.django_db
def test_the_database_refuses_two_direct_message_bindings_on_one_connection():
    connection = ConnectionFactory()
    BindingFactory(connection=connection, channels=[], direct_messages={})
    with pytest.raises(IntegrityError):
        BindingFactory(connection=connection, channels=[], direct_messages={})


@pytest.mark.django_db
def test_the_directory_finds_a_connections_direct_message_binding():
    connection = ConnectionFactory()
    binding = BindingFactory(connection=connection, channels=[], direct_messages={"allowed_users": ["U0ADA"]})
    BindingFactory(connection=ConnectionFactory())
    directory.forget()

    found = directory.current()

    assert found.binding_for_direct_messages(connection.pk) == binding
    assert found.binding_for_direct_messages(connection.pk).direct_messages_spec().allowed_users == ("U0ADA",)
    assert len(found.direct_messages) == 1
