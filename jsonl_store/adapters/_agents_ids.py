"""An Agents SDK session id, any Python string, as a session directory's name and a title."""

from __future__ import annotations

import hashlib

from jsonl_store import InvalidSessionId, encode_session_id

#: What a directory named by a digest starts with: `encode_session_id` starts a name with
#: ``_`` only before ``.`` or ``-``, so no encoded id begins so.
DIGEST_PREFIX = "_sha256-"
#: A title holds 1 to 200 characters (spec §7).
_TITLE_LENGTH = 200


def directory_name(session_id: str) -> str:
    """The session directory's name for an SDK session id (``jsonl_store.adapters.openai_agents`` says which)."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"an SDK session id must be a str, not {type(session_id).__name__}")
    try:
        return encode_session_id(session_id)
    except InvalidSessionId:
        try:
            data = session_id.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidSessionId(
                f"session id {session_id!r} holds a lone surrogate, which no file can hold"
            ) from None
        return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def title(session_id: str) -> str:
    """The id as a title (1 to 200 characters, no NUL): itself, or its repr shortened."""
    if session_id and len(session_id) <= _TITLE_LENGTH and "\x00" not in session_id:
        return session_id
    text = repr(session_id)
    return text if len(text) <= _TITLE_LENGTH else text[: _TITLE_LENGTH - 1] + "\u2026"
