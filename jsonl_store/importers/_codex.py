"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``) as sessions.

Each line is an envelope ``{"timestamp", "type", "payload"}``. The ``response_item``
payloads are OpenAI Responses API items and are stored as they are, so the session's
dialect is ``"openai-responses"``: a ``function_call`` / ``custom_tool_call`` item is
paired with its ``*_output`` item by ``call_id``. The store needs a ``role`` on every
message: items that have none get ``"assistant"`` (what the model made: calls,
reasoning) or ``"tool"`` (``*_output`` items); a ``developer`` message is stored with
role ``"system"`` and ``"codex_role": "developer"``.

- Usage: Codex writes a ``token_count`` event after each model call, with the call's
  ``last_token_usage`` and the session's cumulative ``total_token_usage``, and often
  writes it twice. Each event whose total differs from the one before is one model call,
  counted as its ``last_token_usage`` (the total's difference from the one before only
  when the event has no ``last_token_usage``), on a hidden assistant record
  (``include_in_messages=False``) with the model of the latest ``turn_context``: the rule
  of ccusage's Codex loader, plus skipping the repeated event. ``input_tokens`` include the
  cached ones, as in OpenAI's usage.
- A fork's or spawned sub-agent's rollout (its first ``session_meta`` has ``forked_from_id``
  or ``source.subagent.thread_spawn``) opens with its parent's history, written in one
  burst: its messages are the fork's context, but its ``token_count`` events are the
  parent's calls, counted in the parent's session, so they only set the running total
  until the first pause of a second between two lines.
- ``compacted`` lines become a snapshot (their ``message`` is the summary); the items of
  its ``replacement_history`` (what Codex's history became: the user messages it kept
  and the summary item) follow it as records, so the context is what Codex resumes with.
- ``turn_aborted`` is stored as a hidden system record: the calls it left without an output
  are the open batch tool-batch repair closes.
- ``session_meta`` (the header: base instructions, git state, the CLI's version) and
  ``turn_context`` (a turn's model, policies and instructions) are read into the session's
  meta (its id, parent, working directory; the model that names the records after it) and
  kept whole as hidden records; a ``turn_context`` equal to the one before is counted, not
  stored again.
- ``event_msg`` lines that repeat a response item (``user_message``, ``agent_message``,
  ``agent_reasoning``) and other events are skipped and counted.

Session id: ``codex-<id>`` from the first ``session_meta`` (else the file name), through
`encode_session_id`; a ``parent_thread_id`` there makes it the child of ``codex-<parent>``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from .. import ModelUsage
from ._events import Collector, Compaction, Entry, Parsed, Target, fields_text, session_id_for, source_time

PREFIX = "codex-"
_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
#: Response items that are no part of a conversation, and why they are not stored.
_NOT_MESSAGES = {
    "ghost_snapshot": "a git snapshot Codex takes to undo a turn: a commit id, no part of the conversation"
}
#: Events that repeat what other lines store, and what that is (the import report names them).
_REPEATS = {
    "user_message": "repeats a user message its response_item stores",
    "agent_message": "repeats an assistant message its response_item stores",
    "agent_reasoning": "repeats a reasoning summary its response_item stores",
    "agent_reasoning_raw_content": "repeats reasoning text its response_item stores",
    "token_count": "the same cumulative token count again (Codex writes each twice), or no count",
    "token_count:copied": "a parent's model call copied into a fork's rollout: counted in the parent's session",
}
#: Lines read into the session's meta (besides being kept as hidden records, `note`): what of them.
_IN_META = frozenset({"session_meta", "turn_context"})
#: Why a turn's settings that repeat the previous turn's exactly are not stored again.
_SAME_CONTEXT = (
    "the previous turn_context again, field for field (Codex 0.5x writes one per turn): "
    "the hidden record of the first one holds it"
)
#: Line types that are no message, kept as hidden records as written (`note`).
_KEPT = frozenset({"world_state", "inter_agent_communication_metadata"})
#: Fields of an event or context that are no part of what it says (the line's kind, ids).
_NOT_SAID = frozenset(
    {"type", "id", "call_id", "turn_id", "thread_id", "internal_chat_message_metadata_passthrough"}
)
#: The pause that ends the parent's history a fork's rollout opens with: Codex copies it in
#: one burst, milliseconds apart; the fork's own first turn comes later (the threshold the
#: fix for https://github.com/ccusage/ccusage/issues/897 uses).
_REPLAY_GAP = timedelta(seconds=1)


def default_location() -> str:
    """``$CODEX_HOME/sessions``, else ``~/.codex/sessions``."""
    base = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return os.path.join(base, "sessions")


def _counts(value: object) -> dict[str, int] | None:
    if not isinstance(value, dict):
        return None
    return {k: v if type(v := value.get(k, 0)) is int and v >= 0 else 0 for k in _FIELDS}


def usage_of(counts: dict[str, int]) -> ModelUsage:
    return ModelUsage(
        input_tokens=counts["input_tokens"],
        output_tokens=counts["output_tokens"],
        cache_read_tokens=counts["cached_input_tokens"],
        reasoning_tokens=counts["reasoning_output_tokens"],
    )


def call_counts(
    info: object, previous: dict[str, int] | None
) -> tuple[dict[str, int] | None, dict[str, int] | None]:
    """``(this call's counts or None, the new cumulative total)`` for one ``token_count``'s ``info``.

    The per-call counts are ``last_token_usage``; the cumulative ``total_token_usage`` only
    tells a repeated event (the same total again: no new call) and fills a gap (an event
    without ``last_token_usage``: the difference from the previous total). A total that
    jumps (a resumed or forked rollout carries its earlier calls in it) is never counted
    as one call: ``last_token_usage`` says what this call used.
    """
    if not isinstance(info, dict):
        return None, previous
    total, last = _counts(info.get("total_token_usage")), _counts(info.get("last_token_usage"))
    if total is not None and (total == previous or not any(total.values())):
        return None, total  # the same total again (Codex writes each one twice): no new call
    if last is not None:
        return (last if any(last.values()) else None), total if total is not None else previous
    if total is None:
        return None, previous
    if previous is None or any(total[k] < previous[k] for k in _FIELDS):
        return total, total  # no earlier total (or the counter restarted): all of it is new
    return {k: total[k] - previous[k] for k in _FIELDS}, total


def _role(item: dict[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    role = item.get("role")
    if kind == "message" and role in ("user", "assistant", "system"):
        return item
    if kind == "message":
        return {**item, "role": "system", "codex_role": role}
    if isinstance(kind, str) and kind.endswith("_output"):
        return {**item, "role": "tool"}
    return {**item, "role": "assistant"}


def _is_fork(meta: dict[str, Any]) -> bool:
    """Whether a rollout's first ``session_meta`` is a fork's or a spawned sub-agent's: Codex
    opens such a rollout with its parent's history, token counts included."""
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawned = isinstance(subagent, dict) and isinstance(subagent.get("thread_spawn"), dict)
    return isinstance(meta.get("forked_from_id"), str) or spawned


def _replacement(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The items a ``compacted`` line says the history became (``replacement_history``), each
    with its role; none when the line does not say."""
    history = payload.get("replacement_history")
    if not isinstance(history, list):
        return []
    return [
        _role(item) for item in history if isinstance(item, dict) and _item_type(item) not in _NOT_MESSAGES
    ]


def _fingerprint(payload: dict[str, Any]) -> str:
    """A short digest of a payload, to tell a turn's settings that repeat the previous ones
    (kept in the import's state, which outlives the process, instead of the payload)."""
    # json, not orjson: a payload read from a file may hold an integer orjson cannot write.
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _item_type(item: dict[str, Any]) -> str:
    kind = item.get("type")
    return kind if isinstance(kind, str) else ""


def _text(payload: dict[str, Any]) -> str:
    """What an event or context says: its ``message`` (an error's), a thread's name, its text,
    else its fields of plain values (`fields_text`)."""
    for key in ("message", "thread_name", "text", "reason"):
        if isinstance(payload.get(key), str) and payload[key]:
            return str(payload[key])
    return fields_text(payload, _NOT_SAID)


def note(
    out: Collector,
    line: Any,
    kind: str,
    payload: dict[str, Any],
    metadata: dict[str, Any],
    *,
    key: str = "codex_event",
) -> None:
    """Store a line that is no message (an ``error`` event, a thread's new name, a turn's
    context, a line or event newer than this importer) as a hidden record: its payload as
    written (``codex_payload``), its text (`_text`) what a reader shows and a search finds."""
    message = {"role": "system", "content": _text(payload), key: kind, "codex_payload": payload,
               "include_in_messages": False}  # fmt: skip
    out.add(Entry(out.main.session_id, message, line.number, line.end, metadata=metadata))


class Codex:
    """The Codex rollout format (see the module's docstring)."""

    tool = "codex"
    dialect = "openai-responses"
    expected = "a Codex rollout (JSON lines of type session_meta, response_item or event_msg)"

    def identify(self, path: str, head: list[dict[str, Any]]) -> Target | None:
        for d in head:
            payload = d.get("payload")
            if (
                d.get("type") == "session_meta"
                and isinstance(payload, dict)
                and isinstance(payload.get("id"), str)
            ):
                parent, cwd = payload.get("parent_thread_id"), payload.get("cwd")
                return Target(
                    session_id_for(PREFIX, payload["id"]),
                    parent=session_id_for(PREFIX, parent) if isinstance(parent, str) else None,
                    agent_name="codex",
                    cwd=cwd if isinstance(cwd, str) else None,
                )
        if not any(d.get("type") in ("response_item", "event_msg", "turn_context") for d in head):
            return None
        return Target(
            session_id_for(PREFIX, os.path.basename(path).removesuffix(".jsonl")), agent_name="codex"
        )

    def parse(self, path: str, lines: Iterator[Parsed], out: Collector) -> None:
        state = out.state
        seen_meta = bool(state.get("seen_meta"))
        for line, d in lines:
            kind, payload = d.get("type"), d.get("payload")
            metadata = {"timestamp": d["timestamp"]} if isinstance(d.get("timestamp"), str) else {}
            self.replay_ends(state, d.get("timestamp"))
            if not isinstance(payload, dict):
                out.skip(f"{kind}:no-payload", "a line without a payload object: nothing to store")
                continue
            if kind == "session_meta" and not seen_meta:
                seen_meta = True
                state["replaying"] = _is_fork(payload)
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                state["model"] = payload["model"]
            if kind in _IN_META:
                self.settings(line, str(kind), payload, metadata, out)
            elif kind == "response_item" and (item := _item_type(payload)) in _NOT_MESSAGES:
                out.skip(f"response_item:{item}", _NOT_MESSAGES[item])
            elif kind == "response_item":
                out.add(Entry(out.main.session_id, _role(payload), line.number, line.end, metadata=metadata))
            elif kind == "compacted":
                summary = payload.get("message")
                text = summary if isinstance(summary, str) and summary else "Conversation compacted"
                out.add(
                    Compaction(
                        out.main.session_id, text, line.number, line.end, metadata, _replacement(payload)
                    )
                )
            elif kind == "event_msg":
                self.event(line, payload, metadata, out)
            elif kind in _KEPT:  # kept as written, outside the context
                note(out, line, str(kind), payload, metadata, key="codex_type")
            else:
                out.skip(kind, "a line type this importer does not know (a newer Codex's): not stored")
        state["seen_meta"] = seen_meta

    @staticmethod
    def settings(
        line: Any, kind: str, payload: dict[str, Any], metadata: dict[str, Any], out: Collector
    ) -> None:
        """A header or a turn's settings: they carry more than the meta reads from them (base
        instructions, git state, sandbox and approval policies, the user's and developer's
        instructions), so each is kept whole as a hidden record, a turn's repeat aside."""
        if kind == "turn_context":
            fingerprint = _fingerprint(payload)
            if fingerprint == out.state.get("context"):
                out.skip("turn_context:same", _SAME_CONTEXT)
                return
            out.state["context"] = fingerprint
        note(out, line, kind, payload, metadata, key="codex_type")

    @staticmethod
    def replay_ends(state: dict[str, Any], timestamp: object) -> None:
        """End a fork's copied history at the first pause of `_REPLAY_GAP` between two lines."""
        moment = source_time(timestamp)
        if moment is None:
            return
        previous = source_time(state.get("last_time"))
        if state.get("replaying") and previous is not None and moment - previous >= _REPLAY_GAP:
            state["replaying"] = False
        state["last_time"] = timestamp

    def event(self, line: Any, payload: dict[str, Any], metadata: dict[str, Any], out: Collector) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            counts, out.state["total"] = call_counts(payload.get("info"), out.state.get("total"))
            if counts is not None and out.state.get("replaying"):
                # A call of the parent's, copied with its history: the parent's session counts it.
                out.skip("event_msg:token_count:copied", _REPEATS["token_count:copied"])
                return
            if counts is None:
                out.skip("event_msg:token_count", _REPEATS["token_count"])
                return
            if isinstance(out.state.get("model"), str):
                metadata["model"] = out.state["model"]
            message = {
                "role": "assistant",
                "content": "",
                "codex_event": "token_count",
                "include_in_messages": False,
            }
            out.add(
                Entry(
                    out.main.session_id, message, line.number, line.end, usage_of(counts), metadata=metadata
                )
            )
        elif isinstance(kind, str) and kind in _REPEATS:
            out.skip(f"event_msg:{kind}", _REPEATS[kind])
        elif kind == "thread_name_updated" and isinstance(payload.get("thread_name"), str):
            # The name the user gave the thread (/rename): the session's title unless the user
            # named the session in the store (a runtime title never undoes a rename, spec §19).
            out.main.title, out.main.renamed = payload["thread_name"], True
            note(out, line, kind, payload, metadata)
        elif kind == "turn_aborted":
            reason = payload.get("reason")
            message = {
                "role": "system",
                "content": f"turn aborted: {reason if isinstance(reason, str) else 'unknown reason'}",
                "codex_event": "turn_aborted",
                "codex_payload": payload,
                "include_in_messages": False,
            }
            out.add(Entry(out.main.session_id, message, line.number, line.end, metadata=metadata))
        else:  # an error, a review, a sub-agent's activity, an event newer than this importer
            note(out, line, str(kind), payload, metadata)
