"""The cross-tenant sweep (issue 27, item 2): every operation of the OpenAPI document, called from
site B with site A's ids, keys and names, shows, changes and counts nothing of site A.

Generated, not hand-listed: the operations come from the default app's document (every plugin
installed), so a route added later is swept without anyone remembering to. The test fails when
an operation of the document is neither swept nor named in ``NOT_SITE_SCOPED`` (each entry says
why), and when a path parameter of a swept operation has no value of A's in ``A_VALUES``.

One app for the module (issue 27's budget: one module, well under 20 s on SQLite):

1. Site A is seeded once through the API (one of each resource the plugins own) by a member who
   is admin of A only; every id, key and name A got is recorded. A's free text (titles, names,
   secrets, template bodies) carries ``SECRET``, a token B never sends; A's identifiers (ids,
   keys, collection names, emails) are recorded one by one. Site B gets its own smaller set
   (one item of a collection with the same name as A's, one page view), so B's counts are known.
2. A snapshot of A: every GET operation as A's admin, with A's ids.
3. The sweep: every operation, in the order reads, writes, deletes, as three principals of B: a
   member who is admin of B only, a subscriber of B, and the instance admin with B's
   ``X-Svc-Site`` (instance-admin operations are instance-wide by definition and skipped for it).
   Path parameters name A's objects; a JSON body is built from the operation's request schema,
   its id-like fields naming A's objects. Each answer: no 5xx; no ``SECRET``, no server secret of
   A's, and no A identifier that the request did not carry itself (an error may echo the id it
   was asked about, nothing more; a name B stored in B by a 2xx write is B's from then on); no
   2xx for a write whose path names A's object by its id, or whose body names A's ids; a list's
   ``meta.total`` never counts more rows than it answered while B's lists are short.
4. A's snapshot again, equal to the first; B's counts (items, aggregates, search, page views,
   GraphQL) are B's own.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio

from kernel.mailer import MemoryMailer
from kernel.testing import API, MEMBER_PASSWORD, AppFactory, Calls, TestApp, new_member, svc_test_database_url

pytestmark = pytest.mark.asyncio(loop_scope="module")

HEX = uuid.uuid4().hex[:10]
SECRET = f"zqs{HEX}"  # in every free-text value of A's: never in an answer to B
IDENT = f"zqi{HEX}"  # in the names A chose (collection, keys, emails): B sends these
A_COLLECTION = f"aonly_{IDENT}"  # a collection only A has
A_FIELD = f"s_{IDENT}"  # a field of it
SEARCH = f"qk{HEX}"  # a word in A's item titles, which B searches for
SHARED_COLLECTION = "articles"  # a collection both sites have: B's counts must be B's
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
GROUPED = {"aggregate[count]": "*", "groupBy": "kind"}  # kept per value on PostgreSQL
SWEEP_PORT = 19301  # nothing listens here: outbound URLs of the seed (webhook, push, providers)

OPENAPI_PATH = f"{API}/openapi.json"
METHODS = ("get", "post", "put", "patch", "delete")

# Operations that are not site-scoped, so a sweep "as site B with A's ids" means nothing for them.
# Everything else in the document is swept. Keep the reason: a new route lands here only when it
# truly is not about one site's data.
NOT_SITE_SCOPED: dict[str, str] = {
    # The document, health, version and process metrics: the same for every site and caller.
    "GET /api/v1/openapi.json": "the API's description",
    "GET /api/v1/utils/health": "process health",
    "GET /api/v1/utils/version": "build version",
    "GET /api/v1/metrics": "process metrics (Prometheus), instance-wide by design",
    "GET /metrics": "process metrics (Prometheus), instance-wide by design",
    # Identity is global (contract: users are global identities). These take credentials or
    # one-time tokens, never an id of a site's object; their site binding has its own tests
    # (plugin_tests/accounts/test_token_site_binding.py).
    "POST /api/v1/auth/login": "credentials, global identity",
    "POST /api/v1/auth/logout": "ends the caller's own session",
    "POST /api/v1/auth/refresh": "the caller's own refresh token",
    # -- studio41: the caller's own refresh token, for a site it is a member of (403 otherwise);
    # plugin_tests/accounts/test_switch_site.py
    "POST /api/v1/auth/switch-site": "the caller's own refresh token, moved to another of its sites",
    "POST /api/v1/auth/register": "creates a global identity",
    "POST /api/v1/auth/forgot-password": "global identity; answers the same for any email",
    "POST /api/v1/auth/reset-password": "one-time token",
    "POST /api/v1/auth/verify-email": "one-time token",
    "POST /api/v1/auth/resend-verification": "global identity; answers the same for any email",
    "POST /api/v1/auth/accept-invite": "one-time token",
    "POST /api/v1/me/change-password": "the caller's own global password",
    # The user's own memberships, for a site switcher: the sites it may sign in to (the instance
    # admin, an admin of every site, lists every site, as GET /sites does for it);
    # plugin_tests/accounts/test_my_sites.py.
    "GET /api/v1/me/sites": "the caller's own memberships across sites",
    # The studio's page and its hashed files: the same static app for everyone, no site's data.
    "GET /studio": "static app page, no site",
    "GET /studio/assets/{name}": "static app file, no site",
    # Public endpoints that name their site in the path on purpose: anyone may read a site's
    # published pages and llms.txt, and any browser may send a site a page view (a beacon).
    "GET /api/v1/assets/{site_id}/{id}": "A's file, site named in the path; A's own permissions decide "
                                          "(plugin_tests/files/test_assets_in_path.py)",
    "GET /api/v1/deliver/llms.txt/{site_id}": "public: A's published content, site named in the path",
    "GET /api/v1/deliver/page/{site_id}/{slug}": "public: A's published page, site named in the path",
    "POST /api/v1/pageviews/{site_id}/hit": "public beacon to the site named in the path",
    # -- ext_ui: an extension's UI panel, its code only, 404 where it is not enabled with `ui`
    # (plugin_tests/extensions/test_extensions_panels.py)
    "GET /api/v1/extensions/ui/panels/{site_id}/{extension}/{panel_id}": "public: an enabled extension's panel "
                                                                         "document, site named in the path",
    # -- end ext_ui
    # OAuth's redirect back from the provider: the state parameter (signed) names the site.
    "GET /api/v1/integrations/git/oauth/{provider}/callback": "signed OAuth state, not a site's id",
}

@dataclass
class Seeded:
    """What site A (and B) got: identifiers B may send, and values B must never see."""

    site_a: str
    site_b: str
    values: dict[str, str] = field(default_factory=dict)  # A_VALUES key -> A's value
    identifiers: set[str] = field(default_factory=set)  # A's ids, keys and names
    secrets: set[str] = field(default_factory=set)  # server-made secrets of A's (keys, tickets)
    secret_of: dict[str, str] = field(default_factory=dict)

    def keep(self, name: str, value: Any) -> str:
        value = str(value)
        self.values[name] = value
        self.identifiers.add(value)
        return value


@dataclass
class Sweep:
    app: TestApp
    doc: dict[str, Any]
    seeded: Seeded
    a: Calls  # A's admin (admin of A only)
    b_admin: Calls
    b_member: Calls
    b_instance: Calls  # the instance admin with B's X-Svc-Site
    b_admin_id: str
    b_admin_email: str = ""


def _env() -> dict[str, str]:
    import base64

    from plugins.realtime import push

    public, private = push.new_key_pair()
    base = f"http://127.0.0.1:{SWEEP_PORT}"
    return {"SVC_ENCRYPTION_KEY": base64.b64encode(b"s" * 32).decode(),
            "SVC_VAPID_PUBLIC_KEY": public, "SVC_VAPID_PRIVATE_KEY": private,
            "SVC_VAPID_SUBJECT": "mailto:ops@example.com",
            "SVC_GIT_GITHUB_API_URL": base, "SVC_GIT_GITHUB_URL": base, "SVC_GIT_GITLAB_URL": base + "/gl",
            "SVC_PUBLIC_URL": "https://cms.example.com",
            "SVC_OUTBOUND_ALLOW_NETWORKS": ""}  # production's default: the seed's outbound URLs are refused


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sweep(svc_shared_db: str, svc_template_db: str,
                tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sweep]:
    url = svc_test_database_url() and svc_shared_db
    factory = AppFactory(svc_template_db, tmp_path_factory.mktemp("sweep"), f"svctest:{uuid.uuid4().hex[:12]}",
                         database_url=url)
    try:
        app = await factory(env=_env(), rate_limit_auth=0)
        # A deployment with email configured, so email operations run instead of a designed 503
        # (as in tests/test_openapi.py); mail goes nowhere.
        app.kernel.mailer = MemoryMailer()
        instance = {"Authorization": f"Bearer {await app.login()}"}
        site_a = await app.create_site(instance, prefix="a", name="Site A")
        site_b = await app.create_site(instance, prefix="b", name="Site B")
        a_admin = await new_member(app, site_a, "admin", email=f"admin-{IDENT}@example.com")
        b_admin = await new_member(app, site_b, "admin")
        b_member = await new_member(app, site_b, "subscriber")
        doc = (await app.client.get(OPENAPI_PATH)).json()
        seeded = Seeded(site_a, site_b)
        a = Calls(app.client, a_admin.headers)
        seeded.keep("site_a", site_a)
        seeded.keep("a_admin", a_admin.id)
        seeded.keep("a_admin_email", a_admin.email)
        seeded.secrets.add(a_admin.token or "")
        seeded.secret_of["a_admin_token"] = a_admin.token or ""
        await _seed_a(app, a, seeded)
        await _seed_b(app, Calls(app.client, b_admin.headers), site_b)
        await _kept_group_counts(app, a, Calls(app.client, b_admin.headers))
        yield Sweep(app, doc, seeded, a, Calls(app.client, b_admin.headers), Calls(app.client, b_member.headers),
                    Calls(app.client, {**instance, "X-Svc-Site": site_b}), b_admin.id, b_admin.email)
    finally:
        await factory.close()


async def _seed_a(app: TestApp, a: Calls, s: Seeded) -> None:
    """One of each resource the plugins own, in site A, through the API (notifications through
    the realtime plugin's api, which is how plugins raise them)."""
    keep = s.keep
    # schema and items: a collection only A has (related to the shared one), published to the
    # public role, with items, revisions, versions, pins, an editorial review and a release
    await a.collection(SHARED_COLLECTION, {"title": "string", "body": "text", "kind": "string"})
    await a.collection(A_COLLECTION, {"title": "string", A_FIELD: "string", "ref": "uuid"}, versioning=True,
                       editorialWorkflow=True)
    keep("collection", A_COLLECTION)
    keep("field", A_FIELD)
    keep("search", SEARCH)
    relation = await a.relation(type="m2o", collection=A_COLLECTION, field="ref", relatedCollection=SHARED_COLLECTION)
    keep("relation", relation["id"])
    shared = [await a.create(SHARED_COLLECTION, {"title": f"{SECRET} {SEARCH} {i}", "body": SECRET,
                                                "kind": "news"}) for i in range(2)]
    keep("shared_item", shared[0]["id"])
    item = await a.create(A_COLLECTION, {"title": f"{SECRET} {SEARCH}", A_FIELD: f"{SECRET} value",
                                         "ref": shared[0]["id"]})
    item_id = keep("item", item["id"])
    base = f"/items/{A_COLLECTION}/{item_id}"
    await a.ok("patch", base, json={"title": f"{SECRET} {SEARCH} 2"})
    revision = await a.ok("post", f"{base}/revisions", status=201, json={"data": {"title": f"{SECRET} staged"}})
    keep("revision", revision["id"])
    await a.ok("post", f"{base}/versions", status=201, json={"key": f"v{IDENT}", "name": f"{SECRET} version"})
    keep("version", f"v{IDENT}")
    await a.ok("post", f"{base}/pins", status=201, json={"field": "title"})
    # roles, policies, permissions, teams, members, subscriber access
    role = await a.ok("post", "/roles", status=201, json={"name": f"{SECRET} role"})
    keep("role", role["id"])
    policy = await a.ok("post", "/policies", status=201, json={"name": f"{SECRET} policy"})
    keep("policy", policy["id"])
    permission = await a.ok("post", f"/policies/{policy['id']}/permissions", status=201, json={
        "collection": A_COLLECTION, "action": "read", "fields": ["*"]})
    keep("permission", permission["id"])
    await a.ok("post", f"/policies/{policy['id']}/attach", status=201, json={"roleId": role["id"]})
    team = await a.ok("post", "/teams", status=201, json={"name": f"{SECRET} team"})
    keep("team", team["id"])
    user = await a.ok("post", "/users", status=201, json={"email": f"editor-{IDENT}@example.com",
                                                          "password": "editor-password-1", "roleId": role["id"],
                                                          "firstName": SECRET})
    keep("user", user["id"])
    s.identifiers.add(f"editor-{IDENT}@example.com")
    await a.ok("post", "/users/subscriber-access", status=201, json={"collection": A_COLLECTION})
    roles = await a.ok("get", "/roles")
    public = next(r for r in roles if r.get("systemKey") == "public")
    await a.grant([{"collection": A_COLLECTION, "action": "read", "fields": ["*"]}], {"roleId": public["id"]})
    app.kernel.access.invalidate(s.site_a)
    # API keys and sessions
    key = await a.ok("post", "/api-keys", status=201, json={"name": f"{SECRET} key", "roleId": role["id"]})
    keep("api_key", key["id"])
    s.secrets.add(key["key"])
    s.secret_of["api_key"] = key["key"]
    sessions = await a.ok("get", "/me/sessions")
    keep("session", sessions[0]["id"])
    await _seed_a_more(app, a, s)


async def _seed_a_more(app: TestApp, a: Calls, s: Seeded) -> None:
    keep = s.keep
    item_id = s.values["item"]
    # files: an upload (with a folder and tags), a pending presigned key, a transform preset
    upload = await a.ok("put", f"/files/upload/f-{IDENT}.txt", status=201, content=SECRET.encode() * 20,
                        headers={"Content-Type": "text/plain"})
    keep("file", upload["id"])
    keep("file_key", f"f-{IDENT}.txt")
    await a.ok("patch", f"/files/{upload['id']}", json={"title": SECRET, "folder": f"folder-{IDENT}",
                                                         "tags": [SECRET]})
    keep("folder", f"folder-{IDENT}")
    # a folder of the library (/folders), holding the upload
    library = await a.ok("post", "/folders", status=201, json={"name": SECRET})
    keep("folder_id", library["id"])
    await a.ok("patch", f"/files/{upload['id']}", json={"folderId": library["id"]})
    reserved = await a.ok("post", "/files/upload-url", status=201, json={"filename": f"p-{IDENT}.jpg",
                                                                        "contentType": "image/jpeg"})
    keep("pending_key", reserved["key"])
    s.secrets.add(reserved["url"].split("?", 1)[-1])
    preset = await a.ok("post", "/transform-presets", status=201, json={"key": f"t{IDENT}", "name": SECRET,
                                                                         "dsl": "width=8"})
    keep("transform_preset", preset["id"])
    s.identifiers.add(f"t{IDENT}")
    # flows, and a run of one
    flow = await a.ok("post", "/flows", status=201, json={"name": SECRET, "trigger": "manual", "status": "active",
                                                           "graph": {"nodes": [{"id": "n1", "operation": "log",
                                                                                "options": {"message": SECRET}}],
                                                                     "edges": []}})
    keep("flow", flow["id"])
    hook = await a.ok("post", "/flows", status=201, json={"name": f"{SECRET} hook", "trigger": "webhook", "status": "active",
                                                           "triggerOptions": {"token": f"{SECRET}-token-0123456789"},
                                                           "graph": {"nodes": [{"id": "n1", "operation": "log",
                                                                                "options": {"message": SECRET}}],
                                                                     "edges": []}})
    keep("webhook_flow", hook["id"])
    run = await a.ok("post", f"/flows/{flow['id']}/run", status=202, json={"payload": SECRET})
    keep("flow_run", run["runId"])
    # releases with A's item in them
    release = await a.ok("post", "/releases", status=201, json={"name": SECRET, "addItems": [
        {"collection": A_COLLECTION, "itemId": item_id, "targetStatus": "published"}]})
    keep("release", release["id"])
    # change feed: a pull subscription and a webhook one (with its secret)
    pull = await a.ok("post", "/cdc/subscriptions", status=201, json={"name": SECRET, "kind": "pull"})
    keep("cdc_pull", pull["id"])
    hook_sub = await a.ok("post", "/cdc/subscriptions", status=201, json={
        "name": f"{SECRET} hook", "kind": "webhook", "url": f"http://127.0.0.1:{SWEEP_PORT}/{SECRET}",
        "secret": f"{SECRET}-webhook-secret", "collections": [A_COLLECTION]})
    keep("cdc_webhook", hook_sub["id"])
    # settings: presets, a bookmark, translation memory, glossary, a setting, a menu, the site
    preset = await a.ok("post", "/presets", status=201, json={"collection": A_COLLECTION, "search": SECRET})
    keep("preset", preset["id"])
    await a.ok("post", "/presets", status=201, json={"collection": A_COLLECTION, "bookmark": f"{SECRET} b"})
    tm = await a.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "fr",
                                                     "sourceText": f"{SEARCH} hello {SECRET}",
                                                     "targetText": f"{SECRET} bonjour"})
    keep("tm", tm["id"])
    term = await a.ok("post", "/tm/glossary", status=201, json={"sourceLang": "en", "targetLang": "fr",
                                                                "term": f"{SECRET}term", "translation": SECRET})
    keep("glossary", term["id"])
    await a.ok("put", f"/settings/menu.m{IDENT}", json={"value": [{"label": SECRET, "href": "/"}]})
    keep("setting", f"menu.m{IDENT}")
    keep("menu", f"m{IDENT}")
    await a.ok("patch", "/site", json={"name": f"{SECRET} site"})
    await a.ok("patch", "/me/preferences", json={"language": "fr"})
    # dashboards and a panel over A's collection
    dashboard = await a.ok("post", "/dashboards", status=201, json={"name": SECRET, "note": SECRET})
    keep("dashboard", dashboard["id"])
    panel = await a.ok("post", f"/dashboards/{dashboard['id']}/panels", status=201, json={
        "name": SECRET, "type": "metric", "position": {"x": 0, "y": 0, "w": 1, "h": 1},
        "query": {"collection": A_COLLECTION, "aggregate": "count"}})
    keep("panel", panel["id"])
    await _seed_a_rest(app, a, s)


def _push_keys() -> dict[str, str]:
    """A browser's push subscription keys (P-256 point, auth secret), base64url."""
    import base64
    import os

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"p256dh": base64.urlsafe_b64encode(point).rstrip(b"=").decode(),
            "auth": base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()}


async def _seed_a_rest(app: TestApp, a: Calls, s: Seeded) -> None:
    from plugins.realtime import api as realtime

    keep = s.keep
    item_id = s.values["item"]
    # email: a layout, a template using it, a suppression
    layout = await a.ok("post", "/email/layouts", status=201, json={"name": SECRET,
                                                                     "html": f"<p>{SECRET}</p>{{{{content}}}}"})
    keep("email_layout", layout["id"])
    template = await a.ok("post", "/email/templates", status=201, json={
        "key": f"k{IDENT}", "name": SECRET, "subject": SECRET, "html": f"<p>{SECRET}</p>", "layoutId": layout["id"]})
    keep("email_template", template["id"])
    keep("template_key", f"k{IDENT}")
    await a.ok("post", "/email/suppressions", status=201, json={"email": f"sup-{IDENT}@example.com",
                                                                 "reason": "manual"})
    keep("suppression", f"sup-{IDENT}@example.com")
    # -- govern43: a scheduled marketing send (a batch whose subject is A's)
    batch = await a.ok("post", "/email/send", status=202, json={
        "to": [f"news-{IDENT}@example.com"], "category": "marketing", "sendAt": "2099-01-01T00:00:00Z",
        "inline": {"subject": SECRET, "text": SECRET}})
    keep("email_batch", batch["batchId"])
    # realtime: tickets, a push subscription, a notification
    s.secrets.add((await a.ok("post", "/realtime/ticket"))["ticket"])
    s.secrets.add((await a.ok("post", "/realtime/audience-ticket"))["ticket"])
    await a.ok("post", "/push/subscriptions", status=201, json={"endpoint": keep("push_endpoint", f"https://push.example.com/{IDENT}"),
                                                                 "keys": _push_keys()})
    note = await realtime.notify(app.kernel, s.site_a, kind="sweep", title=SECRET, body=SECRET)
    keep("notification", note["id"])
    # privacy: a consent of A's admin; an erasure request
    await a.ok("put", "/me/consents/analytics", json={"granted": True, "source": "banner", "version": SECRET})
    erasure = await a.ok("post", "/admin/erasure", status=201, json={
        "collection": A_COLLECTION, "filter": {"title": {"_eq": f"{SECRET} nobody"}}, "reason": SECRET})
    keep("erasure", erasure["id"])
    # editorial: A's item submitted for review to another admin of A
    reviewer = await new_member(app, s.site_a, "admin", email=f"reviewer-{IDENT}@example.com")
    keep("reviewer", reviewer.id)
    s.identifiers.add(reviewer.email)
    await a.ok("post", f"/editorial/{A_COLLECTION}/{item_id}/submit-review", json={"reviewerId": reviewer.id})
    # agents: a role, a pending goal, a staged change, an intent, a constitution, a promotion, a freeze
    await a.ok("post", "/agent/roles", status=201, json={"name": f"r{IDENT}", "description": SECRET,
                                                          "collections": [A_COLLECTION], "autonomy": "stage"})
    keep("agent_role", f"r{IDENT}")
    goal = await a.ok("post", "/agent/goals", status=201, json={"title": SECRET, "execution": "none"})
    keep("goal", goal["id"])
    staged = await a.ok("post", "/agent/goals", status=201, json={
        "title": SECRET, "execution": "sync", "role": f"r{IDENT}",
        "description": f"update {A_COLLECTION} {item_id} " + json.dumps({"title": f"{SECRET} agent"})})
    keep("staged", staged["steps"][0]["stagingId"])
    vetoed = await a.ok("post", "/agent/goals", status=201, json={
        "title": SECRET, "execution": "sync", "role": f"r{IDENT}",
        "description": f"update {A_COLLECTION} {item_id} " + json.dumps({"title": f"{SECRET} vetoed"})})
    await a.ok("post", f"/agent/staged/{vetoed['steps'][0]['stagingId']}/veto", json={"reason": SECRET})
    keep("incident", (await a.ok("get", "/agent/autonomy"))["incidents"][0]["id"])
    intent = await a.ok("post", "/agent/intents", status=201, json={
        "key": f"i{IDENT}", "title": SECRET, "description": f"count {A_COLLECTION}",
        "trigger": {"type": "schedule", "everySeconds": 600}, "status": "paused"})
    keep("intent", intent["id"])
    constitution = await a.ok("post", "/agent/constitution", status=201, json={"note": SECRET, "rules": []})
    keep("constitution", constitution["id"])
    promotion = await a.ok("post", "/agent/autonomy/promotions", status=201, json={"role": f"r{IDENT}",
                                                                                   "level": "act"})
    keep("promotion", promotion["id"])
    freeze = await a.ok("post", "/agent/kill-switch", status=201, json={"scope": "role", "target": f"r{IDENT}",
                                                                         "reason": SECRET})
    keep("freeze", freeze["id"])
    # ai: a conversation, and an approval waiting on a destructive request
    chat = await a.ok("post", "/ai/chat", json={"message": f"read {A_COLLECTION}"})
    keep("conversation", chat["conversationId"])
    pending = (await a.call("post", "/ai/chat", json={"message": f"delete collection {A_COLLECTION}"})).json()
    keep("ai_approval", pending["data"]["approvalId"])
    # git, store sync, an external token issuer
    git = await a.ok("post", "/integrations/git", status=201, json={
        "provider": "github", "repoFullName": f"acme/{IDENT}", "displayName": SECRET, "authMethod": "pat",
        "token": f"{SECRET}-git-token"})
    keep("git", git["id"])
    pipeline = await a.ok("post", "/store-sync/pipelines", status=201, json={
        "name": SECRET, "target": "rtdb", "collections": [A_COLLECTION],
        "credentials": {"databaseUrl": f"https://{IDENT}.example.com", "secret": f"{SECRET}-rtdb"}})
    keep("pipeline", pipeline["id"])
    issuer = await a.ok("post", "/admin/auth/issuers", status=201, json={
        "issuer": f"https://{IDENT}.example.com", "jwksUri": f"http://127.0.0.1:{SWEEP_PORT}/jwks",
        "audience": SECRET, "algorithms": ["RS256"]})
    keep("issuer", issuer["id"])
    # uploads config and a page view
    await a.ok("put", "/uploads/config", json={"maxBytes": 123457})
    for path in ("/a1", "/a2"):
        resp = await app.client.post(f"{API}/pageviews/{s.site_a}/hit", json={"path": path},
                                     headers={"User-Agent": BROWSER})
        assert resp.status_code == 204, resp.text


async def _seed_b(app: TestApp, b: Calls, site_b: str) -> None:
    """B's own rows, so that B's counts are known: one item of the collection both sites have."""
    await b.collection(SHARED_COLLECTION, {"title": "string", "body": "text", "kind": "string"})
    await b.create(SHARED_COLLECTION, {"title": "b's own", "body": "b", "kind": "news"})


async def _kept_group_counts(app: TestApp, *sites: Calls) -> None:
    """Ask each site's count of the shared collection grouped by ``kind`` once and wait until the
    pairs are registered: on PostgreSQL the later asks read the kept per-value counts
    (docs/decisions/items-group-counts.md), which must be per site too."""
    import asyncio

    from plugins.items.read import group_counts

    for calls in sites:
        await calls.ok("get", f"/items/{SHARED_COLLECTION}", params=GROUPED)
    registry = group_counts.registry(app.kernel)
    if registry is not None:
        await asyncio.gather(*registry.tasks.values())


# -- The sweep ------------------------------------------------------------------------------------

# A path parameter, by the literal segment before it and its name, to the seeded value of A's it
# names (``Seeded.values``), or ``=literal`` for a value that is nobody's object.
A_VALUES: dict[tuple[str, str], str] = {
    ("api-keys", "key_id"): "api_key", ("approvals", "id"): "ai_approval", ("assets", "id"): "file",
    ("ci-runs", "run_id"): "=1", ("collections", "name"): "collection", ("consents", "kind"): "=analytics",
    ("constitution", "id"): "constitution", ("conversations", "id"): "conversation",
    ("dashboards", "id"): "dashboard",
    # A dead letter needs a target that keeps failing: plugin_tests/store_sync/test_dead_letters.py
    # reads another site's real one; here A's pipeline is swept with an id that names no letter.
    ("dead-letters", "letter_id"): "=00000000-0000-7000-8000-000000000000", ("editorial", "collection"): "collection", ("editorial", "id"): "item",
    ("erasure", "request_id"): "erasure",
    # Extensions are installed per instance (instance-admin routes): no site owns one.
    ("extensions", "id"): "=sweep-extension",
    ("fields", "collection"): "collection", ("fields", "field"): "field", ("files", "id"): "file",
    ("flows", "id"): "flow", ("folders", "id"): "folder_id", ("git", "id"): "git", ("glossary", "term_id"): "glossary", ("goals", "id"): "goal",
    ("intents", "id"): "intent", ("issuers", "issuer_id"): "issuer", ("items", "collection"): "collection",
    ("items", "item_id"): "item", ("layouts", "id"): "email_layout", ("media", "key"): "file_key",
    ("menu", "key"): "menu", ("notifications", "notification_id"): "notification",
    ("page", "ref"): "menu", ("panels", "panel_id"): "panel", ("permissions", "permission_id"): "permission",
    ("pins", "field"): "=title", ("pipelines", "id"): "pipeline", ("policies", "policy_id"): "policy",
    ("presets", "preset_id"): "preset", ("promotions", "id"): "promotion", ("pull-requests", "number"): "=1",
    ("relations", "relation_id"): "relation", ("releases", "id"): "release", ("revisions", "revision_id"): "revision",
    ("roles", "name"): "agent_role", ("roles", "role_id"): "role", ("runs", "run_id"): "flow_run",
    ("sessions", "session_id"): "session", ("settings", "key"): "setting", ("sites", "site_id"): "site_a",
    ("staged", "id"): "staged", ("incidents", "id"): "incident", ("subscriber-access", "collection"): "collection",
    ("subscriptions", "id"): "cdc_webhook", ("suppressions", "email"): "suppression", ("teams", "team_id"): "team",
    ("templates", "id"): "email_template", ("batches", "id"): "email_batch", ("tm", "entry_id"): "tm", ("transform-presets", "id"): "transform_preset",
    ("upload", "key"): "file_key", ("users", "user_id"): "user", ("versions", "key"): "version",
    ("webhook", "provider"): "=github", ("webhook", "site_id"): "site_a", ("webhook", "integration_id"): "git",
}

# A body or query field, by name, to the seeded value of A's it names (id-like and foreign-key-like
# fields); the generator fills these even when the schema does not require them.
A_FIELDS: dict[str, str] = {
    "collection": "collection", "relatedCollection": "collection", "field": "field", "roleId": "role",
    "defaultRoleId": "role", "userId": "user", "reviewerId": "reviewer", "teamId": "team", "policyId": "policy",
    "itemId": "item", "item": "item", "revisionId": "revision", "versionKey": "version",
    "conversationId": "conversation", "layoutId": "email_layout", "dashboardId": "dashboard", "fileId": "file",
    "folder": "folder", "folderId": "folder_id", "key": "pending_key", "email": "suppression", "endpoint": "push_endpoint",
    "target": "agent_role", "role": "agent_role", "templateKey": "template_key", "q": "search",
    "search": "search", "flowId": "flow", "releaseId": "release", "parentId": "role",
}
# Bodies the schema alone does not make valid (rules the code checks, open agent bodies), by
# operation: each still names A's objects, so the write is refused for naming them, not for its
# shape. ``v`` is ``Seeded.values``.
BODY_OVERRIDES: dict[str, Any] = {
    "POST /api/v1/admin/auth/issuers": lambda v: {
        "issuer": f"https://{IDENT}.example.com", "jwksUri": f"http://127.0.0.1:{SWEEP_PORT}/jwks",
        "audience": "b", "algorithms": ["RS256"], "defaultRoleId": v["role"]},
    "POST /api/v1/admin/erasure": lambda v: {"collection": v["collection"], "filter": {"id": {"_eq": v["item"]}},
                                             "reason": "b"},
    "POST /api/v1/admin/sar/export": lambda v: {"collection": v["collection"], "filter": {"id": {"_eq": v["item"]}}},
    "POST /api/v1/agent/approvals/{id}/agent-decide": lambda v: {"decision": "approved"},
    "POST /api/v1/agent/autonomy/promotions": lambda v: {"role": v["agent_role"], "level": "act"},
    "POST /api/v1/agent/autonomy/promotions/{id}/decide": lambda v: {"decision": "approved"},
    "POST /api/v1/agent/constitution": lambda v: {"rules": []},
    "POST /api/v1/agent/constitution/compile": lambda v: {"id": v["constitution"]},
    "POST /api/v1/agent/goals": lambda v: {
        "title": "b", "execution": "sync", "role": v["agent_role"],
        "description": f"update {v['collection']} {v['item']} " + json.dumps({"title": "b"})},
    "POST /api/v1/agent/goals/{id}/decompose": lambda v: {"goals": [{"title": "b"}]},
    "POST /api/v1/agent/intents": lambda v: {
        "key": f"i{IDENT}", "title": "b", "description": f"count {v['collection']}", "role": v["agent_role"],
        "trigger": {"type": "schedule", "everySeconds": 600}, "status": "paused"},
    "POST /api/v1/agent/kill-switch": lambda v: {"scope": "role", "target": v["agent_role"]},
    "POST /api/v1/agent/kill-switch/lift": lambda v: {"id": v["freeze"]},
    "POST /api/v1/agent/roles": lambda v: {"name": v["agent_role"], "collections": [v["collection"]],
                                           "autonomy": "stage"},
    "POST /api/v1/ai/chat": lambda v: {"message": f"read {v['collection']}", "conversationId": v["conversation"]},
    "POST /api/v1/cdc/subscriptions/{id}/replay": lambda v: {"cursor": "0"},
    "POST /api/v1/email/layouts": lambda v: {"name": "b", "html": "{{content}}"},
    "PATCH /api/v1/email/layouts/{id}": lambda v: {"html": "{{content}}"},
    "POST /api/v1/email/send": lambda v: {"to": [v["suppression"]], "templateKey": v["template_key"]},
    "POST /api/v1/email/templates": lambda v: {"key": v["template_key"], "name": "b", "subject": "b", "text": "b",
                                               "layoutId": v["email_layout"]},
    "POST /api/v1/graphql": lambda v: {"query": GRAPHQL_QUERY % v["shared_item"]},
    "POST /api/v1/files/upload-url": lambda v: {"filename": v["file_key"], "contentType": "text/plain"},
    "POST /api/v1/integrations/git": lambda v: {"provider": "github", "repoFullName": f"acme/{IDENT}",
                                                "displayName": "b", "authMethod": "pat", "token": "b-token"},
    "POST /api/v1/presets": lambda v: {"collection": v["collection"], "roleId": v["role"]},
    "POST /api/v1/push/subscriptions": lambda v: {"endpoint": v["push_endpoint"], "keys": _push_keys()},
    "POST /api/v1/relations": lambda v: {"type": "m2o", "collection": v["collection"], "field": "ref",
                                         "relatedCollection": SHARED_COLLECTION},
    "POST /api/v1/store-sync/pipelines": lambda v: {
        "name": "b", "target": "rtdb", "collections": [v["collection"]],
        "credentials": {"databaseUrl": f"https://{IDENT}.example.com", "secret": "b"}},
    "POST /api/v1/tm": lambda v: {"sourceLang": "en", "targetLang": "fr", "sourceText": "b", "targetText": "b"},
    "POST /api/v1/tm/glossary": lambda v: {"sourceLang": "en", "targetLang": "fr", "term": "b", "translation": "b"},
    "POST /api/v1/tm/lookup": lambda v: {"query": f"{SEARCH} hello", "sourceLang": "en", "targetLang": "fr",
                                         "threshold": 0},
    "POST /api/v1/tm/translate": lambda v: {"text": f"{SEARCH} hello", "from": "en", "to": "fr"},
    "POST /api/v1/transform-presets": lambda v: {"key": f"t{IDENT}", "name": "b", "dsl": "width=8"},
}
GRAPHQL_QUERY = '{ articles { id title } articles_by_id(id: "%s") { id title } }'
# Lists of ids (``keys``, ``ids``, a bare array) name the object the path's first segment is about.
RESOURCE_OF_PATH = {"roles": "role", "policies": "policy", "teams": "team", "items": "item", "users": "user"}


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in doc["paths"].items() for method, op in item.items()
            if method in METHODS]


def label(method: str, path: str) -> str:
    return f"{method.upper()} {path}"


def _segments(path: str) -> list[tuple[str | None, str]]:
    """Each path parameter with the literal segment before it."""
    found, literal = [], None
    for part in path.split("/"):
        if part.startswith("{"):
            found.append((literal, part[1:-1]))
        elif part:
            literal = part
    return found


def _value(seeded: Seeded, name: str) -> str:
    return name[1:] if name.startswith("=") else seeded.values[name]


def concrete_path(path: str, seeded: Seeded) -> str:
    from urllib.parse import quote

    for literal, param in _segments(path):
        value = _value(seeded, A_VALUES[(literal or "", param)])
        path = path.replace("{" + param + "}", quote(value, safe=""), 1)
    return path


def names_a_object(path: str, seeded: Seeded) -> bool:
    """The path names one of A's objects by the id the server gave it. A name (a collection, a
    file key, a setting key, an email) is not one: B may have its own of that name, made earlier in
    the sweep, and write it; that A's of the same name is untouched is the snapshot's to prove."""
    return any(_is_server_id(_value(seeded, A_VALUES[(literal or "", param)])) for literal, param in _segments(path))


class Bodies:
    """A minimal body an operation's request schema accepts, its id-like fields naming A's objects."""

    def __init__(self, doc: dict[str, Any], seeded: Seeded) -> None:
        self.doc = doc
        self.seeded = seeded

    def resolve(self, schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and "$ref" in schema:
            schema = self.doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
        return schema if isinstance(schema, dict) else {}

    def a_value(self, name: str | None) -> str | None:
        key = A_FIELDS.get(name or "")
        return self.seeded.values.get(key) if key else None

    def make(self, schema: Any, name: str | None, resource: str | None, depth: int = 0) -> Any:
        schema = self.resolve(schema)
        if depth > 6:
            return None
        for combinator in ("oneOf", "anyOf"):
            if combinator in schema:
                return self.make(schema[combinator][0], name, resource, depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return next((v for v in schema["enum"] if v is not None), None)
        kind = schema.get("type", "object" if "properties" in schema else None)
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        if kind == "object":
            props = schema.get("properties", {})
            body = {}
            for prop, sub in props.items():
                if prop in schema.get("required", []) or (prop in A_FIELDS and self.a_value(prop) is not None) \
                        or (prop in ("keys", "ids") and resource):
                    body[prop] = self.make(sub, prop, resource, depth + 1)
            return body
        if kind == "array":
            if name in ("keys", "ids") or name is None and resource:
                return [self.seeded.values[RESOURCE_OF_PATH[resource]]] if resource in RESOURCE_OF_PATH else []
            count = max(1, schema.get("minItems", 0)) if name in A_FIELDS or schema.get("minItems") else 0
            return [self.make(schema.get("items", {}), name, resource, depth + 1) for _ in range(count)]
        if kind == "string":
            mine = self.a_value(name)
            if mine is not None:
                return mine
            if schema.get("format") == "date-time":
                return "2099-01-01T00:00:00Z"
            if schema.get("format") in ("email", "idn-email") or name in ("to", "cc", "replyTo"):
                return self.seeded.values["suppression"]
            if schema.get("format") == "uri" or name in ("url", "jwksUri", "discoveryUrl"):
                return f"http://127.0.0.1:{SWEEP_PORT}/sweep"
            if name == "id":
                return self.seeded.values.get(RESOURCE_OF_PATH.get(resource or "", ""), self.seeded.values["item"])
            return "x" * max(1, schema.get("minLength", 1))
        if kind in ("integer", "number"):
            return schema.get("minimum", 1)
        if kind == "boolean":
            return False
        return None

    def for_operation(self, method: str, path: str, op: dict[str, Any]) -> dict[str, Any]:
        """httpx keyword arguments: json, content or files, and params."""
        resource = path.removeprefix(f"{API}/").split("/", 1)[0]
        kw: dict[str, Any] = {}
        query = {p["name"]: self.make(p.get("schema", {}), p["name"], resource)
                 for p in op.get("parameters", []) if p["in"] == "query"
                 and (p.get("required") or self.a_value(p["name"]) is not None)}
        if query:
            kw["params"] = query
        content = (op.get("requestBody") or {}).get("content", {})
        override = BODY_OVERRIDES.get(label(method, path))
        if override is not None:
            kw["json"] = override(self.seeded.values)
        elif "application/json" in content:
            kw["json"] = self.make(content["application/json"].get("schema", {}), None, resource)
        elif "multipart/form-data" in content:
            kw["files"] = {"bundle": ("bundle.zip", b"PK\x05\x06" + b"\x00" * 18, "application/zip")}
            kw["data"] = {"signature": "x"}
        elif "application/octet-stream" in content:  # a raw upload: any bytes, under any MIME type
            kw["content"] = b"sweep bytes"
            kw["headers"] = {"Content-Type": "text/plain"}
        return kw


# POST operations that only read: a 2xx naming A's id in the body is fine when nothing of A's is
# in the answer (the scan) — GraphQL answers 200 with a per-field NOT_FOUND.
READS_BY_POST = {f"POST {API}/graphql"}

# Operations run last for each principal: they end the caller's own sessions.
LAST = ["DELETE /api/v1/me/sessions"]
ORDER = {"get": 0, "post": 1, "put": 1, "patch": 1, "delete": 2}
WRITES = {"post", "put", "patch", "delete"}


@dataclass
class Answer:
    principal: str
    label: str
    url: str
    status: int
    problem: str = ""


class Sweeper:
    def __init__(self, sw: Sweep) -> None:
        self.sw = sw
        self.bodies = Bodies(sw.doc, sw.seeded)
        self.echoed: set[str] = set()  # A's names B itself stored in B by a 2xx write
        self.answers: list[Answer] = []

    def ordered(self) -> list[tuple[str, str, dict[str, Any]]]:
        ops = [o for o in _operations(self.sw.doc) if label(o[0], o[1]) not in NOT_SITE_SCOPED]
        return sorted(ops, key=lambda o: (label(o[0], o[1]) in LAST, ORDER[o[0]], o[1]))

    def forbidden(self, request_text: str) -> set[str]:
        s = self.sw.seeded
        named = {v for v in s.identifiers if v not in request_text and v not in self.echoed}
        return {SECRET, *s.secrets, *named} - {""}

    async def call(self, principal: str, calls: Calls, method: str, path: str, op: dict[str, Any]) -> Answer:
        url = concrete_path(path, self.sw.seeded)
        kw = self.bodies.for_operation(method, path, op)
        request_text = url + json.dumps(kw.get("params", {})) + json.dumps(kw.get("json"))
        resp = await calls.call(method, url.removeprefix(API), **kw)
        answer = Answer(principal, label(method, path), url, resp.status_code)
        problems = []
        text = resp.text
        if resp.status_code >= 500:
            problems.append(f"server error {resp.status_code}")
        leaked = sorted(m for m in self.forbidden(request_text) if m in text)
        if leaked:
            problems.append(f"answer holds A's {leaked}")
        ok = 200 <= resp.status_code < 300
        if ok and method in WRITES and names_a_object(path, self.sw.seeded):
            problems.append("a write on A's object answered 2xx")
        if ok and method in WRITES and answer.label not in READS_BY_POST:
            carried = {v for v in self.sw.seeded.identifiers if v in request_text}
            server_ids = carried & {v for k, v in self.sw.seeded.values.items() if _is_server_id(v)}
            if server_ids and not names_a_object(path, self.sw.seeded):
                problems.append(f"a write naming A's {sorted(server_ids)} in its body answered 2xx")
            self.echoed |= carried
        if ok and resp.headers.get("content-type", "").startswith("application/json"):
            problems.extend(_count_problems(resp.json()))
        if problems:
            answer.problem = "; ".join(problems) + f" :: {text[:300]}"
        self.answers.append(answer)
        return answer

    async def run(self, principal: str, calls: Calls, skip: set[str] = frozenset()) -> None:
        for method, path, op in self.ordered():
            if label(method, path) not in skip:
                await self.call(principal, calls, method, path, op)


def _is_server_id(value: str) -> bool:
    return bool(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", value))


def _count_problems(body: Any) -> list[str]:
    """A list whose ``meta.total`` counts more rows than B could own: B's lists are short (B has
    a handful of rows of anything), so a total above the rows answered counts someone else's."""
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        return []
    meta = body.get("meta") or {}
    total = meta.get("total", meta.get("total_count", meta.get("filter_count")))
    if isinstance(total, int) and len(body["data"]) < 25 and total > len(body["data"]) and not meta.get("offset"):
        return [f"meta counts {total} rows, {len(body['data'])} answered"]
    return []


async def snapshot(sw: Sweep) -> dict[str, tuple[int, Any]]:
    """Every GET operation as A's admin, with A's ids: what A has."""
    seen = {}
    for method, path, _op in _operations(sw.doc):
        if method != "get" or label(method, path) in NOT_SITE_SCOPED or label(method, path) in NOT_SNAPSHOT:
            continue
        resp = await sw.a.call("get", concrete_path(path, sw.seeded).removeprefix(API))
        try:
            body = resp.json()
        except ValueError:
            body = resp.text
        seen[label(method, path)] = (resp.status_code, _without(body, VOLATILE.get(label(method, path), ())))
    return seen


async def test_every_path_parameter_has_a_value_of_as(sweep: Sweep) -> None:
    """A route added later with a new path parameter fails here until A_VALUES names (and the
    seed makes) the object of A's it takes; and the allowlists name only real operations."""
    everything = {label(m, p) for m, p, _ in _operations(sweep.doc)}
    assert set(NOT_SITE_SCOPED) <= everything, set(NOT_SITE_SCOPED) - everything
    assert READS_BY_POST | set(BODY_OVERRIDES) | set(VOLATILE) | NOT_SNAPSHOT | set(LAST) <= everything
    missing = sorted({f"{p}: {(lit, param)}" for m, p, _ in _operations(sweep.doc)
                      if label(m, p) not in NOT_SITE_SCOPED for lit, param in _segments(p)
                      if (lit or "", param) not in A_VALUES})
    assert not missing, f"add these path parameters to A_VALUES (and seed A's object): {missing}"
    unseeded = sorted(v for v in A_VALUES.values() if not v.startswith("=") and v not in sweep.seeded.values)
    assert not unseeded


# GET operations that are not in A's snapshot: reading them changes A.
NOT_SNAPSHOT = {
    # A's own export writes an audit record (data_exported); what it holds is read through
    # /me/sessions, /me/consents and /me/preferences.
    "GET /api/v1/me/data-export",
}

# Values of A's answers that move with the clock, not with A's data.
VOLATILE = {
    "GET /api/v1/config/export": ("exportedAt",),
    "GET /api/v1/me/data-export": ("generatedAt",),
    "GET /api/v1/retention": ("before",),  # now minus each horizon
    # A subscription's lag: the age of its oldest pending event grows while the sweep runs; its
    # cursor is a position in the instance's one event log, which the delivery worker moves past
    # events of other sites (B's writes) that the subscription never sees.
    "GET /api/v1/cdc/subscriptions": ("oldestAgeSeconds", "cursor"),
    "GET /api/v1/cdc/subscriptions/{id}": ("oldestAgeSeconds", "cursor"),
}


def _without(body: Any, keys: tuple[str, ...]) -> Any:
    if isinstance(body, dict):
        return {k: _without(v, keys) for k, v in body.items() if k not in keys}
    if isinstance(body, list):
        return [_without(v, keys) for v in body]
    return body


def _diff(before: Any, after: Any, where: str = "") -> list[str]:
    """Where two JSON documents differ (paths of the differing leaves)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [d for k in sorted(set(before) | set(after), key=str)
                for d in _diff(before.get(k, "<missing>"), after.get(k, "<missing>"), f"{where}.{k}")]
    if isinstance(before, list | tuple) and isinstance(after, list | tuple) and len(before) == len(after):
        return [d for i, (x, y) in enumerate(zip(before, after, strict=True)) for d in _diff(x, y, f"{where}[{i}]")]
    return [] if before == after else [f"{where}: {json.dumps(before)[:150]} -> {json.dumps(after)[:150]}"]


async def test_site_b_sees_changes_and_counts_nothing_of_site_a(sweep: Sweep) -> None:
    sweeper = Sweeper(sweep)
    before = await snapshot(sweep)
    # What A has is what the sweep must leave alone: the snapshot really holds A's objects.
    assert before[f"GET {API}/items/{{collection}}/{{item_id}}"][0] == 200
    assert SECRET in json.dumps(before[f"GET {API}/dashboards/{{id}}"])
    await sweeper.run("B's admin", sweep.b_admin)
    await sweeper.run("B's subscriber", sweep.b_member)
    # The instance admin passes every permission check, so only the site filter keeps A out: it
    # reads everything, and writes what names A's objects or names in the path. Its other writes
    # (creates naming A's ids in the body) meet the same site checks as B's admin's, swept above.
    # Instance-admin operations are instance-wide by definition, so not swept as it.
    skipped = {label(m, p) for m, p, op in _operations(sweep.doc)
               if op.get("x-svc-auth") == "instance-admin" or (m != "get" and not _segments(p))}
    # The sessions routes are site-admin routes (docs/accounts.md, Routes): swept as the instance
    # admin too, A's session under B's header must be 404.
    await sweeper.run("the instance admin in B", sweep.b_instance, skip=skipped)
    after = await snapshot(sweep)

    problems = [f"{a.principal}: {a.label} ({a.url}) answered {a.status}: {a.problem}"
                for a in sweeper.answers if a.problem]
    assert not problems, "\n".join(problems)
    changed = {k: _diff(before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"A changed under B's sweep: {json.dumps(changed, indent=1)[:4000]}"

    # Every operation of the document was swept, or is named not site-scoped (no rot).
    swept = {a.label for a in sweeper.answers if a.principal == "B's admin"}
    everything = {label(m, p) for m, p, _ in _operations(sweep.doc)}
    assert swept == everything - set(NOT_SITE_SCOPED), f"never swept: {everything - set(NOT_SITE_SCOPED) - swept}"
    # Not vacuous: B's admin was served (its session lived to the end), and its writes ran.
    by_admin = [a for a in sweeper.answers if a.principal == "B's admin"]
    assert [a.label for a in by_admin if a.status == 401] == [
        f"POST {API}/admin/encryption/envelope",  # the password (B's admin's) is wrong: 401 by contract
        f"POST {API}/integrations/git/webhook/{{provider}}/{{site_id}}/{{integration_id}}"]  # unsigned
    assert len([a for a in by_admin if 200 <= a.status < 300 and a.label.startswith("GET")]) >= 60
    assert len([a for a in by_admin if a.status == 201]) >= 20

    await _counts_are_bs_own(sweep)


async def _counts_are_bs_own(sw: Sweep) -> None:
    """B's counts of the collection both sites have are B's one row; A's are A's two."""
    # The sweep ended with B's admin's DELETE /me/sessions, which ends its access tokens too: it
    # signs in again.
    site_b = sw.b_admin.headers["X-Svc-Site"]
    login = await sw.app.client.post(f"{API}/auth/login", headers={"X-Svc-Site": site_b},
                                     json={"email": sw.b_admin_email, "password": MEMBER_PASSWORD})
    assert login.status_code == 200, login.text
    b = Calls(sw.app.client, {"Authorization": f"Bearer {login.json()['data']['token']}", "X-Svc-Site": site_b})
    a = sw.a
    listed = await b.list(SHARED_COLLECTION)
    assert ([i["title"] for i in listed["data"]], listed["meta"]["total"]) == (["b's own"], 1)
    assert (await b.list(SHARED_COLLECTION, **{"aggregate[count]": "*"}))["data"] == [{"count": 1}]
    assert (await a.list(SHARED_COLLECTION, **{"aggregate[count]": "*"}))["data"] == [{"count": 2}]
    assert (await b.list(SHARED_COLLECTION, **GROUPED))["data"] == [{"kind": "news", "count": 1}]
    assert (await a.list(SHARED_COLLECTION, **GROUPED))["data"] == [{"kind": "news", "count": 2}]
    found = await b.ok("get", "/search", full=True, params={"q": SEARCH})
    assert found["data"] == [] and found["meta"]["total"] == 0
    assert len(await a.ok("get", "/search", params={"q": SEARCH})) == 3
    graph = (await b.ok("post", "/graphql", full=True, json={"query": GRAPHQL_QUERY % sw.seeded.values["shared_item"]}))
    assert [i["title"] for i in graph["data"]["articles"]] == ["b's own"] and graph["data"]["articles_by_id"] is None
    dashboard = await b.ok("post", "/dashboards", status=201, json={"name": "b counts"})
    preview = await b.ok("post", f"/dashboards/{dashboard['id']}/panels/preview", full=True,
                         json={"collection": SHARED_COLLECTION, "aggregate": "count"})
    assert (preview["data"], preview["meta"]["rowCount"]) == ([{"value": 1}], 1)
    # A's credentials are bound to A: under B's site header they are refused.
    for credential, message in ((sw.seeded.secret_of["api_key"], "The API key is not valid"),
                                (sw.seeded.secret_of["a_admin_token"], "The access token belongs to another site")):
        refused = await Calls(b.client, {"Authorization": f"Bearer {credential}", "X-Svc-Site": sw.seeded.site_b}).err(
            "get", f"/items/{SHARED_COLLECTION}", 401, "UNAUTHENTICATED")
        assert refused["message"] == message


async def test_the_sweep_can_fail(sweep: Sweep) -> None:
    """The checks catch what they look for: A's own admin, run through them, is "leaking" (A's
    values in its answers) and "changing A's object" (a 2xx write naming it)."""
    sweeper = Sweeper(sweep)
    ops = {label(m, p): (m, p, op) for m, p, op in _operations(sweep.doc)}
    read = await sweeper.call("A's admin", sweep.a, *ops[f"GET {API}/items/{{collection}}/{{item_id}}"])
    assert read.status == 200 and "answer holds A's" in read.problem and SECRET in read.problem
    listed = await sweeper.call("A's admin", sweep.a, *ops[f"GET {API}/dashboards"])
    assert "answer holds A's" in listed.problem
    write = await sweeper.call("A's admin", sweep.a, *ops[f"POST {API}/dashboards/{{id}}/panels/{{panel_id}}/data"])
    assert write.status == 200 and "a write on A's object answered 2xx" in write.problem
    assert _count_problems({"data": [{"id": "b"}], "meta": {"total": 3}}) == ["meta counts 3 rows, 1 answered"]
    assert _diff({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == [".a[1].b: 2 -> 3"]
