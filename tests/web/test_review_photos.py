"""The run page shows the photo the model saw, served from the vault through the review page: in a
real Chromium under the page's Content-Security-Policy, token-gated, confined like notes."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable

import httpx
import pytest
from PIL import Image
from playwright.async_api import Browser

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.images.pictures import encoded, jpeg, upright
from tests.web.conftest import Served

AppFactory = Callable[..., Awaitable[App]]
Serve = Callable[[App], Awaitable[Served]]


@pytest.fixture
async def app(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> App:
    app = await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )
    fake_anthropic.handler = lambda body: api.text("A bike, leaning on a wall.")
    (app.notes.root / "Attachments").mkdir()
    (app.notes.root / "Attachments" / "photo 5.jpg").write_bytes(jpeg(upright((640, 480)), orientation=6))
    message = InboundMessage(
        channel="terminal",
        conversation="telegram:42",
        sender=Sender(id="ann"),
        text="[Photo saved in the vault: ![[Attachments/photo 5.jpg]]]\nmy bike",
        images=["Attachments/photo 5.jpg"],
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    return app


async def test_the_run_page_shows_the_photo_the_model_saw(app: App, serve_review: Serve, browser: Browser) -> None:
    served = await serve_review(app)
    [run] = await app.store.list_runs()
    context = await browser.new_context(viewport={"width": 360, "height": 800})
    page = await context.new_page()
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    await page.goto(f"{served.base}/runs/{run['id']}?token={served.token}")
    photo = page.get_by_role("img", name="Attachments/photo 5.jpg")
    await photo.wait_for()
    await page.wait_for_function("document.querySelector('.seen img').complete")
    # Loaded (not refused by the CSP or the token gate), and upright as the model saw it: the file is
    # stored 480 × 640 with EXIF orientation 6, which the browser applies as vaultbot did.
    assert await photo.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [640, 480]
    assert await page.get_by_text("640×480 as the model saw it").is_visible()
    assert await photo.evaluate("img => img.getBoundingClientRect().right") <= 360
    assert blocked == []
    await context.close()


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("Attachments/photo%205.jpg", 200),
        ("Attachments/missing.jpg", 404),
        (".obsidian/secret.png", 404),
        ("Attachments/..%2F..%2Foutside.png", 404),
        ("Attachments/link.png", 404),  # a symlink out of the vault
        ("Notes/plan.md", 404),  # not an image: notes have their own page
    ],
)
async def test_vault_images_are_served_only_from_inside_the_vault(
    app: App, serve_review: Serve, path: str, status: int
) -> None:
    root = app.notes.root
    outside = root.parent / "outside.png"
    outside.write_bytes(encoded(Image.new("RGB", (8, 8), "red"), "PNG"))
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "secret.png").write_bytes(outside.read_bytes())
    (root / "Attachments" / "link.png").symlink_to(outside)
    (root / "Notes").mkdir()
    (root / "Notes" / "plan.md").write_text("# plan")
    served = await serve_review(app)
    async with httpx.AsyncClient(base_url=served.base) as client:
        refused = await client.get(f"/vault/{path}")
        answer = await client.get(f"/vault/{path}", params={"token": served.token})
    assert refused.status_code == 401
    assert answer.status_code == status, answer.text
    if status == 200:
        assert answer.headers["content-type"] == "image/jpeg"
        assert answer.content == (root / "Attachments" / "photo 5.jpg").read_bytes()
        assert Image.open(io.BytesIO(answer.content)).size == (480, 640)  # the original, as stored
    else:
        assert b"PNG" not in answer.content[:8]
