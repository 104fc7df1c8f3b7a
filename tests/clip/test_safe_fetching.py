"""With VAULTBOT_CLIP__ALLOW_PRIVATE left false (the default), clip_link connects to nothing on
this machine or its networks: the address it would connect to is checked first, and nothing is
sent. Only addresses are used whose check comes before any connection (no traffic leaves)."""

from __future__ import annotations

import pytest

from tests.clip.conftest import ClipApp
from tests.clip.test_clip_link import clip
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.web_server import FakeWeb


async def intranet(host: str, port: int) -> list[str]:
    """A name server that says every name is a host on a private network."""
    return ["10.0.0.7"]


@pytest.mark.parametrize(
    ("link", "kind"),
    [
        ("http://127.0.0.1:{port}/blog", "a loopback address"),
        ("http://localhost:{port}/blog", "a loopback address"),
        ("http://[::1]:{port}/blog", "a loopback address"),
        ("http://169.254.169.254/latest/meta-data/", "a link-local address (such as a cloud metadata service)"),
        ("http://intranet.example/wiki", "a private address"),
        ("http://[fd00::1]/", "a unique-local address"),
        ("http://224.0.0.1/", "a multicast address"),
        ("http://240.0.0.1/", "a reserved address"),
    ],
)
async def test_private_loopback_link_local_and_reserved_addresses_are_refused_before_connecting(
    clip_app: ClipApp, fake_anthropic: FakeAnthropic, web: FakeWeb, link: str, kind: str
) -> None:
    async def names(host: str, port: int) -> list[str]:
        return ["127.0.0.1", "::1"] if host == "localhost" else await intranet(host, port)

    app = await clip_app(allow_private=False, resolver=names)
    result = await clip(app, fake_anthropic, link.format(port=web.port))
    assert result["is_error"] and result["error_type"] == "address_refused" and not result["retryable"]
    assert kind in result["error"] and "VAULTBOT_CLIP__ALLOW_PRIVATE" in result["error"]
    assert web.hits == {}
    assert not (app.notes.root / "Clippings").exists()
