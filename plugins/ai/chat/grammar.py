"""The copilot's command grammar, for a deployment without a model provider (it understands at
least ``list collections`` (safe) and ``delete collection <name>`` (dangerous); docs/ai.md).

One command per message, words case-insensitive, names and ids as written::

    list collections                       describe collection <name>
    read <collection> [limit <n>]          read <collection> <id>
    count <collection>                     search <text>
    create <collection> <json object>      update <collection> <id> <json object>
    delete <collection> <id>               create collection <name>
    delete collection <name>               add field <field> <type> to <collection>
    delete field <field> of <collection>   publish release <id>
    import <url>

``parse`` answers ``(skill name, arguments)`` or ``None``; the arguments are then checked
against the skill's schema and the caller's capability like any model's tool call.
"""

from __future__ import annotations

import json
import re
from typing import Any

HELP = ("Without a model I understand these commands: list collections; describe collection <name>; "
        "read <collection> [limit <n>]; read <collection> <id>; count <collection>; search <text>; "
        "create <collection> <json>; update <collection> <id> <json>; delete <collection> <id>; "
        "create collection <name>; delete collection <name>; add field <field> <type> to <collection>; "
        "delete field <field> of <collection> [with its data]; publish release <id>; import <url>.")

WORD = r"([A-Za-z0-9_.:-]+)"
PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^(?:list|show) collections$", re.I), "list_collections"),
    (re.compile(rf"^describe(?: collection)? {WORD}$", re.I), "describe_collection"),
    (re.compile(rf"^create collection {WORD}$", re.I), "create_collection"),
    (re.compile(rf"^delete collection {WORD}$", re.I), "delete_collection"),
    (re.compile(rf"^add field {WORD} {WORD} to {WORD}$", re.I), "create_field"),
    (re.compile(rf"^delete field {WORD} (?:of|from) {WORD}( with its data)?$", re.I), "delete_field"),
    (re.compile(rf"^publish release {WORD}$", re.I), "publish_release"),
    (re.compile(rf"^count {WORD}$", re.I), "count_items"),
    (re.compile(r"^search (.+)$", re.I | re.S), "search_items"),
    (re.compile(r"^import (\S+)$", re.I), "import_file"),
    (re.compile(rf"^(?:read|list) {WORD}(?: limit (\d{{1,3}}))?$", re.I), "read_items"),
    (re.compile(rf"^read {WORD} {WORD}$", re.I), "read_item"),
    (re.compile(rf"^create {WORD} (\{{.*\}})$", re.I | re.S), "create_item"),
    (re.compile(rf"^update {WORD} {WORD} (\{{.*\}})$", re.I | re.S), "update_item"),
    (re.compile(rf"^delete {WORD} {WORD}$", re.I), "delete_item"),
]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text  # the skill's schema refuses a string where an object belongs


def parse(message: str) -> tuple[str, dict[str, Any]] | None:
    """The skill and arguments a command names, or None when it is not a command."""
    text = " ".join(message.split()) if "{" not in message else message.strip()
    for pattern, skill in PATTERNS:
        found = pattern.match(text)
        if found is None:
            continue
        g = found.groups()
        if skill == "describe_collection" or skill == "count_items":
            return skill, {"collection": g[0]}
        if skill in ("create_collection", "delete_collection"):
            return skill, {"name": g[0]}
        if skill == "create_field":
            return skill, {"collection": g[2], "field": g[0], "type": g[1]}
        if skill == "delete_field":
            return skill, {"collection": g[1], "field": g[0], **({"allowDestructive": True} if g[2] else {})}
        if skill == "publish_release":
            return skill, {"id": g[0]}
        if skill == "search_items":
            return skill, {"q": g[0].strip()}
        if skill == "import_file":
            return skill, {"url": g[0]}
        if skill == "read_items":
            return skill, {"collection": g[0], **({"limit": int(g[1])} if g[1] else {})}
        if skill in ("read_item", "delete_item"):
            return skill, {"collection": g[0], "id": g[1]}
        if skill == "create_item":
            return skill, {"collection": g[0], "data": _json(g[1])}
        if skill == "update_item":
            return skill, {"collection": g[0], "id": g[1], "data": _json(g[2])}
        return skill, {}
    return None
