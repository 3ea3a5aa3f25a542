"""The real kagent 1.0 runtime (kagent-adk 1.0.0a5) with a scripted model, for conformance tests.

| module | does |
| --- | --- |
| `requirements.lock.txt` | the runtime's pinned packages (installed with `--no-deps`) |
| `build.py` | builds the runtime's own virtualenv once per lock file, cached, under a file lock |
| `agent_server.py` | runs inside that virtualenv: kagent's `KAgentApp` with a scripted model, tools and sub-agents |
| `script.py` | the script vocabulary (`Script`, `Turn`, `Call`, `Tool`, `RemoteAgent`, `ask_user`, `ask_agent`) and the record |
| `runtime.py` | `KagentRuntime`: starts the server, waits for its card, reads its record, stops it |
| `fixtures.py` | `start_kagent_runtime(script)`, `kagent_runtime_python` |

```python
def test_the_model_receives_the_answer(start_kagent_runtime):
    runtime = start_kagent_runtime(
        Script([Turn("Which one?", [ask_user("call_ask", question("Which?", ["A", "B"]))]), Turn("Done.")])
    )
    ...  # the product talks A2A to runtime.url
    assert runtime.model_requests()[1].function_responses["call_ask"] == ...
```
"""
