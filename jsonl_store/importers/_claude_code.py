"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as sessions.

Claude Code writes one JSON object per line: ``user`` and ``assistant`` lines whose
``message`` is an Anthropic Messages message, and many lines that are not messages
(``summary``, ``file-history-snapshot``, ``attachment``, ``system`` ...). The messages
are stored as Anthropic-shaped dicts, so the session's dialect is ``"anthropic"``:

- Claude Code writes one line per content block of an assistant message, each repeating
  the message's ``usage`` as it stood when the line was written. Consecutive lines of one
  ``message.id`` become one record with all the blocks; lines of it apart (the results of
  parallel tool calls between them) make one record each. Its usage counts once per
  message id (``requestId`` when it has none): the largest its lines report, on the record
  holding that line. ccusage keys on ``message.id`` and ``requestId`` too, but keeps the
  first line's, whose ``output_tokens`` is a streaming placeholder
  (https://github.com/ccusage/ccusage/issues/901).
- A line whose ``uuid`` was read before (a session resumed into its own file, files
  concatenated) is skipped and counted as ``duplicate``, also when the first copy came
  in an earlier import: each record keeps its lines' uuids (``uuid``, and ``uuids`` for
  a message of several lines).
- Usage in this library's terms: ``input_tokens`` is every input token, cached or not
  (Anthropic's ``input_tokens`` + ``cache_creation_input_tokens`` +
  ``cache_read_input_tokens``), so ``cache_hit_rate`` is the share served from the cache.
- A tool result is a ``tool_result`` block in a user message, paired with its call by
  ``tool_use_id``; a rejected call is such a block with ``is_error`` (stored as it is),
  and a call left without a result (the user interrupted, the process died) is the open
  batch tool-batch repair closes.
- ``compact_boundary`` lines and ``isCompactSummary`` user messages become a snapshot.
  A ``summary`` line is a title Claude Code gave a conversation (for its list of
  sessions; the model never sees it), wherever it stands: a hidden record with its text
  as written, which also gives the session its title when it has no better one.
- Branches: a rewound conversation holds two children of one line (`_branches`). The
  chain ending at the last message is the context; the messages of an abandoned branch
  are stored where the file has them, hidden (``include_in_messages=False``) and marked
  (``metadata["branch"] == "abandoned"``).
- Sub-agents: lines with ``isSidechain`` in a session's own file go to a child session
  per chain (a chain starts at a sidechain line with no ``parentUuid``); a file of its
  own (``agent-<id>.jsonl`` beside the session, or ``<session>/subagents/agent-<id>.jsonl``
  with its ``.meta.json``) is the child session of the ``sessionId`` its lines name.

Session ids: ``claude-code-<sessionId>``, a sub-agent file's ``claude-code-<sessionId>-agent-<agentId>``,
an inline chain's ``claude-code-<sessionId>-sidechain-<uuid of its first line>``, each id
part through `encode_session_id` (a UUID stays as it is).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import ModelUsage, encode_session_id
from . import _claude_code_side as side
from . import _source
from ._branches import Tree
from ._events import (
    Collector,
    Compaction,
    Entry,
    Event,
    Parsed,
    Target,
    UsageUpdate,
    fields_text,
    session_id_for,
    token_count,
)

PREFIX = "claude-code-"
#: Line types that carry a title for the session, and the key holding it.
_TITLES = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}
#: Line types that are no message, kept as hidden records as written (`_Parse.note`):
#: what Claude Code records beside the conversation (a mode, a queued prompt, a sub-agent's
#: progress, a pull request's link, a worktree's state).
_KEPT = frozenset({"permission-mode", "mode", "progress", "queue-operation", "agent-name", "frame-link",
                   "pr-link", "started", "result", "relocated", "worktree-state", "bridge-session",
                   "atis-latch"})  # fmt: skip
#: The lines not stored as records, each with why: what the import report names them with.
_SKIPPED = {
    "duplicate": "a line read before (a resumed session's file repeats its lines): stored once",
    "file-history-snapshot": "Claude Code's list of file backups for undoing edits (/rewind): "
    "names of backup files, no part of the conversation",
    "last-prompt": "the start of the last prompt, for Claude Code's prompt history: "
    "the prompt is stored whole as its user message",
    "permission-mode:unchanged": "the permission mode again, unchanged: stored when it changes",
    "title": "a title for Claude Code's list of sessions: the session's title is the best one "
    "(a custom-title, else an ai-title, else a summary)",
}
#: How many line uuids (for inline sidechain chains) and message ids (counted usage) the state keeps.
_REMEMBERED = 256


def default_location() -> str:
    """``$CLAUDE_CONFIG_DIR/projects``, else ``~/.claude/projects``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return os.path.join(base, "projects")


def usage_of(message: dict[str, Any]) -> ModelUsage | None:
    """The usage of one Anthropic message, or None when it reports none (or only zeros)."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    fresh, output = token_count(usage, "input_tokens"), token_count(usage, "output_tokens")
    write, read = (
        token_count(usage, "cache_creation_input_tokens"),
        token_count(usage, "cache_read_input_tokens"),
    )
    if not (fresh or output or write or read):
        return None
    return ModelUsage(
        input_tokens=fresh + write + read,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _holds(earlier: object, content: object) -> bool:
    """Whether ``earlier`` (a line's or a stored record's content) already holds all of ``content``."""
    if earlier == content:
        return True
    return (
        isinstance(earlier, list)
        and isinstance(content, list)
        and bool(content)
        and all(block in earlier for block in content)
    )


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


@dataclass
class _Group:
    """The lines of one assistant message, waiting for the line that ends it."""

    session_id: str
    key: object
    line: int
    end: int
    blocks: list[Any]
    last: dict[str, Any]
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The ``uuid`` of each line after the first (the first's is in ``metadata``).
    more_uuids: list[str] = field(default_factory=list)
    #: The largest usage its lines report (`_larger`).
    usage: ModelUsage | None = None


def _larger(usage: ModelUsage | None, other: ModelUsage | None) -> ModelUsage | None:
    """The larger of two usages of one message: Claude Code writes a streamed message's lines
    as it goes, so a later line's ``output_tokens`` is larger (a tie goes to ``other``, the later)."""
    if usage is None or (other is not None and other.total_tokens >= usage.total_tokens):
        return other
    return usage


def _counted(saved: object) -> dict[str, Any]:
    """The ``counted`` state an import saved: a mapping, or (an older import's) a list of ids."""
    if isinstance(saved, dict):
        return dict(saved)
    return dict.fromkeys(saved if isinstance(saved, list) else (), True)


def _remember(mapping: dict[str, Any], key: str, value: Any) -> None:
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > _REMEMBERED:
        del mapping[next(iter(mapping))]


def _is_claude_code_line(d: dict[str, Any]) -> bool:
    """Whether a line is one only Claude Code writes: a line naming its ``sessionId``, a title
    line (``summary``, ``custom-title``, ``ai-title``) with its text, or a
    ``file-history-snapshot`` (a file may open with many of those, none naming the session)."""
    kind = d.get("type")
    if kind in _TITLES:
        return isinstance(d.get(_TITLES[kind]), str)
    if kind == "file-history-snapshot":
        return isinstance(d.get("snapshot"), dict)
    return isinstance(d.get("sessionId"), str) and isinstance(kind, str)


class ClaudeCode:
    """The Claude Code format (see the module's docstring)."""

    tool = "claude-code"
    dialect = "anthropic"
    expected = "a Claude Code transcript (JSON lines naming their sessionId)"

    def identify(self, path: str, head: list[dict[str, Any]]) -> Target | None:
        if not any(_is_claude_code_line(d) for d in head):
            return None  # another tool's file (a Codex rollout, a pi session) or other JSON
        session = next((d["sessionId"] for d in head if isinstance(d.get("sessionId"), str)), None)
        name = os.path.basename(path)
        if session is None:
            stem = name.removesuffix(".jsonl")
            if stem.startswith("agent-"):
                return None
            session = stem
        agent = next(
            (d["agentId"] for d in head if d.get("isSidechain") and isinstance(d.get("agentId"), str)), None
        )
        if agent is None and name.startswith("agent-"):
            agent = name.removesuffix(".jsonl").removeprefix("agent-")
        cwd = next((d["cwd"] for d in head if isinstance(d.get("cwd"), str)), None)
        if agent is None:
            return Target(session_id_for(PREFIX, session), cwd=cwd)
        side = _source.read_side_file(path.removesuffix(".jsonl") + ".meta.json") or {}
        description, agent_type = side.get("description"), side.get("agentType")
        return Target(
            session_id_for(PREFIX, session) + "-agent-" + encode_session_id(agent),
            parent=session_id_for(PREFIX, session),
            title=description if isinstance(description, str) else None,
            agent_name=agent_type if isinstance(agent_type, str) else "sub-agent",
            cwd=cwd,
        )

    def parse(self, path: str, lines: Iterator[Parsed], out: Collector) -> None:
        _Parse(out).run(lines)


class _Parse:
    """One pass over a file's lines (the format's state lives in ``out.state`` between imports)."""

    def __init__(self, out: Collector) -> None:
        self.out = out
        self.agent_file = out.main.parent is not None
        self.group: _Group | None = None
        self.boundary: tuple[_source.SourceLine, dict[str, Any]] | None = None  # waiting for its summary
        self.title_rank = 0
        self.chains: dict[str, str] = dict(out.state.get("chains") or {})
        #: Per message id counted: ``[request id, total_tokens]`` of the usage its record holds
        #: (``True`` in the state an older import saved: the counts are not known).
        self.counted: dict[str, Any] = _counted(out.state.get("counted"))
        #: The message ids counted by an earlier import, whose usage is in a record already.
        self.counted_before = dict(self.counted)
        #: Per message id of this pass: the entry holding its usage, and that usage.
        self.usage_at: dict[str, tuple[Entry, ModelUsage]] = {}
        #: Per message id counted before: this pass's larger usage for it, and where.
        self.larger: dict[str, tuple[Entry, ModelUsage, str]] = {}
        self.seen: dict[str, object] = {}  # the content of each line uuid of this pass
        self.tree = Tree()  # the main session's lines, for its branches
        #: Whether the main session holds a message (``summary`` lines before one wait for its time).
        self.began = bool(out.state.get("began"))
        #: ``summary`` lines before the first message, waiting for its timestamp (they carry none).
        self.summaries: list[tuple[_source.SourceLine, dict[str, Any]]] = []
        self.last_time: str | None = None  # the last line's timestamp
        #: Lines kept as records (`note`) before any line with a time, waiting for the next one's.
        self.untimed: list[Entry] = []

    def run(self, lines: Iterator[Parsed]) -> None:
        for line, d in lines:
            self.line(line, d)
        self.flush()
        self.close_boundary(None)
        self.close_untimed(self.last_time)
        self.close_summaries(self.last_time)
        for entry in self.tree.abandoned():
            # Left out of the context, kept and marked (docs/guides/importing.md, "Branches", says why).
            entry.message["include_in_messages"] = False
            entry.metadata["branch"] = "abandoned"
        self.update_usage()
        self.out.state["chains"] = self.chains
        self.out.state["counted"] = self.counted
        self.out.state["began"] = self.began

    def line(self, line: _source.SourceLine, d: dict[str, Any]) -> None:
        kind = d.get("type")
        message = d.get("message")
        if isinstance(d.get("timestamp"), str):
            self.last_time = d["timestamp"]
        if self.agent_file or not d.get("isSidechain"):
            self.tree.link(d)
        if kind == "summary" and isinstance(d.get("summary"), str):
            self.summary(line, d)
        if kind in ("user", "assistant") and isinstance(message, dict):
            if self.repeated(d.get("uuid"), message.get("content")):
                self.out.skip("duplicate", _SKIPPED["duplicate"])
            else:
                self.message(line, d, message, kind)
        elif kind == "system" and d.get("subtype") == "compact_boundary":
            self.flush()
            self.close_boundary(None)
            self.boundary = (line, d)
        elif kind in _TITLES and isinstance(d.get(_TITLES[kind]), str):
            self.title(kind, d[_TITLES[kind]])
            if kind != "summary":  # a summary line is stored above, where it waits for its time
                self.out.read_into_meta(kind, _SKIPPED["title"])
        elif kind == "system":
            self.note(line, d, f"system:{d.get('subtype')}", side.system_text(d))
        elif kind == "attachment" and isinstance(d.get("attachment"), dict):
            self.attachment_note(line, d)
        else:
            self.other(line, d, kind)

    def other(self, line: _source.SourceLine, d: dict[str, Any], kind: object) -> None:
        """A line of no kind read above: named in the report with why (`_SKIPPED`), or kept as
        a hidden record (`note`: a mode change, a line type newer than this importer)."""
        if isinstance(kind, str) and kind in _SKIPPED:
            self.out.skip(kind, _SKIPPED[kind])
        elif kind == "permission-mode" and d.get("permissionMode") == self.out.state.get("permission_mode"):
            self.out.skip("permission-mode:unchanged", _SKIPPED["permission-mode:unchanged"])
        elif kind in _KEPT:
            if kind == "permission-mode":
                self.out.state["permission_mode"] = d.get("permissionMode")
            self.note(line, d, str(kind), side.fields_text_of(d))
        elif kind in ("user", "assistant"):
            self.out.skip(kind, "a user or assistant line without a message object")
        elif kind is None:
            self.out.skip(kind, "a line without a type: nothing says what it is")
        else:
            self.out.skip(kind, "a line type this importer does not know (a newer Claude Code's): not stored")

    def repeated(self, uuid: object, content: object) -> bool:
        """Whether a message line is one read before: the same ``uuid`` with the same content.

        Claude Code writes a session's lines again when it is resumed into the same file,
        and concatenated files repeat theirs; storing them again would repeat messages,
        and an Anthropic request naming a ``tool_use`` id twice is refused. The lines of
        one message split over several lines share its ``message.id`` but each has its
        own ``uuid``, so they are kept; so is a line that reuses a uuid with other content.
        """
        if not isinstance(uuid, str):
            return False
        if uuid in self.seen:
            return _holds(self.seen[uuid], content)
        self.seen[uuid] = content
        # An earlier import stored the line as the store keeps it: redacted, when it held a secret.
        kept: object = None
        for session_id in {self.out.main.session_id, *self.chains.values()}:
            stored = self.out.stored_lines(session_id).get(uuid)
            if isinstance(stored, dict):
                if kept is None:
                    kept = self.out.as_stored({"content": content}).get("content")
                if _holds(stored.get("content"), kept):
                    return True
        return False

    def message(
        self, line: _source.SourceLine, d: dict[str, Any], message: dict[str, Any], kind: str
    ) -> None:
        if d.get("isCompactSummary"):
            self.flush()
            self.close_boundary((line, _text(message.get("content"))))
            return
        content = message.get("content")
        if not isinstance(content, (str, list)):
            self.out.skip(f"{kind}:no-content", "a message whose content is neither text nor a block list")
            return
        self.close_boundary(None)
        session_id = self.route(d)
        if session_id == self.out.main.session_id:
            self.tree.message(d, message)
        metadata = {k: d[k] for k in ("timestamp", "uuid") if isinstance(d.get(k), str)}
        if kind == "user":
            self.flush()
            entry = Entry(
                session_id, {"role": "user", "content": content}, line.number, line.end, metadata=metadata
            )
            self.add(entry)
            self.tree.stored([metadata["uuid"]] if "uuid" in metadata else [], entry)
            return
        key = message.get("id") if isinstance(message.get("id"), str) else d.get("requestId")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        group = self.group
        if group is not None and group.session_id == session_id and key is not None and group.key == key:
            group.blocks.extend(blocks)
            group.end, group.last = line.end, d
            group.usage = _larger(group.usage, usage_of(message))
            if isinstance(d.get("uuid"), str):
                group.more_uuids.append(d["uuid"])
            return
        self.flush()
        for name in ("id", "model"):
            if isinstance(message.get(name), str):
                metadata["message_id" if name == "id" else name] = message[name]
        self.group = _Group(
            session_id, key, line.number, line.end, list(blocks), d, metadata, usage=usage_of(message)
        )

    def flush(self) -> None:
        group, self.group = self.group, None
        if group is None:
            return
        last = group.last
        request_id = last.get("requestId") if isinstance(last.get("requestId"), str) else None
        message = {"role": "assistant", "content": group.blocks}
        metadata = group.metadata
        if group.more_uuids:
            # Every line's uuid, so a later import knows each of them (`repeated`).
            first = [metadata["uuid"]] if "uuid" in metadata else []
            metadata = {**metadata, "uuids": [*first, *group.more_uuids]}
        entry = Entry(group.session_id, message, group.line, group.end, None, request_id, metadata)
        self.add(entry)
        self.tree.stored(
            [metadata["uuid"], *group.more_uuids] if "uuid" in metadata else group.more_uuids, entry
        )
        self.count_usage(group.key, entry, group.usage)

    def count_usage(self, key: object, entry: Entry, usage: ModelUsage | None) -> None:
        """Put a message's usage on ``entry`` unless another record of its message id holds a
        usage at least as large: one usage per API message, its largest.

        The lines of one message can be apart (the results of parallel tool calls come
        between them), so they make several records; the usage goes to the one whose lines
        report the largest counts (the last while streaming), and only one has it.
        """
        if usage is None or not isinstance(key, str):
            entry.usage = usage
            return
        if key in self.counted_before:
            self.grew(key, entry, usage)  # its record from an earlier import holds the usage
            return
        held = self.usage_at.get(key)
        if held is not None:
            if _larger(held[1], usage) is held[1]:
                return
            held[0].usage = None
        entry.usage = usage
        self.usage_at[key] = (entry, usage)
        _remember(self.counted, key, [entry.request_id, usage.total_tokens])

    def grew(self, key: str, entry: Entry, usage: ModelUsage) -> None:
        """Note larger counts for a message an earlier import counted from its first lines
        (the import ran while Claude Code was writing it), when its record names a request id."""
        before = self.counted_before[key]
        if not (isinstance(before, list) and len(before) == 2 and isinstance(before[0], str)):
            return  # an older import's state: what its record holds is not known
        held = self.larger.get(key)
        counted = (
            held[1]
            if held is not None
            else ModelUsage(input_tokens=before[1] if type(before[1]) is int else 0)
        )
        if _larger(counted, usage) is usage and usage.total_tokens > counted.total_tokens:
            self.larger[key] = (entry, usage, before[0])

    def update_usage(self) -> None:
        """Log each larger usage `grew` found, under the request id its record holds, so the
        call counts once, with its final counts (`SessionStore.model_calls`)."""
        for key, (entry, usage, request_id) in self.larger.items():
            metadata: dict[str, Any] = {
                k: entry.metadata[k] for k in ("model", "timestamp") if k in entry.metadata
            }
            self.out.add(UsageUpdate(entry.session_id, usage, request_id, entry.line, entry.end, metadata))
            _remember(self.counted, key, [request_id, usage.total_tokens])

    def close_boundary(self, summary: tuple[_source.SourceLine, str] | None) -> None:
        """Store the waiting compaction: with ``summary`` (its line and text), or with the boundary's own text."""
        boundary, self.boundary = self.boundary, None
        if boundary is None and summary is None:
            return
        if summary is not None:
            line, text = summary
            first, end = (boundary[0].number if boundary else line.number), line.end
        else:
            assert boundary is not None
            content = boundary[1].get("content")
            text = content if isinstance(content, str) and content else "Conversation compacted"
            first, end = boundary[0].number, boundary[0].end
        data = boundary[1] if boundary else {}
        metadata = {k: data[k] for k in ("timestamp", "uuid") if isinstance(data.get(k), str)}
        self.add(Compaction(self.out.main.session_id, text or "Conversation compacted", first, end, metadata))

    def add(self, event: Event) -> None:
        """Report an event; the main session's first message closes the ``summary`` lines before it,
        and the first event with a time gives it to the untimed lines before it (`note`)."""
        moment = event.metadata.get("timestamp")
        if self.untimed and isinstance(moment, str):
            self.close_untimed(moment)
        if event.session_id == self.out.main.session_id:
            self.close_summaries(event.metadata.get("timestamp", self.last_time))
            self.began = self.began or isinstance(event, Entry)
        self.out.add(event)

    def summary(self, line: _source.SourceLine, d: dict[str, Any]) -> None:
        """Keep a ``summary`` line: a title Claude Code gave a conversation (the one its
        ``leafUuid`` ends), shown in its list of sessions and never sent to the model, so a
        record outside the context (docs/guides/importing.md, "Summary lines"). One before
        the session's first message waits for that message's time."""
        self.flush()  # a message before it is stored first: records keep the file's order
        if not self.began:
            self.summaries.append((line, d))
            return
        self.close_boundary(None)
        self.add(side.summary_entry(self.out.main.session_id, line, d, self.last_time))

    def note(self, line: _source.SourceLine, d: dict[str, Any], kind: str, text: str) -> None:
        """Keep a line that is no message (a ``system`` line: ``api_error``, ``away_summary``,
        ``turn_duration`` ...; a title; a mode change; a line type newer than this importer):
        Claude Code shows it to the person or keeps it for itself, never to the model, so it is
        a record outside the context holding the line's own fields as written
        (``claude_code_line``) and its text (``text``: what a reader shows and a search finds).
        Nothing is dropped."""
        self.flush()  # records keep the file's order
        self.close_boundary(None)  # a compaction waiting for its summary is stored before it
        metadata = {k: d[k] for k in ("timestamp", "uuid") if isinstance(d.get(k), str)}
        if "timestamp" not in metadata and self.last_time is not None:
            metadata["timestamp"] = (
                self.last_time
            )  # a line without a time (a mode) is as old as the line before
        fields = {k: v for k, v in d.items() if k not in side.ENVELOPE}
        message = {"role": "system", "content": text, "claude_code_type": kind, "claude_code_line": fields,
                   "include_in_messages": False}  # fmt: skip
        entry = Entry(self.route(d), message, line.number, line.end, metadata=metadata)
        if "timestamp" in metadata:
            self.add(entry)
        else:  # no line before it had a time: it waits for the next line's, as a summary line does
            self.untimed.append(entry)

    def attachment_note(self, line: _source.SourceLine, d: dict[str, Any]) -> None:
        """Keep an ``attachment`` line (a prompt queued while the agent worked, a hook's output,
        a reminder Claude Code added): a record outside the context holding the attachment as
        written, its text (``prompt``, ``content``, ``text``) readable and searchable, never dropped."""
        self.flush()  # records keep the file's order
        self.close_boundary(
            None
        )  # a compaction waiting for its summary is stored before it, as for a summary line
        attachment = d["attachment"]
        metadata = {k: d[k] for k in ("timestamp", "uuid") if isinstance(d.get(k), str)}
        session_id = self.route(d)  # a sub-agent's attachment (``isSidechain``) goes to its chain
        # A queued prompt may be content blocks (an image pasted with it): kept as blocks.
        prompt = attachment.get("prompt")
        text = (
            prompt
            if isinstance(prompt, list)
            else next(filter(None, (side.text_of(attachment.get(k)) for k in side.ATTACHMENT_TEXT)), "")
        ) or fields_text(attachment, frozenset({"type", "toolUseID"}))  # no text: its plain fields
        message = {"role": "system", "content": text, "claude_code_type": f"attachment:{attachment.get('type')}",
                   "attachment": attachment, "include_in_messages": False}  # fmt: skip
        self.add(Entry(session_id, message, line.number, line.end, metadata=metadata))

    def close_untimed(self, timestamp: object) -> None:
        """Store the lines `note` kept waiting for a time, at ``timestamp`` (the next line's)."""
        waiting, self.untimed = self.untimed, []
        for entry in waiting:
            if isinstance(timestamp, str):
                entry.metadata["timestamp"] = timestamp
            self.out.add(entry)

    def close_summaries(self, timestamp: object) -> None:
        """Store the waiting ``summary`` lines, at ``timestamp`` (the next line's time: the lines carry none)."""
        waiting, self.summaries = self.summaries, []
        for line, d in waiting:
            self.out.add(side.summary_entry(self.out.main.session_id, line, d, timestamp))

    def title(self, kind: str, text: str) -> None:
        """Keep the best title seen: a user's ``custom-title``, else an ``ai-title``, else the first ``summary``."""
        rank = {"custom-title": 3, "ai-title": 2, "summary": 1}[kind]
        if rank > self.title_rank:
            self.out.main.title, self.title_rank = text, rank

    def route(self, d: dict[str, Any]) -> str:
        """The session a message line goes to: the file's own, or an inline sidechain's child."""
        main = self.out.main.session_id
        if self.agent_file or not d.get("isSidechain"):
            return main
        uuid, parent = d.get("uuid"), d.get("parentUuid")
        session_id = self.chains.get(parent) if isinstance(parent, str) else None
        if session_id is None and parent is not None and self.chains:
            session_id = self.out.state.get("last_chain")
        if session_id is None:
            root = uuid if isinstance(uuid, str) else f"line-{len(self.chains)}"
            session_id = main + "-sidechain-" + encode_session_id(root)
        self.out.target(Target(session_id, parent=main, agent_name="sidechain", cwd=self.out.main.cwd))
        if isinstance(uuid, str):
            _remember(self.chains, uuid, session_id)
        self.out.state["last_chain"] = session_id
        return session_id
