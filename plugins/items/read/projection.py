"""``fields`` and ``deep`` against the schema and the caller's read permissions.

``project(schema, coll, fields, deep, ...)`` answers a ``Projection``: the columns a read selects,
how a row becomes an item, and the relations read nested (``Nested``, fetched by ``nested``).

- ``None`` or ``*``: every readable structural key and content field, relations as stored.
- ``title``, ``createdAt``: those (``id`` always). Unreadable: 403 ``field_policy``, checked first, so
  to a caller whose rule lists its fields a missing name answers the same; unknown otherwise: 400.
- ``author.name``, ``author.*`` (m2o): ``author`` becomes the related item, or ``null`` when there
  is none, it is deleted, or the caller may not see it (read permission, row filter).
- ``comments.body``, ``comments.*`` (o2m alias): a list of the related items the caller may see;
  ``comments`` alone: their ids. ``deep[comments]`` sets ``_filter``, ``_sort``, ``_limit``
  (default ``O2M_LIMIT``), ``_offset``/``_page`` per parent, and ``_fields`` (added to ``fields``).
- ``*.*``: every m2o and o2m relation the caller may read, one level, all fields; ``*.title``
  likewise with those names where they exist. m2m and m2a fields are never nested (their ids).
- At most ``ListQuery.nesting`` relations deep: ``MAX_NESTING`` (3, REST's) unless the caller
  asked for more (GraphQL: 10, what its depth guard of 12 leaves). Related items are masked by
  their own collection's read permission at every level; naming a field the caller may not read
  there is 403 as well.
- Where the read permission grants different fields on different rows (``Decision.paired``),
  the read selects one 0/1 column per rule condition (``grants.grant_columns``) and each row
  shows only the fields granted on it (``paired``; ``nested.shape_rows`` and ``attach``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.access import Decision
from plugins.items.core.grants import grant_columns
from plugins.items.core.guard import ReadAccess
from plugins.items.core.records import STRUCTURAL_COLUMNS
from plugins.items.core.rowfilter import row_condition
from plugins.items.errors import field_denied
from plugins.items.query import DeepQuery, compile_filter, compile_sort
from plugins.items.query.parse.limits import MAX_NESTING
from plugins.items.tables import items
from plugins.schema.api import CollectionDef, FieldDef, SchemaSnapshot

O2M_LIMIT = 100
FIELDS_PATH = ["query", "fields"]
NESTABLE = ("m2o", "o2m")
# API name -> row key of the structural columns.
COLUMN_KEYS = {name: column.name for name, column in STRUCTURAL_COLUMNS.items()}


@dataclass(frozen=True)
class Projection:
    """What a read of ``coll`` returns. ``content`` ``None``: every readable key of ``data``."""

    coll: CollectionDef
    structural: tuple[str, ...]
    content: tuple[str, ...] | None
    readable: frozenset[str] | None
    relations: tuple[Nested, ...] = ()
    paired: Decision | None = None
    flags: tuple[Any, ...] = ()

    @cached_property
    def columns(self) -> tuple[Any, ...]:
        """The columns to select: ``id``, the structural keys shown, ``data`` when it is read,
        and the rule conditions' 0/1 columns when the fields depend on the row."""
        cols = [STRUCTURAL_COLUMNS[name] for name in self.structural if name != "id"]
        needs_data = self.content is None or bool(self.content) or any(r.kind == "m2o" for r in self.relations)
        return (items.c.id, *cols, *((items.c.data,) if needs_data else ()), *self.flags)

    def names(self) -> tuple[str, ...] | None:
        """Every top-level name shown (``None``: all readable ones)."""
        return None if self.content is None else (*self.structural, *self.content, *(r.name for r in self.relations))

    def shown(self) -> tuple[str, ...] | None:
        """Top-level content names shown as stored (``None``: all), relations excluded: what
        the draft and locale overlay may replace."""
        nested = {r.name for r in self.relations}
        if self.content is None:
            if not nested:
                return None
            return tuple(n for n in self.coll.fields if n not in nested)
        return tuple(n for n in self.content if n not in nested)


@dataclass(frozen=True)
class Nested:
    """One relation read nested: ``name`` (the m2o field or o2m alias) of the parent becomes the
    related item (m2o) or the list of them (o2m). ``holder``: the m2o field, or the o2m foreign key
    on the related side. ``conditions``: the related read condition and the ``deep`` filter."""

    name: str
    kind: str
    related: CollectionDef
    holder: FieldDef
    projection: Projection
    conditions: tuple[Any, ...] = ()
    order: tuple[Any, ...] = ()
    limit: int = O2M_LIMIT
    offset: int = 0
    ids_only: bool = False


@dataclass
class _Tree:
    """``fields`` as a tree: names (a subtree when read through a relation) and ``*``."""

    star: bool = False
    names: dict[str, _Tree | None] = field(default_factory=dict)
    star_rest: list[list[str]] = field(default_factory=list)

    def add(self, segments: list[str]) -> None:
        head, rest = segments[0], segments[1:]
        if head == "*":
            self.star = True
            if rest:
                self.star_rest.append(rest)
            return
        if not rest:
            self.names.setdefault(head, None)
            return
        sub = self.names.get(head) or _Tree()
        self.names[head] = sub
        sub.add(rest)


def tree_of(names: list[str] | None) -> _Tree:
    tree = _Tree(star=names is None)
    for name in names or ():
        tree.add(name.split("."))
    return tree


class Projector:
    """Resolves the ``fields`` tree of one request, level by level."""

    def __init__(self, schema: SchemaSnapshot, access: ReadAccess, dialect: str, nesting: int = MAX_NESTING) -> None:
        self.schema = schema
        self.access = access
        self.dialect = dialect
        self.nesting = nesting

    def project(self, coll: CollectionDef, tree: _Tree, deep: dict[str, DeepQuery], depth: int = 0,
                strict: bool = True, path: tuple[str, ...] = ()) -> Projection:
        decision = self.access.decision(coll.name)
        readable = decision.fields if decision.allowed else frozenset()
        nested_fields = self.schema.nested_fields(coll.name)
        self._check_deep(coll, deep, path)
        tree = self._with_deep_fields(tree, deep)
        structural: list[str] = ["id"]
        content: list[str] = []
        relations: list[Nested] = []
        if tree.star:
            structural = [n for n in STRUCTURAL_COLUMNS if n == "id" or readable is None or n in readable]
        for name, sub in tree.names.items():
            here = ".".join((*path, name))
            nested = nested_fields.get(name)
            if sub is not None or (nested is not None and nested.kind == "o2m"):
                rel = self._relation(coll, name, nested, sub, deep.get(name), depth, strict, path)
                if rel is not None:
                    relations.append(rel)
                continue
            # Readable first, as in filters: to a caller whose rule lists its fields, a field it may
            # not read and one that does not exist answer alike (403), so a name cannot be probed.
            if name != "id" and readable is not None and name not in readable:
                if strict:
                    raise field_denied(name, FIELDS_PATH, "read")
                continue
            if name not in STRUCTURAL_COLUMNS and name not in coll.fields:
                if strict:
                    raise ApiError.validation(f"Unknown field '{here[:80]}'", path=FIELDS_PATH)
                continue
            if name in STRUCTURAL_COLUMNS:
                if name not in structural:
                    structural.append(name)
            elif not tree.star:
                content.append(name)
        if tree.star_rest:
            relations.extend(self._star_relations(coll, tree, relations, deep, depth, path))
        structural.sort(key=list(STRUCTURAL_COLUMNS).index)
        paired = decision if decision.allowed and decision.paired else None
        flags = grant_columns(paired, dialect=self.dialect, coll=coll, snapshot=self.schema) if paired else ()
        return Projection(coll, tuple(structural), None if tree.star else tuple(dict.fromkeys(content)),
                          readable, tuple(relations), paired, flags)

    # ------------------------------------------------------------------ relations
    def _relation(self, coll: CollectionDef, name: str, nested: Any, sub: _Tree | None, deep: DeepQuery | None,
                  depth: int, strict: bool, path: tuple[str, ...]) -> Nested | None:
        """The nested read of ``name``; ``None`` (when not ``strict``) where it cannot be read."""
        here = ".".join((*path, name))

        def refuse(error: ApiError) -> None:
            if strict:
                raise error

        if not self.access.can_read(coll.name, name):  # readable first: hidden and missing alike
            refuse(field_denied(name, FIELDS_PATH, "read"))
            return None
        if nested is None or nested.kind not in NESTABLE:
            if nested is not None:
                refuse(ApiError.validation(f"'{here[:80]}' is a {nested.kind} field: it is not read nested; "
                                           "ask for it without sub-fields", path=FIELDS_PATH))
            elif name in coll.fields or name in STRUCTURAL_COLUMNS:
                refuse(ApiError.validation(f"'{here[:80]}' is not a relation: it has no sub-fields",
                                           path=FIELDS_PATH))
            else:
                refuse(ApiError.validation(f"Unknown field '{here[:80]}'", path=FIELDS_PATH))
            return None
        if depth >= self.nesting:
            raise ApiError.validation(f"'fields' reads at most {self.nesting} relations deep", path=FIELDS_PATH)
        related = self.schema.collection(nested.related_collection or "")
        if nested.kind == "m2o":
            holder = coll.fields.get(name)
        else:
            holder = related.fields.get(nested.foreign_key or "") if related is not None else None
        if related is None or holder is None:
            refuse(ApiError.validation(f"The relation '{here[:80]}' cannot be read", path=FIELDS_PATH))
            return None
        # As in filters: the m2o field or o2m alias must be readable (Directus lists aliases in a
        # rule's fields too), and for o2m the foreign key the match reads on the related side.
        # The o2m foreign key is matched on (a predicate): it must be granted on every related row.
        gates = [(coll.name, name, self.access.can_read)]
        if nested.kind == "o2m":
            gates.append((related.name, holder.name, self.access.can_filter))
        for gate_coll, gate_name, allowed in gates:
            if not allowed(gate_coll, gate_name):
                refuse(field_denied(gate_name, FIELDS_PATH, "read"))
                return None
        if not self.access.decision(related.name).allowed:
            refuse(field_denied(name, FIELDS_PATH, "read"))
            return None
        ids_only = sub is None
        projection = self.project(related, sub or _Tree(names={"id": None}), deep.deep if deep else {},
                                  depth + 1, strict, (*path, name))
        conditions = [row_condition(self.access.decision(related.name), dialect=self.dialect, coll=related,
                                    snapshot=self.schema)]
        deep_path = ["query", "deep", *path, name]
        if deep is not None and deep.filter is not None:
            conditions.append(compile_filter(deep.filter, snapshot=self.schema, collection=related,
                                             dialect=self.dialect, table=items, can_read=self.access.can_filter,
                                             row_filter_for=self.access.row_filter_for,
                                             path=[*deep_path, "_filter"]))
        order: list[Any] = []
        if nested.kind == "o2m":
            order = compile_sort(deep.sort if deep else [], snapshot=self.schema, collection=related,
                                 dialect=self.dialect, table=items, can_read=self.access.can_filter,
                                 row_filter_for=self.access.row_filter_for, path=[*deep_path, "_sort"])
        return Nested(name, nested.kind, related, holder, projection,
                      tuple(c for c in conditions if c is not None), tuple(order),
                      (deep.limit if deep and deep.limit is not None else O2M_LIMIT),
                      deep.offset if deep else 0, ids_only and nested.kind == "o2m")

    def _star_relations(self, coll: CollectionDef, tree: _Tree, done: list[Nested], deep: dict[str, DeepQuery],
                        depth: int, path: tuple[str, ...]) -> list[Nested]:
        """``*.rest``: every m2o/o2m relation not named otherwise, read where the caller may."""
        named = set(tree.names)
        out = []
        for name, nested in self.schema.nested_fields(coll.name).items():
            if name in named or nested.kind not in NESTABLE or any(r.name == name for r in done):
                continue
            sub = _Tree()
            for rest in tree.star_rest:
                sub.add(rest)
            rel = self._relation(coll, name, nested, sub, deep.get(name), depth, False, path)
            if rel is not None:
                out.append(rel)
        return out

    # ------------------------------------------------------------------ deep
    def _check_deep(self, coll: CollectionDef, deep: dict[str, DeepQuery], path: tuple[str, ...]) -> None:
        nested = self.schema.nested_fields(coll.name)
        for name in deep:
            if name not in nested or nested[name].kind not in NESTABLE:
                raise ApiError.validation(f"'{'.'.join((*path, name))[:80]}' is not an m2o or o2m relation of "
                                          f"'{coll.name}'", path=["query", "deep", *path, name])

    @staticmethod
    def _with_deep_fields(tree: _Tree, deep: dict[str, DeepQuery]) -> _Tree:
        """``deep[rel][_fields]`` reads ``rel`` with those fields, as ``fields=rel.a`` would (the
        tree is the request's own: adding to it is safe)."""
        for name, query in deep.items():
            for n in query.fields or ():
                tree.add([name, *n.split(".")])
        return tree
