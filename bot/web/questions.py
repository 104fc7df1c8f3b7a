"""Answering a waiting question for consent from the review page: a POST from the page itself (its
``Origin``) in a session, handed to the page's one writer (``bot.web.answers``), which puts it on the
bus as a tap would be. The runner decides the question once; the run page then shows how."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot.web.sign_in import access_of
from bot.web.sources import sources

__all__ = ["answer"]

log = logging.getLogger(__name__)

# The form holds one short field; a longer body is not the page's form.
MAX_BODY = 1024
NOT_FROM_THE_PAGE = "403: an answer is taken only from the review page itself.\n"
NO_ANSWERS = "403: this review page cannot answer questions (it runs without the bot): answer in the chat.\n"


async def answer(request: Request) -> Response:
    """``choice`` (allow or deny) for the question in the address: 303 back to its run once on the bus
    (or already decided); 403 from another origin or where the page cannot answer, 400 for another
    choice, 404 for no such question. The gate has checked the session first."""
    review = sources(request)
    access = access_of(request)
    if review.answers is None:
        return PlainTextResponse(NO_ANSWERS, status_code=403)
    if not access.own_origin(request.scope, request.headers.get("origin", "")):
        log.warning("review page: an answer posted from %r refused", request.headers.get("origin"))
        return PlainTextResponse(NOT_FROM_THE_PAGE, status_code=403)
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return PlainTextResponse("413: that is not the page's answer form.\n", status_code=413)
    choice = parse_qs(body.decode("utf-8", errors="replace")).get("choice", [""])[0]
    if choice not in ("allow", "deny"):
        return PlainTextResponse("400: the answer is allow or deny.\n", status_code=400)
    question = await review.reader.question(request.path_params["question_id"])
    if question is None:
        return PlainTextResponse("404: there is no such question.\n", status_code=404)
    if question["state"] == "asked":
        await review.answers.answer(question, choice)  # type: ignore[arg-type]
        log.info("review page: answered question %s: %s", question["id"], choice)
    return Response(status_code=303, headers={"location": f"{access.root}/runs/{question['run_id']}"})
