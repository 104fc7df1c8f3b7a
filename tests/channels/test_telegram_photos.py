"""Photos and image files over Telegram reach the model as images: the real python-telegram-bot
against the fake Bot API, the real ``anthropic`` SDK against the fake Messages API; the images the
model received are decoded from the requests and measured."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from PIL import Image

from bot.app import App
from tests.channels.telegram_harness import Serve, Served
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.images.pictures import (
    QUADRANTS,
    animated_gif,
    close,
    encoded,
    jpeg,
    png_bomb,
    quadrant_colours,
    seen_images,
    text_of,
    upright,
)

ServeClaude = Callable[..., Awaitable[Served]]


@pytest.fixture
def serve_claude(
    serve: Serve, make_app: Callable[..., Awaitable[App]], fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> ServeClaude:
    """The channel and a runner worker on Claude (the real SDK, the fake Messages API), answering "Got it."."""

    async def start(**telegram: Any) -> Served:
        fake_anthropic.handler = lambda body: api.text("Got it.")
        claude = {"anthropic_api_key": "sk-ant-test", "anthropic_base_url": fake_anthropic.base_url}
        app = await make_app(None, telegram=fake.settings(**telegram), model={"name": "claude-test"}, **claude)
        return await serve(app=app)

    return start


def send_photo(fake: FakeTelegram, data: bytes, message_id: int, **options: Any) -> int:
    fake.add_file(f"ph{message_id}", data, file_path=f"photos/file_{message_id}.jpg")
    return fake.push_update(tg.photo_update(f"ph{message_id}", len(data), message_id=message_id, **options))


def send_file(fake: FakeTelegram, data: bytes, name: str, mime_type: str, message_id: int) -> int:
    fake.add_file(f"doc{message_id}", data, file_path=f"documents/{name}")
    return fake.push_update(tg.document_update(f"doc{message_id}", name, mime_type, len(data), message_id=message_id))


async def test_photos_reach_the_model_upright_in_every_exif_orientation(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    served = await serve_claude()
    sent = {orientation: jpeg(upright(), orientation) for orientation in range(1, 9)}
    for orientation, data in sent.items():
        send_photo(fake, data, message_id=100 + orientation)
    await fake.await_for(lambda f: len(f.sent) == 8, timeout=30)
    for orientation, request in zip(sent, fake_anthropic.requests, strict=True):
        [image] = seen_images({"messages": request.body["messages"][-1:]})
        assert image.size == (300, 200), f"orientation {orientation}"
        colours = quadrant_colours(image)
        assert all(close(c, q) for c, q in zip(colours, QUADRANTS, strict=True)), (orientation, colours)
        kept = served.app.notes.root / "Attachments" / f"photo {100 + orientation}.jpg"
        assert kept.read_bytes() == sent[orientation]  # the original, EXIF and all


async def test_a_twelve_megapixel_photo_reaches_the_model_at_1568_px_and_the_vault_keeps_the_original(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    served = await serve_claude()
    # Noise, so the encoded size is as large as a photo's gets; turned, so it is resized and rotated.
    noisy = Image.effect_noise((4000, 3000), 60).convert("RGB")
    original = jpeg(noisy, orientation=6, quality=95)
    send_photo(fake, original, message_id=7, caption="the whiteboard")
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    [request] = fake_anthropic.requests
    said = request.body["messages"][-1]
    [image] = seen_images({"messages": [said]})
    assert image.size == (1568, 1176)  # stored 3000 × 4000, the camera held on its side: shown upright
    [block] = [b for b in said["content"] if b["type"] == "image"]
    assert len(block["source"]["data"]) <= 5 * 1024 * 1024
    assert "[Image: Attachments/photo 7.jpg]" in text_of(said) and "the whiteboard" in text_of(said)
    assert (served.app.notes.root / "Attachments" / "photo 7.jpg").read_bytes() == original


@pytest.mark.parametrize(
    ("name", "mime_type", "fmt"),
    [
        ("screenshot.png", "image/png", "PNG"),
        ("sticker.webp", "image/webp", "WEBP"),
        ("scan.jpeg", "image/jpeg", "JPEG"),
        ("still.gif", "application/octet-stream", "GIF"),  # known by its name when the type is vague
    ],
)
async def test_an_image_sent_as_a_file_is_shown_to_the_model(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic, name: str, mime_type: str, fmt: str
) -> None:
    await serve_claude()
    send_file(fake, encoded(upright(), fmt), name, mime_type, message_id=9)
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    [image] = seen_images(fake_anthropic.requests[0].body)
    assert image.size == (300, 200) and close(quadrant_colours(image)[0], QUADRANTS[0])


async def test_a_file_that_is_not_an_image_is_not_shown(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude()
    # A file the model is given nothing of (a document's text is: tests/channels/test_telegram_documents.py).
    send_file(fake, b"PK\x03\x04 not a picture", "photos.zip", "application/zip", message_id=10)
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    said = fake_anthropic.requests[0].body["messages"][-1]
    assert seen_images(fake_anthropic.requests[0].body) == [] and "could not be shown" not in text_of(said)


async def test_a_later_turn_names_the_photo_and_never_sends_its_pixels_again(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude()
    send_photo(fake, jpeg(upright()), message_id=11, caption="my bike")
    await fake.await_for(lambda f: len(f.sent) == 1)
    fake.push_update(tg.text_update("what colour was it?"))
    await fake.await_for(lambda f: len(f.sent) == 2)
    first, second = fake_anthropic.requests
    assert len(seen_images(first.body)) == 1
    assert seen_images(second.body) == []
    history = text_of(second.body["messages"][0])
    assert "[Image: Attachments/photo 11.jpg]" in history and "not sent again" in history
    assert "base64" not in str(second.body["messages"][:-1])


@pytest.mark.parametrize(
    ("name", "data", "told"),
    [
        pytest.param("bomb.png", png_bomb(30_000, 30_000), "decompression bomb", id="a bomb past Pillow's own limit"),
        pytest.param("huge.png", png_bomb(10_000, 6_000), "60 megapixels", id="a bomb under Pillow's limit"),
        pytest.param("cut.jpg", jpeg(upright((800, 600)))[:6000], "damaged or cut short", id="a truncated JPEG"),
        pytest.param("note.png", b"\x89PNG\r\n\x1a\n but then nothing", "not a JPEG, PNG", id="not an image"),
    ],
)
async def test_an_image_that_cannot_be_shown_is_kept_and_the_model_told_why(
    serve_claude: ServeClaude,
    fake: FakeTelegram,
    fake_anthropic: FakeAnthropic,
    name: str,
    data: bytes,
    told: str,
) -> None:
    served = await serve_claude()
    send_file(fake, data, name, "image/png" if name.endswith(".png") else "image/jpeg", message_id=12)
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    body = fake_anthropic.requests[0].body
    assert seen_images(body) == []
    said = text_of(body["messages"][-1])
    assert f"(Attachments/{name} could not be shown to you: " in said and told in said
    assert "kept in the vault" in said
    assert (served.app.notes.root / "Attachments" / name).read_bytes() == data


async def test_an_animated_gif_is_shown_as_its_first_frame_and_the_model_is_told(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude()
    send_file(fake, animated_gif([(200, 20, 20), (20, 200, 20), (20, 20, 200)]), "wave.gif", "image/gif", 13)
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    body = fake_anthropic.requests[0].body
    [frame] = seen_images(body)
    assert close(frame.convert("RGB").getpixel((60, 40)), (200, 20, 20))  # type: ignore[arg-type]
    assert "[Image: Attachments/wave.gif. It is an animation of 3 frames; this is its first frame.]" in text_of(
        body["messages"][-1]
    )


async def test_a_cmyk_jpeg_and_a_16_bit_png_reach_the_model_in_their_colours(
    serve_claude: ServeClaude, fake: FakeTelegram, fake_anthropic: FakeAnthropic
) -> None:
    await serve_claude()
    red_in_cmyk = encoded(Image.new("CMYK", (200, 100), (0, 255, 255, 0)), "JPEG")
    grey = Image.new("I;16", (200, 100), 32768)  # half of 16 bits: mid grey, not white
    send_file(fake, red_in_cmyk, "print.jpg", "image/jpeg", 14)
    send_file(fake, encoded(grey, "PNG"), "scan.png", "image/png", 15)
    await fake.await_for(lambda f: len(f.sent) == 2)
    [red] = seen_images(fake_anthropic.requests[0].body)
    [mid] = seen_images(fake_anthropic.requests[1].body)
    assert red.mode == "RGB" and close(red.getpixel((100, 50)), (255, 0, 0))  # type: ignore[arg-type]
    assert abs(mid.convert("L").getpixel((100, 50)) - 128) <= 2  # type: ignore[operator]


async def test_in_capture_mode_a_photo_is_filed_with_its_link_as_before(serve: Serve, fake: FakeTelegram) -> None:
    served = await serve()
    send_photo(fake, jpeg(upright()), message_id=16, caption="receipt")
    await fake.await_for(lambda f: len(f.sent) == 1)
    [note] = (served.app.notes.root / "Inbox").glob("*.md")
    assert "![[Attachments/photo 16.jpg]]" in note.read_text() and "receipt" in note.read_text()
    assert io.BytesIO((served.app.notes.root / "Attachments" / "photo 16.jpg").read_bytes()).getbuffer().nbytes > 0
