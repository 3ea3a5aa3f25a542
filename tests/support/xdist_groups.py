"""``--dist loadgroup`` that groups again: tests marked ``xdist_group(name)`` run on one worker.

pytest-xdist 3.8 groups by appending ``@name`` to each marked item's node id, written to
``item._nodeid``; pytest 9.2 keeps a node's id as a structured ``NodeId`` in ``item._id`` and no
longer reads ``_nodeid`` (pytest-xdist#1386), so the suffix is lost and the group's tests spread over
the workers. This plugin writes the same suffix where pytest now reads it, after xdist's own hook."""

from __future__ import annotations

import pytest
from _pytest.nodeid import NodeId


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers only
        return
    for item in items:
        names = sorted(
            {
                str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                for mark in item.iter_markers("xdist_group")
            }
        )
        if names and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")  # type: ignore[attr-defined]
