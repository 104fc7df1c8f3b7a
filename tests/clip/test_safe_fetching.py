"""With VAULTBOT_CLIP__ALLOW_PRIVATE left false (the default), clip_link connects to nothing on
this machine or its networks: the address it would connect to is checked first, and nothing is
sent. Only addresses are used whose check comes before any connection (no traffic leaves)."""

from __future__ import annotations

import pytest

from bot.clip import AddressRefused
from bot.clip.addresses import refusal
from bot.clip.fetch import Fetcher
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


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("http://169.254.169.254/latest/meta-data/", "a link-local address (such as a cloud metadata service)"),
        ("http://intranet.example/wiki", "a private address"),
        ("http://[::1]:{port}/essay", "a loopback address"),
        ("http://10.1.2.3/", "a private address"),
    ],
)
async def test_a_redirect_from_a_public_site_to_a_private_address_is_refused_before_connecting(
    web: FakeWeb, target: str, kind: str
) -> None:
    # The local fake site stands for the internet: its address is the one the rule lets through.
    def internet(address: str) -> str | None:
        return None if address == "127.0.0.1" else refusal(address)

    async def names(host: str, port: int) -> list[str]:
        return ["127.0.0.1"] if host == "site.example" else await intranet(host, port)

    fetcher = Fetcher(allow_private=False, max_bytes=1 << 20, timeout=10, resolver=names, rule=internet)
    try:
        web.redirect("/elsewhere", f"http://site.example:{web.port}/essay")
        followed = await fetcher.fetch(f"http://site.example:{web.port}/elsewhere")
        assert followed.url.endswith("/essay") and b"<html" in followed.data.lower()  # the site itself is reached

        web.redirect("/moved", target.format(port=web.port))
        with pytest.raises(AddressRefused) as refused:
            await fetcher.fetch(f"http://site.example:{web.port}/moved")
    finally:
        await fetcher.close()
    assert kind in str(refused.value) and "VAULTBOT_CLIP__ALLOW_PRIVATE" in str(refused.value)
    assert web.hits == {"/elsewhere": 1, "/essay": 1, "/moved": 1}  # the hop was never requested
