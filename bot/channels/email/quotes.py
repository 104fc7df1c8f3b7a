"""Where someone else's words begin in a mail's text: the header lines mail clients put above quoted or
forwarded mail, in English, German, French, Spanish, Italian, Portuguese, Dutch, Russian, Turkish,
Polish, Korean, Japanese and Chinese, as Outlook, Gmail, Apple Mail and Thunderbird write them.

Three kinds are recognised:
- a reply's attribution line ("On Mon, 23 Nov 2026 at 14:05, Ann <ann@…> wrote:", "Am … schrieb …:",
  "… пишет:", "… tarihinde şunu yazdı:", "…님이 작성:", "2026年11月23日(月) 14:05 Ann <ann@…>:", "…写道："),
  possibly wrapped over two lines; any line with a time of day and an address in angle brackets that
  ends in a colon counts too (Gmail's form, whatever the language);
- a forward's or an original message's separator ("---------- Forwarded message ---------",
  "Begin forwarded message:", "-----Original Message-----", "-------- Пересылаемое сообщение --------");
- an Outlook header block: a "From:" line of any of the languages followed within a few lines by another
  header field ("Sent:", "Gesendet:", "Отправлено:", "Gönderildi:", "送信日時:", "发送时间:"…).

Each line is looked at once, with a window of a few lines after it, and only its first
:data:`MAX_LINE` characters: time linear in the text's length. A signature ("-- ", "Sent from my
iPhone") ends the new text too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "ru", "tr", "pl", "ko", "ja", "zh")
MAX_LINE = 400
# The lines after a "From:" in which an Outlook header block's next field must come.
WINDOW = 5

# The words of an attribution line's end, by language (and client).
_WROTE = "|".join(
    [
        r"wrote",  # en, and Thunderbird's default elsewhere
        r"schrieb(?:\s.{0,100})?",  # de "Am …, schrieb Ann:" / "Am … schrieb Ann <…>:"
        r"a\s+écrit",  # fr
        r"escribió",  # es
        r"ha\s+scritto",  # it
        r"escreveu",  # pt
        r"schreef(?:\s.{0,100})?",  # nl
        r"написал(?:\(а\)|а)?|пишет",  # ru
        r"(?:şunu|şunları)?\s*yazdı",  # tr
        r"napisał(?:\(a\)|a)?|pisze",  # pl
        r"님이\s*작성(?:했습니다|하였습니다)?|작성|쓴\s*글",  # ko
        r"(?:さん)?(?:は)?書きました|のメール",  # ja
        r"写道|寫道",  # zh
    ]
)
_ATTRIBUTION = re.compile(rf"(?:{_WROTE})\s*[:：]\s*$", re.IGNORECASE)
# An attribution line must also say when or who: a date, a time, a year, or an address.
_WHEN_OR_WHO = re.compile(r"\d{1,2}[:.]\d{2}|\d{4}|@|\d{1,2}[./-]\d{1,2}|年|년")
_OPENERS = re.compile(
    r"^(?:on|am|le|el|il|em|no dia|op|w dniu|dnia|wiadomość napisana przez|\d|[a-zа-яçğıöşü]{2,4}[.,]"
    r"|.{0,200}<[^<>\s]+@)",
    re.IGNORECASE,
)
# Gmail's form in any language: a time of day, then an address in angle brackets and a colon at the end.
_TIME = re.compile(r"\d{1,2}:\d{2}")
_ADDRESS_END = re.compile(r"<[^<>\s@]+@[^<>\s]+>\s*[:：]")
_APPLE_PL = re.compile(r"^wiadomość napisana przez .{1,200}\d{1,2}:\d{2}\s*:$", re.IGNORECASE)
_RULE = re.compile(r"^[\s_-]{10,}$")

_SEPARATORS = re.compile(
    r"^[\s>]*(?:-{2,}|_{2,})?\s*(?:"
    r"forwarded message|original message|begin forwarded message|"
    r"weitergeleitete nachricht|ursprüngliche nachricht|anfang der weitergeleiteten nachricht|"
    r"message transféré|message d'origine|message original|début du message réexpédié|"
    r"mensaje reenviado|mensaje original|inicio del mensaje reenviado|"
    r"messaggio inoltrato|messaggio originale|inizio messaggio inoltrato|"
    r"mensagem encaminhada|mensagem original|início da mensagem reencaminhada|começo da mensagem encaminhada|"
    r"doorgestuurd bericht|oorspronkelijk bericht|begin doorgestuurd bericht|"
    r"пересылаемое сообщение|пересланное сообщение|исходное сообщение|начало переадресованного сообщения|"
    r"iletilen mesaj|iletilmiş mesaj|yönlendirilmiş mesaj|yönlendirilmiş ileti|özgün ileti|orijinal mesaj|"
    r"ileti başlangıcı|"
    r"przekazana wiadomość|wiadomość przekazana|oryginalna wiadomość|wiadomość oryginalna|"
    r"początek przekazywanej wiadomości|"
    r"전달된 메시지|전달된 메일|원본 메시지|원본 메일|"
    r"転送されたメッセージ|転送メッセージ|元のメッセージ|"
    r"转发的邮件|转发邮件|转发的消息|原始邮件|以下是转发的邮件|轉寄的郵件|原始郵件"
    r")\s*(?:-{2,}|_{2,})?\s*[:：]?\s*$",
    re.IGNORECASE,
)
_FORWARD_WORDS = re.compile(
    r"forward|weitergeleitet|transféré|réexpédié|reenviado|inoltrato|encaminhada|reencaminhada|doorgestuurd|"
    r"пересыла|переслан|переадрес|ileti|yönlendiril|przekaz|전달|転送|转发|轉寄",
    re.IGNORECASE,
)

# Outlook's header fields, by language: who it was from, and the others that follow it.
_FROM_FIELD = r"from|von|de|da|van|от|kimden|od|보낸\s*사람|差出人|发件人|寄件者"
_OTHER_FIELDS = (
    r"sent|date|to|subject|cc|gesendet|datum|an|betreff|envoyé|date|à|objet|enviado|fecha|para|asunto|"
    r"inviato|data|a|oggetto|assunto|verzonden|aan|onderwerp|отправлено|дата|кому|тема|gönderildi|"
    r"gönderilme|tarih|kime|konu|wysłano|do|temat|보낸\s*날짜|받는\s*사람|제목|送信日時|日付|宛先|件名|"
    r"发送时间|日期|收件人|主题|寄件日期|收件者|主旨"
)
_FIELD = re.compile(rf"^[\s>*]*(?P<name>{_FROM_FIELD}|{_OTHER_FIELDS})\s*[*]?\s*[:：]\s*(?P<value>.*)$", re.IGNORECASE)
_FROM = re.compile(rf"^(?:{_FROM_FIELD})$", re.IGNORECASE)
_SUBJECT = re.compile(
    r"^(?:subject|betreff|objet|asunto|oggetto|assunto|onderwerp|тема|konu|temat|제목|件名|主题|主旨)$"
)
_DATE = re.compile(
    r"^(?:date|sent|datum|gesendet|envoyé|fecha|enviado|data|inviato|verzonden|дата|отправлено|tarih|"
    r"gönderildi|gönderilme|wysłano|보낸\s*날짜|送信日時|日付|发送时间|日期|寄件日期)$",
    re.IGNORECASE,
)
_SIGNATURE = re.compile(
    r"^(?:--\s?|sent from my .*|get outlook for .*|von meinem .* gesendet|envoyé de mon .*|enviado desde mi .*|"
    r"inviato da .*|enviado do meu .*|verzonden vanaf mijn .*|отправлено с .*|iphone'umdan gönderildi|"
    r"wysłano z .*|.*에서 보냄|.*から送信|发自我的.*)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Quoted:
    """Someone else's message in the text: what its header lines say, and its text."""

    sender: str
    subject: str
    date: str
    text: str


@dataclass(frozen=True)
class Split:
    """A text split where someone else's words begin: the new text, and the messages after it
    (``forwards``: a separator said they are forwarded rather than quoted)."""

    new: str
    quoted: list[Quoted] = field(default_factory=list)
    forwards: bool = False


def split(text: str) -> Split:
    """``text`` split at the first quote or forward header, and the rest at each further one."""
    lines = text.split("\n")
    starts: list[int] = []
    forwards = False
    index = 0
    while index < len(lines):
        found = _header_at(lines, index)
        if found is None:
            index += 1
            continue
        kind, length = found
        if kind != "attribution":  # the message's own header fields follow: they are part of it
            while index + length < len(lines) and length < 12 and _FIELD.match(lines[index + length][:MAX_LINE]):
                length += 1
        forwards = forwards or (kind == "separator" and _FORWARD_WORDS.search(lines[index][:MAX_LINE]) is not None)
        starts.append(index)
        index += max(length, 1)
    end = starts[0] if starts else len(lines)
    new = _before_signature(lines[:end])
    while new and (not new[-1].strip() or _RULE.match(new[-1][:MAX_LINE])):
        new.pop()  # the blank lines and the rule Outlook puts above its header block
    quoted = [
        _quoted(lines[start : (starts[n + 1] if n + 1 < len(starts) else len(lines))]) for n, start in enumerate(starts)
    ]
    return Split("\n".join(new).strip(), quoted, forwards)


def _header_at(lines: list[str], index: int) -> tuple[str, int] | None:
    """What kind of header starts at ``lines[index]`` and how many lines it takes, or None."""
    line = lines[index][:MAX_LINE].strip()
    if not line:
        return None
    if _SEPARATORS.match(line):
        return "separator", 1
    if _attribution(line):
        return "attribution", 1
    following = lines[index + 1][:MAX_LINE].strip() if index + 1 < len(lines) else ""
    if following and len(line) + len(following) < MAX_LINE and _attribution(f"{line} {following}"):
        return "attribution", 2  # wrapped over two lines
    field = _FIELD.match(line)
    if field is not None and _FROM.match(field.group("name").strip()):
        others = sum(
            1
            for later in lines[index + 1 : index + 1 + WINDOW]
            if (match := _FIELD.match(later[:MAX_LINE])) and not _FROM.match(match.group("name").strip())
        )
        if others >= 1:
            return "outlook", 1
    return None


def _attribution(line: str) -> bool:
    line = line.lstrip("> ").rstrip()
    if not line.endswith((":", "：")):
        return False
    cut = line.rfind("<")
    if cut > 0 and _ADDRESS_END.fullmatch(line[cut:]) and _TIME.search(line[:cut]):
        return True
    if _APPLE_PL.match(line):
        return True
    return bool(_ATTRIBUTION.search(line) and _WHEN_OR_WHO.search(line) and _OPENERS.match(line))


def _before_signature(lines: list[str]) -> list[str]:
    for index, line in enumerate(lines):
        if _SIGNATURE.match(line[:MAX_LINE].rstrip()):
            return lines[:index]
    return lines


def _quoted(lines: list[str]) -> Quoted:
    """A quoted or forwarded message: the fields in its first lines, then its text."""
    fields: dict[str, str] = {}
    body_from = 1
    for offset, line in enumerate(lines[1 : 1 + 12], start=1):
        match = _FIELD.match(line[:MAX_LINE])
        if match is None:
            if line.strip() or fields:
                break
            continue
        name, value = match.group("name").strip().lower(), match.group("value").strip()
        kind = (
            "from"
            if _FROM.match(name)
            else "subject"
            if _SUBJECT.match(name)
            else "date"
            if _DATE.match(name)
            else name
        )
        fields.setdefault(kind, value)
        body_from = offset + 1
    if _FIELD.match(lines[0][:MAX_LINE]):  # an Outlook block starts with its From line itself
        match = _FIELD.match(lines[0][:MAX_LINE])
        assert match is not None
        fields.setdefault("from", match.group("value").strip())
    text = "\n".join(line.lstrip("> ") if line.startswith(">") else line for line in lines[body_from:]).strip()
    return Quoted(fields.get("from", "")[:200], fields.get("subject", "")[:250], fields.get("date", "")[:100], text)
