"""Which of a Binding's fields are approval rules, and their values as its manifest writes them: a
change of any, through apply or the admin, is audited field by field
(``bindings.services.writes.save_binding``)."""

from __future__ import annotations

import json
from typing import Any

from .specs import BindingSpec
from .writing import binding_manifest

# The approval rules of ``spec.interactions``, by manifest name. A rule added to the manifest is
# audited once its name is listed here; a name the manifest does not write yet is passed over.
APPROVAL_RULE_FIELDS = (
    "toolApprovals", "approverGroups", "separateApprover", "tools", "timeout", "remindBefore", "denyReasons", "allowForThread",
)  # fmt: skip


def approval_rules(spec: BindingSpec) -> dict[str, Any]:
    """A Binding's approval rules as its manifest writes them, as plain JSON values: a secret appears
    only as the name of its variable (``fromEnv``), never resolved."""
    interactions = binding_manifest(spec)["spec"]["interactions"]
    return {
        name: json.loads(json.dumps(interactions[name]))
        for name in APPROVAL_RULE_FIELDS
        if name in interactions
    }
