"""The demo agent: a small scripted A2A agent shipped with the product, so that every feature can be
tried without a model or a network (``manage.py demo_agent``).

It speaks the ``kagent-v1`` dialect as kagent 1.0 does (docs/kagent-dialect.md): streamed artifacts, tool
calls and results marked ``kagent.dev/a2a/part-type``, and the hitl/v1 extension's pauses. What it
does for a message is decided in ``script`` (pure); ``server`` plays it over a2a-sdk's server.

It is the other side of the wire: it imports nothing of the product (a contract in pyproject.toml).
"""
