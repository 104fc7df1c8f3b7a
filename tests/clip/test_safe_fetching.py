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


# IPv6 addresses that lead to an IPv4 one by their form, each to a place a clip must not reach.
EMBEDDED = [
    ("2002:7f00:1::", "a 6to4 address of 127.0.0.1, a loopback address"),
    ("2002:a9fe:a9fe::1", "a 6to4 address of 169.254.169.254, a link-local address"),
    ("2002:c0a8:101::", "a 6to4 address of 192.168.1.1, a private address"),
    ("64:ff9b::7f00:1", "a NAT64 address of 127.0.0.1, a loopback address"),
    ("64:ff9b::a9fe:a9fe", "a NAT64 address of 169.254.169.254, a link-local address"),
    ("64:ff9b::a00:1", "a NAT64 address of 10.0.0.1, a private address"),
    ("64:ff9b:1::a9fe:a9fe", "a local-use NAT64 address"),
    ("64:ff9b:1:7f00:1::", "a local-use NAT64 address"),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "a Teredo address of 127.0.0.1, a loopback address"),
    ("2001:0:4136:e378::5601:5601", "a Teredo address of 169.254.169.254, a link-local address"),
    ("::ffff:127.0.0.1", "an IPv4-mapped address of 127.0.0.1, a loopback address"),
    ("::ffff:169.254.169.254", "an IPv4-mapped address of 169.254.169.254, a link-local address"),
    ("::ffff:0:a9fe:a9fe", "an IPv4-translated address of 169.254.169.254, a link-local address"),
    ("::127.0.0.1", "an IPv4-compatible address of 127.0.0.1, a loopback address"),
    ("::169.254.169.254", "an IPv4-compatible address of 169.254.169.254, a link-local address"),
]


@pytest.mark.parametrize(("address", "kind"), EMBEDDED)
async def test_6to4_nat64_teredo_and_mapped_forms_of_a_forbidden_address_are_refused_before_connecting(
    clip_app: ClipApp, fake_anthropic: FakeAnthropic, web: FakeWeb, address: str, kind: str
) -> None:
    async def names(host: str, port: int) -> list[str]:
        return [address]  # what a hostile name server answers for the name in the link

    app = await clip_app(allow_private=False, resolver=names)
    for link in (f"http://[{address}]:{web.port}/blog", f"http://sneaky.example:{web.port}/blog"):
        result = await clip(app, fake_anthropic, link)
        assert result["is_error"] and result["error_type"] == "address_refused" and not result["retryable"]
        assert kind in result["error"] and "VAULTBOT_CLIP__ALLOW_PRIVATE" in result["error"]
    assert web.hits == {}


@pytest.mark.parametrize(
    "address",
    [
        "2002:808:808::1",  # 6to4 of 8.8.8.8
        "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34: what DNS64 answers on an IPv6-only network
        "2001:0:4136:e378:8000:63bf:a2b7:27dd",  # Teredo of 93.72.216.34 through a public server
        "::ffff:93.184.216.34",
        "2606:4700:4700::1111",
    ],
)
def test_the_same_forms_of_a_public_address_may_be_reached(address: str) -> None:
    assert refusal(address) is None
