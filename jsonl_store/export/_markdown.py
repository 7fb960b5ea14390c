"""A session as GitHub-flavoured Markdown: readable in a pull request, inert whatever it holds.

Stored text never becomes Markdown or HTML: every message body, argument and result is a
fenced code block whose fence is longer than any run of backticks inside it (CommonMark
§4.5, https://spec.commonmark.org/0.31.2/#fenced-code-blocks: a fence closes only on a
run at least as long), so ``</details>``, ``<script>`` or ``[a](javascript:...)`` inside
it is shown as text. Names and titles on a line of their own are code spans, also sized
to their backticks (§6.1), where nothing is a link (GitHub autolinks bare URLs in text,
not in code). In the ``<summary>`` line of a ``<details>`` block, which is raw HTML,
they are escaped with `html.escape`.
"""

from __future__ import annotations

import html
import re

from .._context.folding import Answer
from .._context.parts import (
    ImagePart,
    OtherPart,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    base64_of,
)
from .._context.view import SessionSummary
from .._format.depth import with_deep_stack
from ..store import SessionStore
from ._edits import edit_diff, result_metadata
from ._transcript import (
    INLINE_IMAGE_CAP,
    Entry,
    Transcript,
    arguments_preview,
    collect,
    entries,
    facts,
    headline,
    image_type,
    json_text,
    one_line,
    page_name,
    tokens_label,
    visible,
    when,
)

_TICKS = re.compile("`+")


def _longest_ticks(text: str) -> int:
    return max((len(m.group()) for m in _TICKS.finditer(text)), default=0)


def fenced(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block nothing inside can close."""
    fence = "`" * max(3, _longest_ticks(text) + 1)
    body = visible(text)
    return f"{fence}{info}\n{body}\n{fence}"


def code(text: str) -> str:
    """``text`` on one line as a code span: shown as written, never a link or markup."""
    shown = one_line(text)
    ticks = "`" * (_longest_ticks(shown) + 1)
    # A space inside each end, so a span starting or ending with a backtick stays one (§6.1).
    return f"{ticks} {shown} {ticks}"


def _summary_html(text: str) -> str:
    return html.escape(one_line(text), quote=True)


def _details(summary: str, body: str, info: str = "text") -> list[str]:
    # The blank lines end the HTML block (CommonMark §4.6, type 6), so the fence between
    # them is Markdown again and closes nothing of the HTML around it.
    return [
        "<details>",
        f"<summary>{_summary_html(summary)}</summary>",
        "",
        fenced(body, info),
        "",
        "</details>",
        "",
    ]


def _session_link(summary: SessionSummary | None, session_id: str) -> str:
    label = code(session_id if summary is None or not summary.title else f"{session_id}: {summary.title}")
    return f"[{label}]({page_name(session_id, '.md')})"


def _image_lines(image: ImagePart) -> list[str]:
    media_type = image_type(image)
    if image.data is None:
        return [f"image at {code(image.url or '')} (not fetched)", ""]
    label = f"{media_type or 'image of unknown type'}, {len(image.data):,} bytes"
    if len(image.data) > INLINE_IMAGE_CAP or media_type is None:
        return [f"{code(f'[image: {label}: not inlined]')}", ""]
    return [f"![{label}](data:{media_type};base64,{base64_of(image.data)})", ""]


def _result_lines(result: ToolResultPart, label: str) -> list[str]:
    heading = f"**{label}**" + (" · **error**" if result.is_error else "") + ":"
    lines = [heading, ""]
    if isinstance(result.content, str):
        return [*lines, fenced(result.content), ""]
    for part in result.content:
        metadata = result_metadata(part)
        if metadata is not None:
            facts = " · ".join(f"{key} {json_text(value)}" for key, value in metadata.items())
            lines += [code(facts), ""]
        elif isinstance(part, TextPart):
            lines += [fenced(part.text), ""]
        else:
            lines += _part_lines(part, {}, 0)
    return lines


def _call_lines(call: ToolCallPart, answer: Answer | None, child: SessionSummary | None) -> list[str]:
    state = "" if answer is None or not answer.part.is_error else " · error"
    if answer is None:
        state = " · no result"
    summary = f"→ {call.name or '(unnamed tool)'}({arguments_preview(call.arguments)}){state}"
    lines = ["<details>", f"<summary>{_summary_html(summary)}</summary>", ""]
    diff = edit_diff(call)
    if diff is not None:
        lines += [fenced(diff, "diff"), ""]
    lines += [fenced(json_text(call.arguments), "json"), ""]
    if child is not None:
        lines += [f"sub-agent session: {_session_link(child, child.session_id)}", ""]
    if answer is not None:
        lines += _result_lines(answer.part, f"result (#{answer.record.sequence})")
    return [*lines, "</details>", ""]


def _part_lines(
    part: Part, answers: dict[int, Answer], index: int, transcript: Transcript | None = None
) -> list[str]:
    if isinstance(part, TextPart):
        return [fenced(part.text), ""]
    if isinstance(part, ReasoningPart):
        if not part.text:
            return ["*reasoning (encrypted by the provider)*", ""]
        return _details("reasoning", part.text)
    if isinstance(part, ToolCallPart):
        return _call_lines(part, answers.get(index), transcript.started(part) if transcript else None)
    if isinstance(part, ToolResultPart):
        return _result_lines(part, f"result of call {one_line(str(part.tool_call_id))} (no call before it)")
    if isinstance(part, ImagePart):
        return _image_lines(part)
    kind = part.raw.get("type") if isinstance(part.raw, dict) else None
    described = part.description if isinstance(part, OtherPart) else None
    if described is not None:  # a known value (a web search, a tool reference): what it says
        return _details(f"{described[0]}: {described[1]} (as stored)", json_text(part.raw), "json")
    return _details(
        f"other: {kind} (as stored)" if isinstance(kind, str) else "other content (as stored)",
        json_text(part.raw),
        "json",
    )


def _entry_lines(entry: Entry, transcript: Transcript) -> list[str]:
    if entry.role == "boundary":
        return [
            "---",
            "",
            f"**Compaction (snapshot {entry.snapshot_version}):** records #1 to #{entry.sequence} are replaced "
            "in the model context by this summary:",
            "",
            fenced(entry.text),
            "",
            "---",
            "",
        ]
    if entry.fact:
        return [code(" · ".join(facts(entry))), ""]
    lines = [f"### {code(' · '.join(facts(entry)))}", ""]
    for index, part in entry.parts:
        lines += _part_lines(part, entry.answers, index, transcript)
    return lines


@with_deep_stack  # whatever append accepts, however deep the caller's stack (spec §4)
def render_markdown(transcript: Transcript) -> str:
    """A `Transcript` as Markdown."""
    summary = transcript.summary
    lines = [f"# {code(headline(transcript))}", ""]
    lines.append(f"- session: {code(summary.session_id)}")
    if summary.agent_name:
        lines.append(f"- agent: {code(summary.agent_name)}")
    lines.append(f"- format: {code(summary.dialect)}")
    if summary.parent_session_id:
        lines.append(f"- parent session: {_session_link(None, summary.parent_session_id)}")
    if summary.fork is not None:
        source = summary.fork.session_id
        lines.append(f"- forked from: {_session_link(None, source)} after #{summary.fork.sequence}")
    lines += [
        f"- sub-agent session: {_session_link(child, child.session_id)}" for child in transcript.children
    ]
    lines.append(f"- records: {summary.message_count:,}")
    lines.append(f"- created: {when(summary.created_at)} · last append: {when(summary.updated_at)}")
    totals = transcript.totals
    lines.append(f"- tokens: {totals.total_tokens:,} ({tokens_label(totals)})")
    lines.append(f"- cost: {transcript.cost_label}")
    lines.append("")
    for entry in entries(transcript):
        lines += _entry_lines(entry, transcript)
    return "\n".join(lines).rstrip("\n") + "\n"


def to_markdown(store: SessionStore, session_id: str) -> str:
    """``session_id`` as a Markdown transcript (GitHub-flavoured).

    A header (title, agent, parent and sub-agent sessions as links to their
    ``session-<id>.md``, token totals), then every record of the raw log: text in fenced
    blocks, reasoning, tool calls and results in collapsible ``<details>``, and a rule at
    the latest snapshot's compaction boundary with its summary. Raises what
    `collect` raises (`SessionNotFound` for an unknown session).
    """
    return render_markdown(collect(store, session_id))


__all__ = ["code", "fenced", "render_markdown", "to_markdown"]
