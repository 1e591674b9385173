"""Names in a query (filter keys, sort, groupBy, aggregate fields) against a collection's schema.

A name is a structural column, a content field, a dotted path into a JSON field, or a path
through relations (``author.name`` through an m2o field, ``comments.body`` through an o2m alias,
``tags.label`` through an m2m field). ``Resolver`` answers which, and asks ``can_read`` about
every field it passes (403 ``field_policy`` when denied), the related side of a relation too.
``operands`` types the values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.errors import field_denied
from plugins.items.query.ir import FALSE, Exists, Link, Node, Target
from plugins.items.query.parse.limits import MAX_PATH_SEGMENTS, MAX_RELATION_HOPS
from plugins.schema.api import CollectionDef, FieldDef, SchemaSnapshot

log = logging.getLogger("svc.items")

CanRead = Callable[[str, str], bool]
RowFilterFor = Callable[[str], Mapping[str, Any] | None]
# (condition, snapshot, collection, path) -> the condition's checked node (trusted bounds).
ResolveCondition = Callable[[Mapping[str, Any], SchemaSnapshot, CollectionDef, Sequence[Any]], "Node | None"]

# API name -> (column, category, type) of the structural columns a query may name.
STRUCTURAL: dict[str, tuple[str, str, str]] = {
    "id": ("id", "text", "string"),
    "status": ("status", "text", "string"),
    "sort": ("sort", "number", "integer"),
    "createdAt": ("created_at", "instant", "timestamp"),
    "updatedAt": ("updated_at", "instant", "timestamp"),
    "userCreated": ("user_created", "text", "string"),
    "userUpdated": ("user_updated", "text", "string"),
}
TYPE_CATEGORY: dict[str, str] = {
    **dict.fromkeys(("integer", "float", "decimal", "bigInteger"), "number"),
    "boolean": "boolean",
    **dict.fromkeys(("string", "text", "code", "uuid", "hash", "slug", "color"), "text"),
    **dict.fromkeys(("dateTime", "date", "time", "timestamp"), "temporal"),
    **dict.fromkeys(("json", "geometry"), "json"),
    **dict.fromkeys(("csv", "files"), "list"),
}

def fail(message: str, path: Sequence[Any]) -> ApiError:
    return ApiError.validation(message, path=list(path))


def sensitive_refused(collection: str, name: str, path: Sequence[Any]) -> ApiError:
    """400 for a query naming a ``sensitive`` field: filtering, sorting, grouping, aggregating
    or searching on it would tell its values (an oracle), whoever asks and whatever the result."""
    return ApiError.validation(f"'{collection}.{name}' is a sensitive field: it cannot be filtered, sorted, "
                               "grouped, aggregated or searched", path=list(path),
                               reason="sensitive_field", field=name)


def structural_target(name: str) -> Target:
    column, category, type_name = STRUCTURAL[name]
    return Target(name, category, type_name, column=column)


def field_target(field: FieldDef, path: tuple[str, ...] = ()) -> Target:
    category = "json" if path else TYPE_CATEGORY.get(field.type, "json")
    return Target(field.name, category, field.type if not path else "json", field=field, path=path)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a key is read: a collection, or (nested objects under a JSON field) a JSON path."""

    collection: CollectionDef
    json_field: FieldDef | None = None
    json_path: tuple[str, ...] = ()
    hops: int = 0


class Resolver:
    """Names and operands of one filter (or sort, groupBy, aggregate) against ``snapshot``."""

    def __init__(self, snapshot: SchemaSnapshot, *, can_read: CanRead | None = None,
                 row_filter_for: RowFilterFor | None = None,
                 resolve_condition: ResolveCondition | None = None) -> None:
        """``resolve_condition`` turns a related collection's read condition into a node
        (``filters.resolver`` passes ``filters.resolve_filter``); needed with ``row_filter_for``."""
        assert row_filter_for is None or resolve_condition is not None
        self.snapshot = snapshot
        self.can_read = can_read
        self.row_filter_for = row_filter_for
        self.resolve_condition = resolve_condition
        self._row_filters: dict[str, Node | None] = {}

    # ------------------------------------------------------------------ names
    def readable(self, collection: str, name: str, path: Sequence[Any]) -> None:
        """403 ``field_policy`` when the principal may not read ``collection.name``."""
        if self.can_read is not None and not self.can_read(collection, name):
            raise field_denied(name, list(path), "read")

    def target(self, scope: Scope, segments: list[str], path: Sequence[Any]) -> tuple[Target, list[Link]]:
        """The column, field or JSON path a key names (with the relations crossed to reach it)."""
        found, links = self._walk(scope, segments, path, want_scope=False)
        assert isinstance(found, Target)
        return found, links

    def nested(self, scope: Scope, segments: list[str], path: Sequence[Any]) -> tuple[Scope, list[Link]]:
        """The scope of an object of fields under a key: a related collection or a JSON path."""
        found, links = self._walk(scope, segments, path, want_scope=True)
        assert isinstance(found, Scope)
        return found, links

    def _walk(self, scope: Scope, segments: list[str], path: Sequence[Any],
              want_scope: bool) -> tuple[Target | Scope, list[Link]]:
        links: list[Link] = []
        if scope.json_field is not None:
            full = scope.json_path + tuple(segments)
            self._depth(1 + len(full), path)
            if want_scope:
                return Scope(scope.collection, scope.json_field, full, scope.hops), links
            return field_target(scope.json_field, full), links
        coll, hops, rest = scope.collection, scope.hops, list(segments)
        while True:
            name, rest = rest[0], rest[1:]
            self.readable(coll.name, name, path)
            if name in STRUCTURAL:
                if rest or want_scope:
                    raise fail(f"'{name}' is a structural column; it has no fields", path)
                return structural_target(name), links
            nested = self.snapshot.nested_fields(coll.name).get(name)
            field = coll.fields.get(name)
            if nested is not None and (rest or want_scope):
                if nested.kind == "m2a":
                    raise fail(f"Filtering through the many-to-any field '{name}' is not supported; "
                               "use _json_contains on it", path)
                hops += 1
                if hops > MAX_RELATION_HOPS:
                    raise fail(f"A filter may cross at most {MAX_RELATION_HOPS} relations", path)
                link, coll = self._link(coll, nested, path)
                links.append(link)
                if not rest:
                    return Scope(coll, hops=hops), links
                continue
            if field is not None and field.sensitive:
                raise sensitive_refused(coll.name, name, path)
            if field is None:
                if nested is not None:
                    raise fail(f"'{name}' is a one-to-many alias: filter the fields of its items, "
                               f"like '{name}.id'", path)
                raise fail(f"Unknown field '{name}' in '{coll.name}'", path)
            if TYPE_CATEGORY.get(field.type) == "json":
                self._depth(1 + len(rest), path)
                if want_scope:
                    return Scope(coll, field, tuple(rest), hops), links
                return field_target(field, tuple(rest)), links
            if rest or want_scope:
                raise fail(f"'{name}' is a {field.type} field: it is neither a relation nor a JSON "
                           "field, so it has no sub-fields", path)
            return field_target(field), links

    @staticmethod
    def _depth(segments: int, path: Sequence[Any]) -> None:
        if segments > MAX_PATH_SEGMENTS:
            raise fail(f"A JSON path has at most {MAX_PATH_SEGMENTS} segments", path)

    def _link(self, coll: CollectionDef, nested: Any, path: Sequence[Any]) -> tuple[Link, CollectionDef]:
        related = self.snapshot.collection(nested.related_collection or "")
        if related is None:
            raise fail(f"The relation '{nested.name}' points to a missing collection", path)
        if nested.kind == "o2m":
            holder = related.fields.get(nested.foreign_key or "")
            if holder is not None:
                # Matching on the foreign key reads it: the principal must be allowed to.
                self.readable(related.name, holder.name, path)
        else:
            holder = coll.fields.get(nested.name)
        if holder is None:
            raise fail(f"The relation '{nested.name}' has no holder field", path)
        return Link(nested.kind, related.name, related.id, holder, self._row_filter(related)), related

    def _row_filter(self, related: CollectionDef) -> Node | None:
        """The related collection's read condition, checked once per filter (trusted: it was
        validated when the permission was written, so no field-policy check applies)."""
        if self.row_filter_for is None:
            return None
        if related.name not in self._row_filters:
            assert self.resolve_condition is not None
            tree = self.row_filter_for(related.name)
            node: Node | None = None
            if tree:
                try:
                    node = self.resolve_condition(tree, self.snapshot, related, ("conditions", related.name))
                except ApiError as exc:
                    # A condition the schema has outgrown hides the related rows rather than
                    # failing the caller's request or showing rows it was meant to hide.
                    log.warning("read condition on '%s' not compiled (%s); related rows hidden", related.name,
                                exc.message)
                    node = FALSE
            self._row_filters[related.name] = node
        return self._row_filters[related.name]


def wrap(links: list[Link], node: Node) -> Node:
    """``node`` inside the ``Exists`` of each relation crossed to reach it (innermost last)."""
    for link in reversed(links):
        node = Exists(link, node)
    return node
