"""The A2A adapter: the only part of Kourier that knows A2A (JSON-RPC, SSE, method names, versions).

- ``client``: ``A2AClient`` (stream, get, cancel, subscribe, list).
- ``errors``: typed errors saying whether a retry can help and whether the request may have landed.
- ``wire``: the version-neutral A2A objects; ``codec_v10`` / ``codec_v03`` translate them to JSON.
- ``events``: the normalized events the rest of Kourier sees of an agent.
- ``dialects``: per-family readers (wire events -> normalized events) and answer/decision builders.
- ``follow``: ``follow_turn``, one turn's message to its task's end (send, look up, follow again, poll,
  retry), as normalized events; ``GaveUp`` and its kinds when it cannot get there.
- ``factory.make_client``: a client with the timeouts from Django settings.
"""
