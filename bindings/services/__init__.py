"""Writing and reading Connections and Bindings: manifests in and out, the admin's checks, and lookups.

Every write of a Connection or Binding goes through ``save_connection`` / ``save_binding`` after
``bindings.manifest.validate`` has accepted it: ``apply_manifests`` (``manage.py apply``) and the admin
share the validator and the write path.

The parts, each importable from here (``from bindings import services``):

- ``applying``: ``apply_manifests`` and ``export_manifests``, and what applying reports;
- ``row_specs``: the spec a row holds; ``writes``: a spec into its row, audited; ``actors``: who, for the audit;
- ``validation``: the validator told of the database, and the admin forms' checks;
- ``operator_warnings``: what is accepted but the operator should know (unset variables, cards);
- ``agents``: kagent agents found by name, and how a Binding reaches its agent;
- ``slack_identities``: whom a Connection's bot token belongs to.
"""

from bindings.services.actors import apply_actor
from bindings.services.agents import describe_agent, find_kagent_agents
from bindings.services.applying import Action, Applied, ApplyResult, apply_manifests, export_manifests
from bindings.services.operator_warnings import (
    agent_card_warnings,
    binding_warnings,
    connection_warnings,
    operator_warnings,
    unset_variable_warnings,
)
from bindings.services.row_specs import binding_spec, connection_spec
from bindings.services.slack_identities import (
    TokenTest,
    forget_noted_identities,
    note_slack_identity,
    try_bot_token,
)
from bindings.services.validation import (
    SERVICE_SECRET_VARIABLES,
    check_binding,
    check_connection,
    existing_state,
    refuse_unfit_secret_variables,
    refuse_unlisted_header_variables,
)
from bindings.services.writes import (
    APPROVAL_RULE_CHANGED,
    binding_fields,
    connection_fields,
    save_binding,
    save_connection,
)

__all__ = [
    "APPROVAL_RULE_CHANGED",
    "SERVICE_SECRET_VARIABLES",
    "Action",
    "Applied",
    "ApplyResult",
    "TokenTest",
    "agent_card_warnings",
    "apply_actor",
    "apply_manifests",
    "binding_fields",
    "binding_spec",
    "binding_warnings",
    "check_binding",
    "check_connection",
    "connection_fields",
    "connection_spec",
    "connection_warnings",
    "describe_agent",
    "existing_state",
    "export_manifests",
    "find_kagent_agents",
    "forget_noted_identities",
    "note_slack_identity",
    "operator_warnings",
    "refuse_unfit_secret_variables",
    "refuse_unlisted_header_variables",
    "save_binding",
    "save_connection",
    "try_bot_token",
    "unset_variable_warnings",
]
