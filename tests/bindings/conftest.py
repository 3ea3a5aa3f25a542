import pytest

# The variables the manifests of these tests name in agent headers, as an operator would list them.
HEADER_VARIABLES = ["OPS_AGENT_TOKEN", "TRIAGE_*"]


@pytest.fixture(autouse=True)
def agent_header_variables(settings):
    settings.AGENT_HEADER_VARIABLES = HEADER_VARIABLES
