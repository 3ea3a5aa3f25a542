from collections.abc import Iterator
from pathlib import Path

import pytest

from .process import IdentityProvider, identity_provider


@pytest.fixture
def oidc_provider(tmp_path: Path) -> Iterator[IdentityProvider]:
    """The test provider, running (tests/support/oidc_provider/__init__.py)."""
    folder = tmp_path / "oidc-provider"
    folder.mkdir()
    provider = identity_provider(folder)
    try:
        provider.start()
        yield provider
    finally:
        provider.stop()
