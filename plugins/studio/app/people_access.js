// -- people: "effective access" for one member and one collection, and the audit log.
// Effective access asks POST /permissions/check { collection, action, userId, explain: true } for
// every action the admin's GET /permissions/me names, and shows per action whether it is allowed,
// the fields, the rows, and which rule allows it (with its policy and how that policy reaches the
// member) or why it is denied. The audit log pages through GET /audit with its filters in the URL.

import { call, data } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { field, when } from "./me.js";
import { choose, loadRoles, memberNames, readAll, screen, scroll } from "./people_common.js"; // -- studio42: readAll; -- studio42c: memberNames
import { memberPicker } from "./people_pick.js"; // -- studio42c
import { actionsOf, attachedTo, loadTeams } from "./people_policies.js";
import { chainOf } from "./people_roles.js";
import { go, siteHash } from "./router.js";

export async function renderAccess(shell, query) {
  const site = shell.site;
  const [roles, teams, policies] = await Promise.all([loadRoles(site), loadTeams(site), readAll(site, "/policies")]);
  // -- studio42c: the member is searched with the member picker; only the names shown are read
  const users = memberNames(site);
  await users.load([query.get("user") || ""]);
  const s = screen(shell, t("people.access"));
  const user = memberPicker(site, t("people.member"), query.get("user") ? [[query.get("user"), users.name(query.get("user"))]] : [], { single: true });
  user.start();
  const collection = choose(t("people.collection"), shell.ctx.collections.map((c) => [c.name, c.name]), { value: query.get("collection") || "", empty: t("people.pick") });
  const form = h("form", { class: "inline", onsubmit: (event) => {
    event.preventDefault();
    const [chosen = ""] = user.read();
    if (!chosen) return s.say(t("people.pickFirst"));
    go(siteHash(site, "people", "access") + "?" + new URLSearchParams({ user: chosen, collection: collection.control.value }));
  } }, user.el, collection.wrap, h("button", { type: "submit" }, t("people.check")));
  s.add(h("p", {}, t("people.accessHint")), form);
  const userId = query.get("user");
  const name = query.get("collection");
  if (!userId || !name) return;
  const byPolicy = new Map(policies.map((p) => [p.id, p]));
  const answers = await Promise.all(actionsOf(shell.ctx).map((action) => data("POST", "/permissions/check", {
    site, body: { collection: name, action, userId, explain: true } }).then((answer) => ({ action, ...answer }))));
  const first = answers[0].explain;
  const reach = (policyId) => {
    const policy = byPolicy.get(policyId);
    if (!policy) return policyId;
    // Only the attachments that reach this member: its role chain, its teams, itself.
    const mine = { ...policy, attachments: (policy.attachments || []).filter((a) => (a.roleId && first.roles.includes(a.roleId))
      || (a.teamId && first.teams.includes(a.teamId)) || a.userId === userId) };
    return t("people.policyVia", { name: policy.name, via: attachedTo(mine, roles, users, teams).join(", ") });
  };
  const because = (answer) => {
    if (answer.explain.admin) return h("p", {}, t("people.byAdmin"));
    if (!answer.allowed) return h("p", {}, t("people.byDefault"));
    return h("ul", {}, answer.explain.rules.map((rule) => h("li", {},
      t("people.byRule", { action: rule.action, collection: rule.collection, fields: rule.fields.join(", ") }),
      rule.conditions ? [" ", h("code", {}, JSON.stringify(rule.conditions))] : "", " — ", reach(rule.policyId))));
  };
  s.add(h("section", { class: "me-section", "aria-label": t("people.accessResult") },
    h("p", {}, t("people.roleChain", { chain: chainOf(roles, first.roleId) || t("people.none") })),
    h("p", {}, t("people.inTeams", { teams: first.teams.map((id) => (teams.get(id) || { name: id }).name).join(", ") || t("people.none") })),
    scroll(h("table", {}, h("caption", {}, t("people.accessCaption", { email: users.name(userId), collection: name })),
      h("thead", {}, h("tr", {}, ["people.action", "people.decision", "people.fields", "people.rows", "people.because"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, answers.map((a) => h("tr", {}, h("th", { scope: "row" }, a.action),
        h("td", {}, a.allowed ? t("people.allowed") : t("people.denied")),
        h("td", {}, a.allowed ? a.fields.join(", ") : ""),
        h("td", {}, !a.allowed ? "" : a.conditions ? h("code", {}, JSON.stringify(a.conditions)) : t("people.everyRow")),
        h("td", {}, because(a)))))))));
}

const AUDIT_FILTERS = ["action", "actorId", "targetType", "targetId", "since", "until"];
const PAGE = 50;

export async function renderAudit(shell, query) {
  const site = shell.site;
  const page = Math.max(1, Number(query.get("page")) || 1);
  const params = { limit: PAGE, page };
  for (const key of AUDIT_FILTERS) if (query.get(key)) params[key] = query.get(key);
  // -- audit: the actor filter offers everyone in the trail (GET /audit/actors), the instance
  // admin too, who is a member of no site and so absent from GET /users
  const actors = await data("GET", "/audit/actors", { site }).catch(() => []);
  // -- studio42c: no list of every member: the actors are named by the trail, the members a page
  // of records targets are read one by one, and the actor filter is the member picker (offering
  // the instance admins and the actors without an email too)
  const users = memberNames(site, actors.filter((a) => a.email));
  const actorName = (id) => users.name(id);
  const s = screen(shell, t("people.audit"));
  let found;
  try {
    found = await call("GET", "/audit", { site, params });
  } catch (err) {
    s.fail(err);
    found = { body: { data: [], meta: { total: 0 } } };
  }
  const rows = found.body.data;
  await users.load(rows.flatMap((e) => [e.actor.id, e.actor.impersonatorId, e.target.type === "user" ? e.target.id : null]));
  const total = (found.body.meta && found.body.meta.total) || 0;
  const fields = {
    action: field(t("people.auditAction"), h("input", { type: "text", value: query.get("action") || "" }), t("people.auditActionHint")),
    targetType: field(t("people.targetType"), h("input", { type: "text", value: query.get("targetType") || "" })),
    targetId: field(t("people.targetId"), h("input", { type: "text", value: query.get("targetId") || "" })),
    since: field(t("people.since"), h("input", { type: "date", value: (query.get("since") || "").slice(0, 10) })),
    until: field(t("people.until"), h("input", { type: "date", value: (query.get("until") || "").slice(0, 10) })),
  };
  const chosenActor = query.get("actorId");
  if (chosenActor) await users.load([chosenActor]);
  const actor = memberPicker(site, t("people.actor"), chosenActor ? [[chosenActor, actorName(chosenActor)]] : [], { single: true,
    extra: actors.filter((a) => a.instanceAdmin || !a.email).map((a) => [a.id, a.email || a.id]) });
  actor.start();
  const to = (next) => siteHash(site, "people", "audit") + "?" + next;
  const form = h("form", { class: "audit-filters", role: "search", "aria-label": t("people.auditFilters"), onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, f] of Object.entries(fields)) if (f.control.value.trim()) next.set(key, f.control.value.trim());
    if (actor.read().length) next.set("actorId", actor.read()[0]);
    go(to(next));
  } }, Object.values(fields).map((f) => f.wrap), actor.el, h("div", { class: "tools" }, h("button", { type: "submit" }, t("people.filter")),
    h("a", { href: to(new URLSearchParams()) }, t("people.clearFilters"))));
  const target = (e) => [e.target.type, e.target.type === "user" ? users.name(e.target.id) : e.target.id].filter(Boolean).join(" ");
  const last = Math.max(1, Math.ceil(total / PAGE));
  const pageLink = (n, label) => {
    const next = new URLSearchParams(query);
    next.set("page", String(n));
    return h("a", { href: to(next) }, label);
  };
  s.add(form, h("p", { role: "status" }, t("people.auditCount", { count: total })),
    scroll(h("table", {}, h("caption", {}, t("people.auditCaption")),
      h("thead", {}, h("tr", {}, ["people.when", "people.auditAction", "people.actor", "people.target", "people.details"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, rows.map((e) => h("tr", {}, h("td", {}, when(e.createdAt)), h("td", {}, e.action),
        h("td", {}, actorName(e.actor.id), e.actor.impersonatorId ? ` (${t("people.actingFor", { email: actorName(e.actor.impersonatorId) })})` : ""),
        h("td", {}, target(e)), h("td", {}, Object.keys(e.details).length ? h("code", {}, JSON.stringify(e.details)) : "")))))),
    h("nav", { class: "pager", "aria-label": t("people.auditPages") },
      page > 1 ? pageLink(page - 1, t("people.previous")) : null, h("p", {}, t("people.pageOf", { page, last })),
      page < last ? pageLink(page + 1, t("people.next")) : null));
}
