"""Policy evaluation: (principal, collection, action) -> allowed, fields, row condition.

The access plugin loads a site's roles, policies and rules through the ``load_access`` hook;
this module evaluates them. Permissions are the union of every policy attached to the user,
to each role of the role's ``parentId`` chain and to the user's teams; default deny; anonymous
requests get the site's ``public`` role; admin access (role or policy) short-circuits.

Snapshots are cached per (site, principal) in the ``access`` site cache (kernel/cache/sitecache.py)
and dropped when the site's access data changes: the ``access.changed`` action reaches every
worker through the bus (Redis fan-out), and a short TTL bounds staleness where there is no
Redis to carry it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kernel.auth.principal import Principal
from kernel.cache.sitecache import SiteCacheSpec
from kernel.hooks.plugins import call_first, registrations

if TYPE_CHECKING:
    from kernel.core.context import Kernel

ALL_FIELDS = "*"
CHANGED_EVENT = "access.changed"
ACCESS_CACHE = SiteCacheSpec(
    "access", max_entries=20_000, ttl=5.0, invalidate_on=(CHANGED_EVENT,),
    doc="Access snapshots per (site, principal): roles, policies and rules of one caller.")


@dataclass(frozen=True)
class AccessAction:
    """An action a permission rule may name (``register_access_actions``).

    ``capability``: no collection bounds it; a rule grants it with ``collection`` ``*``, and
    ``AccessControl.has_capability`` asks for it (admin implies every one)."""

    name: str
    doc: str = ""
    capability: bool = False


# The kernel's own actions, on the items of a collection; plugins register theirs.
KERNEL_ACTIONS = (
    AccessAction("create", "Create items of the collection."),
    AccessAction("read", "Read items of the collection (its fields)."),
    AccessAction("update", "Update items of the collection."),
    AccessAction("delete", "Delete items of the collection."),
)


@dataclass(frozen=True)
class Rule:
    """One permission rule of a policy."""

    collection: str
    action: str
    fields: tuple[str, ...] = (ALL_FIELDS,)
    conditions: dict[str, Any] | None = None
    policy_id: str | None = None
    # -- people: the stored rule's id, so an explanation can name the rule (POST /permissions/check)
    id: str | None = None


@dataclass(frozen=True)
class Grant:
    """One (fields, condition) pair of a decision: ``fields`` (``None``: every field) are granted
    on the rows ``condition`` matches (``None``: every row). A field is granted on a row only by
    a pair whose own condition matches that row; pairs never lend fields to each other."""

    fields: frozenset[str] | None
    condition: dict[str, Any] | None


@dataclass(frozen=True)
class Decision:
    """The answer for one (collection, action).

    ``fields`` is ``None`` for every field, else the allowed field names (the union over the
    rules). ``row_filter`` is a filter tree to AND into queries (the OR of the rules'
    conditions), or ``None`` when rows are not restricted. ``grants`` are the rules'
    (fields, condition) pairs, merged where that changes nothing (``pairs()``): when there is
    one pair, the union is exact on every row; otherwise a field is granted on a row only where
    a pair holding it matches (see ``docs/decisions/access-field-pairing.md``).
    """

    allowed: bool
    fields: frozenset[str] | None = None
    row_filter: dict[str, Any] | None = None
    grants: tuple[Grant, ...] = ()

    def field_allowed(self, name: str) -> bool:
        """Whether ``name`` is granted on at least one row (the union of the pairs)."""
        return self.allowed and (self.fields is None or name in self.fields)

    def pairs(self) -> tuple[Grant, ...]:
        """The (fields, condition) pairs; one pair when the fields do not depend on the row."""
        return self.grants or (Grant(self.fields, self.row_filter),)

    @property
    def paired(self) -> bool:
        """True when which fields are granted depends on the row (more than one pair)."""
        return len(self.grants) > 1

    def everywhere(self, name: str) -> bool:
        """Whether ``name`` is granted on every row this decision lets through (so a predicate on
        it reveals nothing about rows where it is hidden)."""
        if not self.field_allowed(name):
            return False
        if not self.paired:
            return True
        holding = [g for g in self.grants if g.fields is None or name in g.fields]
        return len(holding) == len(self.grants) or any(g.condition is None for g in holding)

    def to_dict(self) -> dict[str, Any]:
        if not self.allowed:
            return {"allowed": False, "fields": [], "conditions": None}
        return {
            "allowed": True,
            "fields": [ALL_FIELDS] if self.fields is None else sorted(self.fields),
            "conditions": self.row_filter,
        }


def fields_on(grants: tuple[Grant, ...], matched: Any) -> frozenset[str] | None:
    """The union of the fields of the pairs whose condition matched a row (``matched[i]`` for
    ``grants[i]``; unconditional pairs always match). ``None``: every field."""
    out: set[str] = set()
    for grant, hit in zip(grants, matched, strict=True):
        if grant.condition is None or hit:
            if grant.fields is None:
                return None
            out.update(grant.fields)
    return frozenset(out)


def merge_grants(pairs: list[tuple[frozenset[str] | None, dict[str, Any] | None]]) -> tuple[Grant, ...]:
    """The rules' (fields, condition) pairs reduced without changing what they grant: the
    unconditional ones become one pair (their fields' union), a conditional pair whose fields
    that one already grants everywhere is dropped, and pairs with equal fields are merged (their
    conditions ORed). A single pair left means the fields do not depend on the row."""
    free: set[str] | None = set()
    seen_free = False
    for fields, condition in pairs:
        if condition is None:
            seen_free = True
            free = None if fields is None or free is None else free | fields
    by_fields: dict[frozenset[str] | None, list[dict[str, Any]]] = {}
    for fields, condition in pairs:
        if condition is None:
            continue
        if seen_free and (free is None or (fields is not None and fields <= free)):
            continue
        by_fields.setdefault(fields, []).append(condition)
    out = [Grant(None if free is None else frozenset(free), None)] if seen_free else []
    for fields, conds in by_fields.items():
        unique = list({repr(c): c for c in conds}.values())
        out.append(Grant(fields, unique[0] if len(unique) == 1 else {"_or": unique}))
    return tuple(out)


@dataclass
class AccessSnapshot:
    """Everything needed to answer access questions for one principal in one site."""

    site_id: str
    admin: bool = False
    role_id: str | None = None
    role_ids: tuple[str, ...] = ()
    team_ids: tuple[str, ...] = ()
    policy_ids: tuple[str, ...] = ()
    rules: list[Rule] = field(default_factory=list)

    def decide(self, collection: str, action: str, principal: Principal | None = None) -> Decision:
        if self.admin:
            return Decision(True)
        matching = [r for r in self.rules if r.action == action and r.collection in (collection, ALL_FIELDS)]
        if not matching:
            return Decision(False)
        fields: set[str] | None = set()
        filters: list[dict[str, Any]] = []
        pairs: list[tuple[frozenset[str] | None, dict[str, Any] | None]] = []
        unrestricted = False
        for rule in matching:
            rule_fields = None if ALL_FIELDS in rule.fields else frozenset(rule.fields)
            if fields is not None:
                if rule_fields is None:
                    fields = None
                else:
                    fields.update(rule_fields)
            condition = None
            if not rule.conditions:
                unrestricted = True
            else:
                condition = substitute_variables(rule.conditions, principal, self)
                filters.append(condition)
            pairs.append((rule_fields, condition))
        row_filter = None if unrestricted else (filters[0] if len(filters) == 1 else {"_or": filters})
        grants = merge_grants(pairs)
        return Decision(True, None if fields is None else frozenset(fields), row_filter,
                        grants if len(grants) > 1 else ())

    def matrix(self, principal: Principal | None = None) -> dict[str, dict[str, Any]]:
        """Every collection with a rule -> action -> decision (for ``/permissions/me``)."""
        out: dict[str, dict[str, Any]] = {}
        for rule in self.rules:
            out.setdefault(rule.collection, {})[rule.action] = self.decide(
                rule.collection, rule.action, principal).to_dict()
        return out


VARIABLES = ("$CURRENT_USER", "$CURRENT_ROLE", "$CURRENT_ROLES", "$NOW")


def uses_variables(tree: Any, names: tuple[str, ...] = VARIABLES) -> bool:
    """Whether a filter tree holds one of the variables ``names`` anywhere."""
    if isinstance(tree, dict):
        return any(uses_variables(v, names) for v in tree.values())
    if isinstance(tree, list):
        return any(uses_variables(v, names) for v in tree)
    return isinstance(tree, str) and tree in names


def substitute_variables(tree: Any, principal: Principal | None, snapshot: AccessSnapshot) -> Any:
    """Replace ``$CURRENT_USER``, ``$CURRENT_ROLE``, ``$CURRENT_ROLES`` and ``$NOW`` in a filter tree
    (permission conditions, and list filters: docs/access.md#variables-in-list-filters). In a
    list of values, ``$CURRENT_ROLES`` stands for its role ids (``_in: ["$CURRENT_ROLES", "x"]``)."""
    if isinstance(tree, dict):
        return {k: substitute_variables(v, principal, snapshot) for k, v in tree.items()}
    if isinstance(tree, list):
        out: list[Any] = []
        for v in tree:
            if v == "$CURRENT_ROLES":
                out.extend(snapshot.role_ids)
            else:
                out.append(substitute_variables(v, principal, snapshot))
        return out
    if isinstance(tree, str) and tree.startswith("$"):
        if tree == "$CURRENT_USER":
            return principal.user_id if principal else None
        if tree == "$CURRENT_ROLE":
            return snapshot.role_id
        if tree == "$CURRENT_ROLES":
            return list(snapshot.role_ids)
        if tree == "$NOW":
            return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    return tree


def principal_key(principal: Principal) -> str:
    """The cache key of a principal's snapshot: what the loader's answer depends on.

    A user's role comes from their membership, so it is not part of the key (the principal
    before and after ``resolve`` shares one entry); keys and external tokens carry their role.
    """
    if principal.kind == "anonymous":
        return "anon"
    if principal.kind == "user":
        return f"user:{principal.user_id}"
    return f"{principal.kind}:{principal.user_id or ''}:{principal.api_key_id or ''}:{principal.role_id or ''}"


class AccessControl:
    """The kernel's access service: ``kernel.access``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.cache = kernel.site_caches[ACCESS_CACHE.name]

    def registered(self) -> dict[str, AccessAction]:
        """Every action a rule may name: the kernel's, then those of the enabled plugins
        (``register_access_actions``), by name. A name registered twice stops the start."""
        found = dict(registrations(self.kernel, "register_access_actions", AccessAction, "name", "access action"))
        clash = sorted(set(found) & {a.name for a in KERNEL_ACTIONS})
        if clash:
            raise ValueError(f"access action {clash[0]!r} is the kernel's; a plugin cannot register it")
        return {**{a.name: a for a in KERNEL_ACTIONS}, **found}

    @property
    def actions(self) -> tuple[str, ...]:
        """The names of every action a rule may name (``registered``)."""
        return tuple(self.registered())

    @property
    def capabilities(self) -> tuple[str, ...]:
        """The actions no collection bounds (granted with collection ``*``)."""
        return tuple(name for name, action in self.registered().items() if action.capability)

    async def bind_variables(self, tree: Any, principal: Principal, site_id: str) -> Any:
        """A list filter with its variables replaced by the caller's values (``substitute_variables``)."""
        if not uses_variables(tree):
            return tree
        return substitute_variables(tree, principal, await self.snapshot(principal, site_id))

    async def snapshot(self, principal: Principal, site_id: str) -> AccessSnapshot:
        if principal.is_instance_admin:
            return AccessSnapshot(site_id=site_id, admin=True, role_id=principal.role_id)

        async def load(stale: AccessSnapshot | None) -> AccessSnapshot:
            loaded = await call_first(self.kernel.pm.hook.load_access, kernel=self.kernel, site_id=site_id,
                                      principal=principal)
            return loaded if isinstance(loaded, AccessSnapshot) else AccessSnapshot(site_id=site_id)

        return await self.cache.get_or_load(site_id, principal_key(principal), load)

    async def resolve(self, principal: Principal, site_id: str) -> Principal:
        """The principal with its role and admin access in ``site_id`` filled in."""
        snap = await self.snapshot(principal, site_id)
        return replace(principal, site_id=site_id, role_id=snap.role_id or principal.role_id,
                       admin_access=principal.admin_access or snap.admin)

    async def decide(self, principal: Principal, site_id: str, collection: str, action: str) -> Decision:
        snap = await self.snapshot(principal, site_id)
        return snap.decide(collection, action, principal)

    async def has_capability(self, principal: Principal, site_id: str, capability: str) -> bool:
        """Whether ``principal`` holds ``capability`` (a registered capability, ``capabilities``)
        in ``site_id``: a rule with collection ``*`` and that action, or admin access."""
        if capability not in self.capabilities:
            raise ValueError(f"unknown capability {capability!r}; known: {self.capabilities}")
        return (await self.decide(principal, site_id, ALL_FIELDS, capability)).allowed

    def invalidate(self, site_id: str | None = None) -> None:
        """Forget cached snapshots of one site (or all) in this process."""
        self.cache.invalidate(site_id)
