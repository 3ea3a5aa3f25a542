"""The manifest format: what it accepts, what it refuses (and in which words), and how it is written back."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from bindings import manifest
from bindings.manifest import (
    AcknowledgmentSpec,
    AgentSpec,
    BindingSpec,
    ChatSpec,
    ConnectionSpec,
    InteractionsSpec,
    SessionSpec,
)
from bindings.manifest.checker import show

from .manifests import (
    CONNECTION,
    EXAMPLE,
    MINIMAL_BINDING,
    binding,
    documents,
    errors_of,
    every_field,
    unset_fields,
    varied,
)

# --- Durations ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45s", timedelta(seconds=45)),
        ("30m", timedelta(minutes=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("90d", timedelta(days=90)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("90m", timedelta(minutes=90)),
    ],
)
def test_a_duration_is_whole_units_largest_first(text, expected):
    assert manifest.parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "30", "30 m", "30M", "1.5h", "30m1h", "1h 30m", "-5m", "1w", "m"])
def test_anything_else_is_not_a_duration(text):
    with pytest.raises(ValueError, match="not a duration"):
        manifest.parse_duration(text)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=30), "30m"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=90), "90d"),
        (timedelta(days=1, seconds=1), "1d1s"),
        (timedelta(hours=36), "1d12h"),
    ],
)
def test_a_duration_is_written_in_its_canonical_form(value, text):
    assert manifest.format_duration(value) == text
    assert manifest.parse_duration(text) == value


# --- Accepted ----------------------------------------------------------------------------------------


def test_the_issue_example_reads_into_specs():
    parsed, problems = manifest.parse_documents(EXAMPLE, "example.yaml")
    validation = manifest.validate(parsed)

    assert problems == []
    assert validation.errors == []
    assert validation.warnings == []
    assert validation.connections == [
        ConnectionSpec("acme", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", app_token_env="SLACK_APP_TOKEN")
    ]
    assert validation.bindings == [
        BindingSpec(
            name="ops",
            connection="acme",
            channels=("C0123456789",),
            agent=AgentSpec(
                url="http://127.0.0.1:8083/",
                dialect=manifest.Dialect.KAGENT_V1,
                protocol_version=manifest.ProtocolVersion.AUTO,
                headers=(("Authorization", "OPS_AGENT_TOKEN"),),
            ),
            output=manifest.Output.LIVE,
            chat=ChatSpec(
                thread_replies=manifest.ThreadReplies.ALL,
                acknowledgment=AcknowledgmentSpec(enabled=True, emoji="hourglass_flowing_sand"),
                progress=manifest.ProgressMode.STEPS_AND_ACTIVITY,
            ),
            interactions=InteractionsSpec(
                ask_user=False, tool_approvals=False, approver_groups=(), timeout=timedelta(minutes=30)
            ),
            session=SessionSpec(thread_ttl=timedelta(days=90)),
        )
    ]


def test_omitted_fields_take_the_specs_defaults():
    [spec] = manifest.validate(documents(MINIMAL_BINDING), connections=["acme"]).bindings

    assert spec.agent.dialect == "a2a"
    assert spec.agent.protocol_version == "auto"
    assert spec.agent.headers == ()
    assert spec.output == "live"
    assert spec.chat.thread_replies == "all"
    assert spec.chat.acknowledgment == AcknowledgmentSpec(enabled=True, emoji="hourglass_flowing_sand")
    assert spec.chat.progress == "steps-and-activity"
    assert spec.interactions == InteractionsSpec(
        ask_user=False, tool_approvals=False, approver_groups=(), timeout=timedelta(minutes=30)
    )
    assert spec.session.thread_ttl == timedelta(days=90)


def test_a_field_set_to_null_counts_as_omitted():
    document = binding(output=None, chat={"acknowledgment": None}, interactions={"approverGroups": None})

    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings

    assert spec == manifest.validate(documents(MINIMAL_BINDING), connections=["acme"]).bindings[0]


def test_a_connection_without_an_app_token_uses_http():
    [spec] = manifest.validate(documents(CONNECTION)).connections

    assert spec.app_token_env is None


def test_protocol_version_written_as_a_bare_number_is_read_as_the_version():
    parsed, _ = manifest.parse_documents(
        "apiVersion: kourier/v1\nkind: Binding\nmetadata: {name: ops}\n"
        "spec: {connection: acme, channels: [C1], agent: {url: 'http://a/', protocolVersion: 1.0}}\n"
    )

    [spec] = manifest.validate(parsed, connections=["acme"]).bindings

    assert spec.agent.protocol_version == "1.0"


def test_the_order_of_channels_does_not_matter_but_the_order_of_approver_groups_does():
    one = binding(channels=["C2", "C1"], interactions={"toolApprovals": True, "approverGroups": ["S2", "S1"]})
    two = binding(channels=["C1", "C2"], interactions={"toolApprovals": True, "approverGroups": ["S2", "S1"]})
    three = binding(
        channels=["C1", "C2"], interactions={"toolApprovals": True, "approverGroups": ["S1", "S2"]}
    )
    agent = {"url": "http://127.0.0.1:8083/", "dialect": "kagent-v1"}

    specs = [
        manifest.validate(documents(varied(doc, "spec.agent", agent)), connections=["acme"]).bindings[0]
        for doc in (one, two, three)
    ]

    assert specs[0] == specs[1]
    assert specs[1] != specs[2]
    assert specs[2].interactions.approver_groups == ("S1", "S2")


def test_a_binding_may_use_a_connection_defined_in_the_same_input():
    assert errors_of(CONNECTION, MINIMAL_BINDING, connections=[]) == []


def test_a_binding_may_take_over_its_own_channels():
    assert errors_of(MINIMAL_BINDING, bound_channels={("acme", "C0123456789"): "ops"}) == []


def test_a_binding_may_take_a_channel_from_a_binding_redefined_in_the_same_input():
    other = varied(binding(channels=["C0999999999"]), "metadata.name", "other")

    assert errors_of(MINIMAL_BINDING, other, bound_channels={("acme", "C0123456789"): "other"}) == []


def test_the_same_channel_id_on_another_connection_is_another_channel():
    assert errors_of(MINIMAL_BINDING, bound_channels={("globex", "C0123456789"): "other"}) == []


# --- Refused, with the exact words -------------------------------------------------------------------

B = 'Binding "ops"'


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            varied(MINIMAL_BINDING, "spec.agent.token", "x"),
            [
                f"{B}: spec.agent.token: unknown field (expected one of: url, kagent, dialect, protocolVersion, headers, userIdentity)"
            ],
            id="unknown key",
        ),
        pytest.param(
            binding(chat={"threadReply": "all"}),
            [f'{B}: spec.chat.threadReply: unknown field (did you mean "threadReplies"?)'],
            id="unknown key close to a known one",
        ),
        pytest.param(
            varied(MINIMAL_BINDING, "metadata.labels", {}),
            [f"{B}: metadata.labels: unknown field (expected one of: name)"],
            id="unknown metadata",
        ),
        pytest.param(
            varied(MINIMAL_BINDING, "apiVersion", "kourier/v2"),
            [f'{B}: apiVersion: must be kourier/v1 (got "kourier/v2")'],
            id="apiVersion",
        ),
        pytest.param(
            varied(MINIMAL_BINDING, "metadata.name", "ops team"),
            [
                "Binding in document 1 in test.yaml: metadata.name: must be a name of letters, digits, hyphens "
                'and underscores, at most 63 characters (got "ops team")'
            ],
            id="bad name",
        ),
        pytest.param(
            binding(output="stream"),
            [f'{B}: spec.output: must be one of live, final (got "stream")'],
            id="output",
        ),
        pytest.param(
            binding(output=1),
            [f"{B}: spec.output: must be one of live, final (got 1)"],
            id="output of the wrong type",
        ),
        pytest.param(
            binding(chat={"threadReplies": "some"}),
            [f'{B}: spec.chat.threadReplies: must be one of all, mention (got "some")'],
            id="threadReplies",
        ),
        pytest.param(
            binding(chat={"progress": "verbose"}),
            [f'{B}: spec.chat.progress: must be one of steps, steps-and-activity, activity (got "verbose")'],
            id="progress",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "dialect": "kagent"}),
            [f'{B}: spec.agent.dialect: must be one of kagent-v1, a2a (got "kagent")'],
            id="dialect",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "protocolVersion": "2.0"}),
            [f'{B}: spec.agent.protocolVersion: must be one of auto, 1.0, 0.3 (got "2.0")'],
            id="protocolVersion",
        ),
        pytest.param(
            binding(agent={"url": "ftp://agent/"}),
            [
                f'{B}: spec.agent.url: must be an http:// or https:// URL of at most 500 characters (got "ftp://agent/")'
            ],
            id="agent url",
        ),
        pytest.param(
            binding(agent={"dialect": "a2a"}),
            [f"{B}: spec.agent.url: is required (or name a kagent agent with spec.agent.kagent)"],
            id="agent url missing",
        ),
        pytest.param(
            binding(chat={"acknowledgment": {"enabled": "yes please"}}),
            [f'{B}: spec.chat.acknowledgment.enabled: must be true or false (got "yes please")'],
            id="wrong type: boolean",
        ),
        pytest.param(
            binding(channels="C0123456789"),
            [f'{B}: spec.channels: must be a list (got "C0123456789")'],
            id="wrong type: list",
        ),
        pytest.param(
            binding(chat=["all"]),
            [f"{B}: spec.chat: must be a mapping (got a list)"],
            id="wrong type: mapping",
        ),
        pytest.param(
            binding(connection=7),
            [f"{B}: spec.connection: must be a string (got 7)"],
            id="wrong type: string",
        ),
        pytest.param(
            binding(channels=[]),
            [f"{B}: spec.channels: must list at least one channel"],
            id="no channels",
        ),
        pytest.param(
            binding(channels=["C0123456789", "C0123456789"]),
            [f'{B}: spec.channels[1]: duplicate entry "C0123456789"'],
            id="channel twice in one binding",
        ),
        pytest.param(
            binding(channels=["#ops"]),
            [f'{B}: spec.channels[0]: must be a Slack channel ID such as C0123456789 (got "#ops")'],
            id="channel name instead of ID",
        ),
        pytest.param(
            binding(interactions={"timeout": "30 minutes"}),
            [
                f"{B}: spec.interactions.timeout: must be a duration such as 45s, 30m, 1h30m or 90d "
                '(got "30 minutes")'
            ],
            id="bad duration",
        ),
        pytest.param(
            binding(interactions={"timeout": 30}),
            [f"{B}: spec.interactions.timeout: must be a duration such as 45s, 30m, 1h30m or 90d (got 30)"],
            id="duration without a unit",
        ),
        pytest.param(
            binding(session={"threadTTL": "0d"}),
            [f'{B}: spec.session.threadTTL: must be longer than zero (got "0d")'],
            id="zero duration",
        ),
        pytest.param(
            binding(session={"threadTTL": "3651d"}),
            [f'{B}: spec.session.threadTTL: must be at most 3650d (got "3651d")'],
            id="duration too long",
        ),
        pytest.param(
            binding(session={"threadTTL": "99999999999999999d"}),
            [f'{B}: spec.session.threadTTL: must be at most 3650d (got "99999999999999999d")'],
            id="duration too long to hold",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": [f"S{i:02d}" for i in range(11)]},
            ),
            [f"{B}: spec.interactions.approverGroups: at most 10 entries are allowed (got 11)"],
            id="more than 10 approver groups",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": ["S01", ""]},
            ),
            [f"{B}: spec.interactions.approverGroups[1]: must not be empty"],
            id="empty approver group",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": ["S01", "S02", "S01"]},
            ),
            [f'{B}: spec.interactions.approverGroups[2]: duplicate entry "S01"'],
            id="duplicate approver group",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": True, "approverGroups": ["oncall"]},
            ),
            [
                f"{B}: spec.interactions.approverGroups[0]: must be a Slack user group ID such as S0123456789 "
                '(got "oncall")'
            ],
            id="approver group handle instead of ID",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"}, interactions={"approverGroups": ["S01"]}
            ),
            [f"{B}: spec.interactions.approverGroups: approver groups need toolApprovals: true"],
            id="approver groups without toolApprovals",
        ),
        pytest.param(
            binding(
                agent={"url": "http://a/", "dialect": "kagent-v1"},
                interactions={"toolApprovals": False, "approverGroups": ["S01"]},
            ),
            [f"{B}: spec.interactions.approverGroups: approver groups need toolApprovals: true"],
            id="approver groups with toolApprovals false",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "dialect": "a2a"}, interactions={"toolApprovals": True}),
            [
                f"{B}: spec.interactions.toolApprovals: tool approvals need the kagent-v1 dialect "
                "(spec.agent.dialect is a2a)"
            ],
            id="toolApprovals on a2a",
        ),
        pytest.param(
            binding(interactions={"toolApprovals": True}),
            [
                f"{B}: spec.interactions.toolApprovals: tool approvals need the kagent-v1 dialect "
                "(spec.agent.dialect is a2a)"
            ],
            id="toolApprovals on the default dialect",
        ),
        pytest.param(
            binding(chat={"acknowledgment": {"emoji": ":eyes:"}}),
            [
                f"{B}: spec.chat.acknowledgment.emoji: must be a bare reaction name such as eyes, "
                'without colons or spaces (got ":eyes:")'
            ],
            id="emoji with colons",
        ),
        pytest.param(
            binding(chat={"acknowledgment": {"emoji": "hourglass flowing sand"}}),
            [
                f"{B}: spec.chat.acknowledgment.emoji: must be a bare reaction name such as eyes, "
                'without colons or spaces (got "hourglass flowing sand")'
            ],
            id="emoji with spaces",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "headers": {"Authorization": "Bearer s3cr3t"}}),
            [
                f"{B}: spec.agent.headers.Authorization: must be a reference to an environment variable or a "
                "file, {fromEnv: VARIABLE_NAME} or {fromFile: /path}; a secret is never written in a manifest (got a string)"
            ],
            id="secret written in the manifest",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "headers": {"Authorization": {"fromEnv": "Bearer s3cr3t"}}}),
            [
                f"{B}: spec.agent.headers.Authorization.fromEnv: must be an environment variable name: "
                "letters, digits and underscores, not starting with a digit, at most 255 characters"
            ],
            id="secret written as the variable name",
        ),
        pytest.param(
            binding(
                agent={
                    "url": "http://a/",
                    "headers": {"Authorization": {"fromEnv": "A"}, "authorization": {"fromEnv": "B"}},
                }
            ),
            [
                f"{B}: spec.agent.headers.authorization: duplicate header: HTTP header names ignore case, "
                'and "Authorization" is set'
            ],
            id="header twice",
        ),
        pytest.param(
            binding(agent={"url": "http://a/", "headers": {"X Token": {"fromEnv": "A"}}}),
            [f'{B}: spec.agent.headers.X Token: must be an HTTP header name (got "X Token")'],
            id="bad header name",
        ),
    ],
)
def test_a_binding_is_refused_naming_the_binding_and_the_field(document, expected):
    assert errors_of(document) == expected


def test_a_secret_in_a_manifest_is_never_repeated_in_the_refusal():
    document = binding(agent={"url": "http://a/", "headers": {"Authorization": "Bearer s3cr3t"}})
    also = binding(agent={"url": "http://a/", "headers": {"Authorization": {"fromEnv": "Bearer s3cr3t"}}})
    connection = varied(CONNECTION, "spec.botToken", "xoxb-s3cr3t")

    refusals = [errors_of(document), errors_of(also), errors_of(connection)]
    assert [len(refusal) > 0 for refusal in refusals] == [True, True, True]  # each one is refused
    assert [text for refusal in refusals for text in refusal if "s3cr3t" in text] == []


NOT_A_BARE_ADDRESS = (
    "must be an address without credentials (user:password@), a query (?…) or a fragment (#…): "
    "a credential goes in spec.agent.headers, read from the environment"
)


@pytest.mark.parametrize(
    "address",
    [
        "https://agent:s3cr3t@agents.example/",
        "https://s3cr3t@agents.example/",
        "https://@agents.example/",
        "https://agents.example/?token=s3cr3t",
        "https://agents.example/?",
        "https://agents.example/#s3cr3t",
        "https://agents.example/#",
    ],
)
@pytest.mark.parametrize(
    ("agent", "path"),
    [
        (lambda address: {"url": address}, "spec.agent.url"),
        (
            lambda address: {"kagent": {"controller": address, "namespace": "ops", "name": "k8s-agent"}},
            "spec.agent.kagent.controller",
        ),
    ],
    ids=["agent url", "kagent controller"],
)
def test_an_agent_or_controller_address_with_credentials_a_query_or_a_fragment_is_refused_unrepeated(
    address, agent, path
):
    assert errors_of(binding(agent=agent(address))) == [f"{B}: {path}: {NOT_A_BARE_ADDRESS}"]


def test_a_channel_bound_to_another_binding_is_refused():
    assert errors_of(MINIMAL_BINDING, bound_channels={("acme", "C0123456789"): "other"}) == [
        f'{B}: spec.channels[0]: channel C0123456789 is already bound to Binding "other" on Connection "acme"'
    ]


def test_a_channel_claimed_by_two_bindings_of_one_input_is_refused_on_the_second():
    other = varied(MINIMAL_BINDING, "metadata.name", "other")

    assert errors_of(MINIMAL_BINDING, other) == [
        'Binding "other": spec.channels[0]: channel C0123456789 is already bound to Binding "ops" '
        'on Connection "acme"'
    ]


def test_an_unknown_connection_is_refused():
    assert errors_of(binding(connection="globex")) == [f'{B}: spec.connection: unknown Connection "globex"']


def test_a_resource_defined_twice_in_one_input_is_refused():
    assert errors_of(CONNECTION, CONNECTION) == [
        'Connection "acme": metadata.name: is defined more than once (first in document 1 in test.yaml)'
    ]


def test_every_refusal_of_a_document_is_reported_in_field_order():
    document = binding(
        output="stream",
        connection="globex",
        interactions={"timeout": "soon", "toolApprovals": True},
        session={"threadTTL": "forever"},
    )

    assert errors_of(document) == [
        f'{B}: spec.connection: unknown Connection "globex"',
        f'{B}: spec.output: must be one of live, final (got "stream")',
        f"{B}: spec.interactions.toolApprovals: tool approvals need the kagent-v1 dialect "
        "(spec.agent.dialect is a2a)",
        f'{B}: spec.interactions.timeout: must be a duration such as 45s, 30m, 1h30m or 90d (got "soon")',
        f'{B}: spec.session.threadTTL: must be a duration such as 45s, 30m, 1h30m or 90d (got "forever")',
    ]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            varied(CONNECTION, "spec.botToken", "xoxb-123"),
            [
                'Connection "acme": spec.botToken: must be a reference to an environment variable or a '
                "file, {fromEnv: VARIABLE_NAME} or {fromFile: /path}; a secret is never written in a manifest (got a string)"
            ],
            id="inline secret",
        ),
        pytest.param(
            varied(CONNECTION, "spec.signingSecret"),
            ['Connection "acme": spec.signingSecret: is required'],
            id="missing signing secret",
        ),
        pytest.param(
            varied(CONNECTION, "spec.slashCommand", "kourier"),
            [
                'Connection "acme": spec.slashCommand: must be a slash and up to 31 lowercase letters, digits, '
                '- or _, as Slack names commands (got "kourier")'
            ],
            id="slash command without its slash",
        ),
        pytest.param(
            varied(CONNECTION, "spec.slashCommand", 7),
            ['Connection "acme": spec.slashCommand: must be a string (got 7)'],
            id="slash command not a string",
        ),
        pytest.param(
            varied(CONNECTION, "spec.agentSessions", "yes"),
            ['Connection "acme": spec.agentSessions: must be true or false (got "yes")'],
            id="agent sessions not a boolean",
        ),
        pytest.param(
            varied(CONNECTION, "spec.appToken", {"fromEnv": "SLACK_APP_TOKEN", "fromFile": "/x"}),
            ['Connection "acme": spec.appToken: must hold one of fromEnv and fromFile, not both'],
            id="both sources in a reference",
        ),
        pytest.param(
            varied(CONNECTION, "spec.appToken", {"fromVault": "kv/slack"}),
            [
                'Connection "acme": spec.appToken.fromVault: unknown field (expected one of: fromEnv, fromFile)',
                'Connection "acme": spec.appToken.fromEnv: is required',
            ],
            id="unknown key in a reference",
        ),
        pytest.param(
            varied(CONNECTION, "spec.botToken", {}),
            ['Connection "acme": spec.botToken.fromEnv: is required'],
            id="empty reference",
        ),
    ],
)
def test_a_connection_is_refused_naming_the_connection_and_the_field(document, expected):
    assert errors_of(document) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            ["a list"],
            "document 1 in test.yaml: must be a mapping with apiVersion, kind, metadata, spec (got a list)",
        ),
        (
            varied(MINIMAL_BINDING, "kind", "Bindings"),
            'document 1 in test.yaml: kind: must be one of Connection, Binding (got "Bindings")',
        ),
    ],
)
def test_a_document_that_is_not_a_resource_is_refused_by_its_place(data, expected):
    assert errors_of(data) == [expected]


def test_broken_yaml_is_refused_with_its_line():
    _, problems = manifest.parse_documents("kind: Binding\nspec: [C1\n", "ops.yaml")

    assert [str(p) for p in problems] == [
        "ops.yaml: line 3, column 1: not valid YAML: expected ',' or ']', but got '<stream end>'"
    ]


def test_a_key_written_twice_is_refused_rather_than_silently_dropped():
    _, problems = manifest.parse_documents("kind: Binding\noutput: live\noutput: final\n", "ops.yaml")

    assert [str(p) for p in problems] == [
        'ops.yaml: line 3, column 1: not valid YAML: duplicate key "output"'
    ]


def test_keys_merged_from_an_anchor_may_be_overridden():
    parsed, problems = manifest.parse_documents("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n")

    assert problems == []
    assert parsed[0].data["other"] == {"x": 1, "y": 3}


def test_empty_documents_are_skipped_but_keep_their_place():
    parsed, _ = manifest.parse_documents("---\n---\nkind: Binding\n", "ops.yaml")

    assert [(d.index, d.location) for d in parsed] == [(2, "document 2 in ops.yaml")]


# --- Warnings ----------------------------------------------------------------------------------------


def test_tool_approvals_without_approver_groups_is_accepted_with_a_warning_naming_the_binding():
    document = binding(
        agent={"url": "http://a/", "dialect": "kagent-v1"}, interactions={"toolApprovals": True}
    )

    validation = manifest.validate(documents(document), connections=["acme"])

    assert validation.errors == []
    assert [str(w) for w in validation.warnings] == [
        'Binding "ops": spec.interactions.toolApprovals is true but approverGroups is empty: '
        "any non-bot member of the channel may decide approvals"
    ]


def test_tool_approvals_with_approver_groups_has_no_warning():
    document = binding(
        agent={"url": "http://a/", "dialect": "kagent-v1"},
        interactions={"toolApprovals": True, "approverGroups": ["S0123456789"]},
    )

    assert manifest.validate(documents(document), connections=["acme"]).warnings == []


# --- Triggers ----------------------------------------------------------------------------------------

PROMETHEUS = {"name": "prometheus", "kind": "alertmanager", "token": {"fromEnv": "OPS_TRIGGER_TOKEN"}}


def test_a_binding_declares_its_triggers_in_the_order_given():
    hooks = {
        "name": "hooks",
        "kind": "generic",
        "token": {"fromEnv": "HOOKS_TOKEN"},
        "channel": "C0123456789",
    }
    validation = manifest.validate(documents(binding(triggers=[PROMETHEUS, hooks])), connections=["acme"])

    [spec] = validation.bindings
    assert spec.triggers == (
        manifest.TriggerSpec("prometheus", manifest.TriggerKind.ALERTMANAGER, "OPS_TRIGGER_TOKEN"),
        manifest.TriggerSpec("hooks", manifest.TriggerKind.GENERIC, "HOOKS_TOKEN", "C0123456789"),
    )


def test_an_alertmanager_trigger_threads_per_group_up_to_twenty_an_hour_unless_it_says_otherwise():
    per_alert = {**PROMETHEUS, "name": "per-alert", "threadPer": "alert", "maxThreadsPerHour": 5}
    validation = manifest.validate(documents(binding(triggers=[PROMETHEUS, per_alert])), connections=["acme"])

    [spec] = validation.bindings
    default, chosen = spec.triggers
    assert (default.thread_per, default.max_threads_per_hour) == (manifest.ThreadPer.GROUP, 20)
    assert (chosen.thread_per, chosen.max_threads_per_hour) == (manifest.ThreadPer.ALERT, 5)


def test_a_binding_without_triggers_has_none():
    [spec] = manifest.validate(documents(binding()), connections=["acme"]).bindings

    assert spec.triggers == ()


@pytest.mark.parametrize(
    ("triggers", "error"),
    [
        pytest.param(
            [PROMETHEUS, {**PROMETHEUS, "kind": "generic"}],
            'Binding "ops": spec.triggers[1].name: duplicate trigger "prometheus"',
            id="duplicate name",
        ),
        pytest.param(
            [{**PROMETHEUS, "kind": "nagios"}],
            'Binding "ops": spec.triggers[0].kind: must be one of alertmanager, generic (got "nagios")',
            id="unknown kind",
        ),
        pytest.param(
            [{"name": "prometheus", "kind": "alertmanager"}],
            'Binding "ops": spec.triggers[0].token: is required',
            id="missing token",
        ),
        pytest.param(
            [{**PROMETHEUS, "token": "s3cret"}],
            'Binding "ops": spec.triggers[0].token: must be a reference to an environment variable or a '
            "file, {fromEnv: VARIABLE_NAME} or {fromFile: /path}; a secret is never written in a manifest (got a string)",
            id="token written in the manifest",
        ),
        pytest.param(
            [{"kind": "alertmanager", "token": {"fromEnv": "T"}}],
            'Binding "ops": spec.triggers[0].name: is required',
            id="missing name",
        ),
        pytest.param(
            [{**PROMETHEUS, "kind": None}],
            'Binding "ops": spec.triggers[0].kind: is required',
            id="missing kind",
        ),
        pytest.param(
            [{**PROMETHEUS, "channel": "C0000000009"}],
            'Binding "ops": spec.triggers[0].channel: must be one of the Binding\'s channels (C0123456789) '
            '(got "C0000000009")',
            id="channel not bound",
        ),
        pytest.param(
            [{**PROMETHEUS, "url": "x"}],
            'Binding "ops": spec.triggers[0].url: unknown field (expected one of: name, kind, token, channel, '
            "threadPer, maxThreadsPerHour)",
            id="unknown field",
        ),
        pytest.param(
            [{**PROMETHEUS, "threadPer": "pod"}],
            'Binding "ops": spec.triggers[0].threadPer: must be one of group, alert (got "pod")',
            id="unknown threadPer",
        ),
        pytest.param(
            [{**PROMETHEUS, "kind": "generic", "threadPer": "group"}],
            'Binding "ops": spec.triggers[0].threadPer: only an alertmanager trigger groups alerts; '
            "a generic one has a thread per alert",
            id="threadPer on a generic trigger",
        ),
        pytest.param(
            [{**PROMETHEUS, "maxThreadsPerHour": 0}],
            'Binding "ops": spec.triggers[0].maxThreadsPerHour: must be a whole number from 1 to 10000 (got 0)',
            id="no threads at all",
        ),
        pytest.param(
            [{**PROMETHEUS, "maxThreadsPerHour": "20"}],
            'Binding "ops": spec.triggers[0].maxThreadsPerHour: must be a whole number from 1 to 10000 (got "20")',
            id="cap not a number",
        ),
        pytest.param(
            {"prometheus": PROMETHEUS},
            'Binding "ops": spec.triggers: must be a list (got a mapping)',
            id="not a list",
        ),
    ],
)
def test_a_trigger_is_refused_naming_the_binding_and_the_field(triggers, error):
    assert errors_of(binding(triggers=triggers)) == [error]


def test_a_trigger_names_its_channel_when_the_binding_has_several():
    document = binding(channels=["C0000000001", "C0000000002"], triggers=[PROMETHEUS])

    assert errors_of(document) == [
        'Binding "ops": spec.triggers[0].channel: is required when the Binding has more than one channel'
    ]


def test_triggers_are_written_back_and_read_again_unchanged():
    other = {
        **PROMETHEUS,
        "name": "other",
        "channel": "C0123456789",
        "threadPer": "alert",
        "maxThreadsPerHour": 3,
    }
    document = binding(triggers=[PROMETHEUS, other])
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings

    text = manifest.dump_manifests([spec])
    [again] = manifest.validate(manifest.parse_documents(text)[0], connections=["acme"]).bindings

    assert "  - {name: prometheus" not in text  # a block list, each token inline
    assert "    token: {fromEnv: OPS_TRIGGER_TOKEN}\n" in text
    assert "    threadPer: alert\n    maxThreadsPerHour: 3\n" in text
    assert text.count("threadPer") == 1  # a default is not written
    assert again == spec


def test_a_changed_trigger_is_reported_as_a_change_of_spec_triggers():
    [before] = manifest.validate(documents(binding(triggers=[PROMETHEUS])), connections=["acme"]).bindings
    changed = binding(triggers=[{**PROMETHEUS, "token": {"fromEnv": "OTHER"}}])
    [after] = manifest.validate(documents(changed), connections=["acme"]).bindings

    assert manifest.changed_fields(before, after) == ["spec.triggers"]


# --- Written back ------------------------------------------------------------------------------------


def test_specs_are_written_back_with_every_field_in_the_issues_shape():
    validation = manifest.validate(manifest.parse_documents(EXAMPLE)[0])

    assert manifest.dump_manifests([*validation.connections, *validation.bindings]) == (
        "apiVersion: kourier/v1\n"
        "kind: Connection\n"
        "metadata: {name: acme}\n"
        "spec:\n"
        "  botToken: {fromEnv: SLACK_BOT_TOKEN}\n"
        "  signingSecret: {fromEnv: SLACK_SIGNING_SECRET}\n"
        "  appToken: {fromEnv: SLACK_APP_TOKEN}\n"
        "---\n"
        "apiVersion: kourier/v1\n"
        "kind: Binding\n"
        "metadata: {name: ops}\n"
        "spec:\n"
        "  connection: acme\n"
        "  channels: [C0123456789]\n"
        "  agent:\n"
        "    url: http://127.0.0.1:8083/\n"
        "    dialect: kagent-v1\n"
        "    protocolVersion: auto\n"
        "    headers:\n"
        "      Authorization: {fromEnv: OPS_AGENT_TOKEN}\n"
        "    userIdentity: none\n"
        "  output: live\n"
        "  chat:\n"
        "    threadReplies: all\n"
        "    acknowledgment: {enabled: true, emoji: hourglass_flowing_sand}\n"
        "    progress: steps-and-activity\n"
        "  interactions:\n"
        "    askUser: false\n"
        "    toolApprovals: false\n"
        "    approverGroups: []\n"
        "    timeout: 30m\n"
        "  session:\n"
        "    threadTTL: 90d\n"
        "  triggers: []\n"
        "  replies: {allowMentions: none, maxMessages: 10}\n"
    )


@pytest.mark.parametrize(
    ("replies", "read"),
    [
        ({}, manifest.RepliesSpec()),
        ({"allowMentions": "users"}, manifest.RepliesSpec(allow_mentions=manifest.Mentions.USERS)),
        ({"maxMessages": 3}, manifest.RepliesSpec(max_messages=3)),
    ],
)
def test_a_bindings_replies_may_allow_mentions_of_people_and_set_the_most_messages_per_answer(replies, read):
    [spec] = manifest.validate(documents(binding(replies=replies)), connections=["acme"]).bindings
    assert spec.replies == read


@pytest.mark.parametrize(
    ("replies", "error"),
    [
        ({"allowMentions": "channel"}, "spec.replies.allowMentions: must be one of"),
        ({"maxMessages": 0}, "spec.replies.maxMessages: must be a whole number from 1 to 100 (got 0)"),
        ({"maxMessages": "10"}, "spec.replies.maxMessages: must be a whole number from 1 to 100"),
        ({"maxMessages": True}, "spec.replies.maxMessages: must be a whole number from 1 to 100"),
        ({"maxMessages": 101}, "spec.replies.maxMessages: must be a whole number from 1 to 100 (got 101)"),
    ],
)
def test_replies_past_their_choices_or_limits_are_refused(replies, error):
    validation = manifest.validate(documents(binding(replies=replies)), connections=["acme"])
    [problem] = validation.errors
    assert error in str(problem)


@pytest.mark.parametrize(
    ("thread_context", "read"),
    [
        ({}, manifest.ThreadContextSpec(enabled=True, max_messages=50, max_characters=12_000)),
        ({"enabled": False}, manifest.ThreadContextSpec(enabled=False)),
        (
            {"maxMessages": 5, "maxCharacters": 900},
            manifest.ThreadContextSpec(max_messages=5, max_characters=900),
        ),
    ],
)
def test_a_thread_so_far_is_carried_by_default_and_may_be_switched_off_or_bounded(thread_context, read):
    document = binding(chat={"threadContext": thread_context})
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings
    assert spec.chat.thread_context == read


def test_a_binding_that_leaves_the_thread_so_far_as_it_is_exports_no_thread_context():
    [spec] = manifest.validate(documents(binding()), connections=["acme"]).bindings
    assert "threadContext" not in manifest.binding_manifest(spec)["spec"]["chat"]


@pytest.mark.parametrize(
    ("thread_context", "error"),
    [
        ({"enabled": "yes"}, "spec.chat.threadContext.enabled: must be true or false"),
        (
            {"maxMessages": 0},
            "spec.chat.threadContext.maxMessages: must be a whole number from 1 to 1000 (got 0)",
        ),
        ({"maxMessages": 1001}, "spec.chat.threadContext.maxMessages: must be a whole number from 1 to 1000"),
        ({"maxMessages": True}, "spec.chat.threadContext.maxMessages: must be a whole number from 1 to 1000"),
        (
            {"maxCharacters": 199},
            "spec.chat.threadContext.maxCharacters: must be a whole number from 200 to 100000",
        ),
        ({"maxCharacters": "12k"}, "spec.chat.threadContext.maxCharacters: must be a whole number from 200"),
        ({"messages": 5}, "spec.chat.threadContext.messages"),
        ("on", "spec.chat.threadContext: must be a mapping"),
    ],
)
def test_a_thread_context_past_its_limits_is_refused(thread_context, error):
    validation = manifest.validate(
        documents(binding(chat={"threadContext": thread_context})), connections=["acme"]
    )
    [problem] = validation.errors
    assert error in str(problem)


@pytest.mark.parametrize(
    "document",
    [
        MINIMAL_BINDING,
        binding(
            agent={"url": "http://a/", "protocolVersion": "1.0"}, chat={"acknowledgment": {"emoji": "+1"}}
        ),
        binding(
            channels=["C2", "C1"],
            agent={
                "url": "https://a/",
                "dialect": "kagent-v1",
                "headers": {"b": {"fromEnv": "B"}, "A": {"fromEnv": "A"}},
            },
            interactions={"toolApprovals": True, "approverGroups": ["S2", "S1"], "timeout": "90m"},
            session={"threadTTL": "36h"},
        ),
    ],
)
def test_what_is_written_back_reads_into_the_same_spec(document):
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings

    text = manifest.dump_manifests([spec])
    [again] = manifest.validate(manifest.parse_documents(text)[0], connections=["acme"]).bindings

    assert again == spec
    assert manifest.dump_manifests([again]) == text


def every_field_specs() -> list[manifest.Spec]:
    validation = manifest.validate(documents(*every_field()))
    assert validation.ok, [str(error) for error in validation.errors]
    return [*validation.connections, *validation.bindings]


def test_the_manifests_of_the_round_trip_set_every_field_of_every_spec():
    assert unset_fields(every_field_specs()) == []


def test_a_field_left_at_its_default_is_found_unset():
    [spec] = manifest.validate(documents(MINIMAL_BINDING), connections=["acme"]).bindings

    unset = unset_fields([spec])

    assert {
        "BindingSpec.feedback",
        "BindingSpec.direct_messages.approvals_channel",
        "BindingSpec.agent.kagent.namespace",
        "BindingSpec.triggers.name",
    } <= set(unset)
    assert "BindingSpec.agent.url" not in unset


def test_manifests_that_set_every_field_are_written_back_as_they_were_read():
    specs = every_field_specs()

    written = list(yaml.safe_load_all(manifest.dump_manifests(specs)))

    assert written == every_field()
    again = manifest.validate(documents(*written))
    assert [*again.connections, *again.bindings] == specs


def test_a_connection_without_an_app_token_is_written_without_one():
    [spec] = manifest.validate(documents(CONNECTION)).connections

    assert "appToken" not in manifest.dump_manifests([spec])


def test_a_connection_keeps_the_default_slash_command_unwritten():
    [spec] = manifest.validate(documents(CONNECTION)).connections

    assert spec.slash_command == "/kourier"
    assert "slashCommand" not in manifest.dump_manifests([spec])


def test_a_connection_leaves_slacks_agent_sessions_off_and_unwritten_unless_asked():
    [spec] = manifest.validate(documents(CONNECTION)).connections

    assert spec.agent_sessions is False
    assert "agentSessions" not in manifest.dump_manifests([spec])


def test_changed_fields_are_named_by_their_manifest_paths():
    old = manifest.validate(documents(MINIMAL_BINDING), connections=["acme"]).bindings[0]
    new = manifest.validate(
        documents(binding(output="final", channels=["C1"], chat={"acknowledgment": {"enabled": False}})),
        connections=["acme"],
    ).bindings[0]

    assert manifest.changed_fields(old, new) == [
        "spec.channels",
        "spec.output",
        "spec.chat.acknowledgment.enabled",
    ]


@pytest.mark.parametrize(
    "tokens",
    [
        pytest.param(0, id="zero"),
        pytest.param("lots", id="a string"),
        pytest.param(1.5, id="a fraction"),
        pytest.param(True, id="a boolean"),
    ],
)
def test_a_daily_token_budget_must_be_a_whole_number_of_tokens(tokens):
    assert errors_of(binding(**{"budget.dailyTokensPerChannel": tokens})) == [
        f'Binding "ops": spec.budget.dailyTokensPerChannel: must be a whole number of tokens from 1 to '
        f"1000000000000 (got {show(tokens)})"
    ]


def test_a_daily_token_budget_is_read_and_written_back():
    validation = manifest.validate(
        documents(binding(**{"budget.dailyTokensPerChannel": 500000})), connections=["acme"]
    )

    [spec] = validation.bindings
    assert spec.budget == manifest.BudgetSpec(daily_tokens_per_channel=500000)
    assert manifest.dump_manifests([spec]).endswith("  budget:\n    dailyTokensPerChannel: 500000\n")


def test_deny_reasons_and_feedback_are_opt_in_and_exported_only_when_set():
    [plain] = manifest.validate(documents(MINIMAL_BINDING), connections=["acme"]).bindings
    assert (plain.interactions.deny_reasons, plain.feedback) == (False, False)
    exported = manifest.binding_manifest(plain)["spec"]
    assert "feedback" not in exported
    assert "denyReasons" not in exported["interactions"]

    document = binding(interactions={"toolApprovals": True, "denyReasons": True}, feedback=True)
    document["spec"]["agent"]["dialect"] = "kagent-v1"
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings
    assert (spec.interactions.deny_reasons, spec.feedback) == (True, True)
    exported = manifest.binding_manifest(spec)["spec"]
    assert (exported["interactions"]["denyReasons"], exported["feedback"]) == (True, True)


def test_a_reason_with_a_denial_needs_tool_approvals():
    document = binding(interactions={"denyReasons": True})
    assert any(
        "spec.interactions.denyReasons: a reason with a denial needs toolApprovals: true" in error
        for error in errors_of(document)
    )


class TestRemindBefore:
    """interactions.remindBefore (beyond the spec, issue 21): opt-in, shorter than the timeout."""

    APPROVALS = {"agent": {"url": "http://a/", "dialect": "kagent-v1"}}

    def test_unset_it_is_none_and_not_written_back(self):
        [spec] = manifest.validate(documents(binding(**self.APPROVALS)), connections=["acme"]).bindings
        assert spec.interactions.remind_before is None
        assert "remindBefore" not in manifest.dump_manifests([spec])

    def test_set_it_reads_and_is_written_back_the_same(self):
        document = binding(**self.APPROVALS, interactions={"toolApprovals": True, "remindBefore": "10m"})
        [spec] = manifest.validate(documents(document), connections=["acme"]).bindings
        assert spec.interactions.remind_before == timedelta(minutes=10)
        text = manifest.dump_manifests([spec])
        assert "remindBefore: 10m" in text
        [again] = manifest.validate(manifest.parse_documents(text)[0], connections=["acme"]).bindings
        assert again == spec

    @pytest.mark.parametrize(
        ("interactions", "error"),
        [
            (
                {"toolApprovals": True, "timeout": "30m", "remindBefore": "30m"},
                'spec.interactions.remindBefore: must be shorter than spec.interactions.timeout (30m) (got "30m")',
            ),
            ({"remindBefore": "10m"}, "spec.interactions.remindBefore: a reminder needs toolApprovals: true"),
            (
                {"toolApprovals": True, "remindBefore": "soon"},
                'spec.interactions.remindBefore: must be a duration such as 45s, 30m, 1h30m or 90d (got "soon")',
            ),
        ],
    )
    def test_what_cannot_remind_is_refused(self, interactions, error):
        assert errors_of(binding(**self.APPROVALS, interactions=interactions)) == [f"{B}: {error}"]


# --- Approval rules past the spec (issue 21): separateApprover and tools --------------------------------

KAGENT = {"url": "http://a/", "dialect": "kagent-v1"}


def ruled(**interactions):
    return binding(agent=KAGENT, interactions={"toolApprovals": True, **interactions})


def test_approval_rules_read_into_the_spec_in_the_order_written():
    document = ruled(
        separateApprover=True,
        tools=[
            {"match": "db_*", "approverGroups": ["S0DBA"], "separateApprover": False},
            {"match": "check_status", "unattended": "deny"},
            {"match": "restart_?", "approverGroups": []},
        ],
    )
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings

    assert spec.interactions.separate_approver is True
    assert spec.interactions.tools == (
        manifest.ToolRule("db_*", approver_groups=("S0DBA",), separate_approver=False),
        manifest.ToolRule("check_status", unattended=manifest.Unattended.DENY),
        manifest.ToolRule("restart_?", approver_groups=()),
    )


def test_without_them_nothing_changes_and_the_export_reads_as_before():
    [spec] = manifest.validate(documents(ruled()), connections=["acme"]).bindings

    assert (spec.interactions.separate_approver, spec.interactions.tools) == (False, ())
    text = manifest.dump_manifests([spec])
    assert "separateApprover" not in text
    assert "tools" not in text


def test_approval_rules_are_written_back_and_read_again_the_same():
    document = ruled(
        separateApprover=True,
        tools=[{"match": "db_*", "approverGroups": ["S0DBA"]}, {"match": "*", "unattended": "deny"}],
    )
    [spec] = manifest.validate(documents(document), connections=["acme"]).bindings

    text = manifest.dump_manifests([spec])
    [again] = manifest.validate(manifest.parse_documents(text)[0], connections=["acme"]).bindings

    assert "    separateApprover: true\n    tools:\n    - {match: db_*, approverGroups: [S0DBA]}\n" in text
    assert again == spec


def test_a_changed_rule_is_a_change_of_spec_interactions_tools():
    [before] = manifest.validate(documents(ruled(tools=[{"match": "db_*"}])), connections=["acme"]).bindings
    [after] = manifest.validate(
        documents(ruled(tools=[{"match": "db_*", "separateApprover": True}])), connections=["acme"]
    ).bindings

    assert manifest.changed_fields(before, after) == ["spec.interactions.tools"]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            ruled(tools=[{"approverGroups": ["S0DBA"]}]),
            [f"{B}: spec.interactions.tools[0].match: is required"],
            id="a rule without match",
        ),
        pytest.param(
            ruled(tools=[{"match": "db_*", "approvers": ["S0DBA"]}]),
            [f'{B}: spec.interactions.tools[0].approvers: unknown field (did you mean "approverGroups"?)'],
            id="an unknown key",
        ),
        pytest.param(
            ruled(tools=[{"match": "db_*", "approverGroups": [f"S{i:02d}" for i in range(11)]}]),
            [f"{B}: spec.interactions.tools[0].approverGroups: at most 10 entries are allowed (got 11)"],
            id="more than 10 groups in one rule",
        ),
        pytest.param(
            ruled(tools=[{"match": ""}]),
            [
                f"{B}: spec.interactions.tools[0].match: must be a tool name or a glob such as db_*, "
                'at most 200 characters (got "")'
            ],
            id="an empty match",
        ),
        pytest.param(
            ruled(tools=[{"match": "db_*", "unattended": "allow"}]),
            [f'{B}: spec.interactions.tools[0].unattended: must be one of ask, deny (got "allow")'],
            id="an unknown unattended",
        ),
        pytest.param(
            ruled(tools=[{"match": "db_*", "separateApprover": "yes"}]),
            [f'{B}: spec.interactions.tools[0].separateApprover: must be true or false (got "yes")'],
            id="separateApprover not a boolean in a rule",
        ),
        pytest.param(
            ruled(tools={"match": "db_*"}),
            [
                f"{B}: spec.interactions.tools: must be a list of rules such as "
                "{match: db_*, separateApprover: true} (got a mapping)"
            ],
            id="tools not a list",
        ),
        pytest.param(
            ruled(tools=["db_*"]),
            [f'{B}: spec.interactions.tools[0]: must be a mapping (got "db_*")'],
            id="a rule not a mapping",
        ),
        pytest.param(
            binding(agent=KAGENT, interactions={"separateApprover": True}),
            [f"{B}: spec.interactions.separateApprover: separateApprover needs toolApprovals: true"],
            id="separateApprover without toolApprovals",
        ),
        pytest.param(
            binding(agent=KAGENT, interactions={"tools": [{"match": "db_*"}]}),
            [f"{B}: spec.interactions.tools: tool rules need toolApprovals: true"],
            id="tools without toolApprovals",
        ),
        pytest.param(
            ruled(tools=[{"match": f"t{i}"} for i in range(51)]),
            [f"{B}: spec.interactions.tools: at most 50 rules are allowed (got 51)"],
            id="more than 50 rules",
        ),
    ],
)
def test_approval_rules_are_refused_with_the_field_they_are_about(document, expected):
    assert errors_of(CONNECTION, document) == expected
