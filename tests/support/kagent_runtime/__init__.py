"""The real kagent runtimes people run, each with a scripted model, for conformance tests: kagent-adk
0.10.4 (A2A 0.3) and the newest 1.0 pre-release (A2A 1.0); ``lines.py`` names them.

| module | does |
| --- | --- |
| `lines.py` | the kagent lines: each one's lock file, agent server and A2A version |
| `locks/` | each line's pinned packages (installed with `--no-deps`) |
| `build.py` | builds a line's own virtualenv once per lock file, cached, under a file lock |
| `agent_server.py`, `agent_server_v010.py` | run inside a line's virtualenv: kagent's `KAgentApp` with a scripted model, tools and sub-agents (1.0, 0.10) |
| `scripted_agent.py` | what both servers share: the scripted model (and its usage), the scripted tools, the record of models, tools and request headers |
| `script.py` | the script vocabulary (`Script`, `Turn`, `Call`, `Tool`, `RemoteAgent`, `Usage`, `ask_user`, `ask_agent`) and the record |
| `runtime.py` | `KagentRuntime`: starts the server, waits for its card, reads its record, stops it |
| `stream_cutter.py` | a proxy that drops the first stream after the run ended |
| `fixtures.py` | `kagent_line` (every runtime test runs once per line), `start_kagent_runtime(script)`, `kagent_runtime_python` |

```python
def test_the_model_receives_the_answer(start_kagent_runtime):
    runtime = start_kagent_runtime(
        Script([Turn("Which one?", [ask_user("call_ask", question("Which?", ["A", "B"]))]), Turn("Done.")])
    )
    ...  # the product talks A2A to runtime.url
    assert runtime.model_requests()[1].function_responses["call_ask"] == ...
```
"""
