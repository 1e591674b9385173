// -- people: the site admin's screens for people and access (docs/studio.md, "People and access"),
// under #/s/<site>/people/<screen>. This module: the navigator's links, the dispatcher, and the
// users (GET /users, POST /users/invite, PATCH /users/:id, GET /users/:id/sessions,
// DELETE /sessions/:id, POST /users/:id/impersonate). Roles, teams and API keys are in
// people_roles.js, policies and their rules in people_policies.js, effective access and the audit
// log in people_access.js. Members without admin rights get no link, and each screen refuses them.

import { call, data, session } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { field, section, when } from "./me.js";
import { choose, loadRoles, screen, scroll } from "./people_common.js";
import { renderAccess, renderAudit } from "./people_access.js";
import { renderPolicies, renderPolicy } from "./people_policies.js";
import { renderKeys, renderRoles, renderTeams } from "./people_roles.js";
import { go, siteHash } from "./router.js";

export const SCREENS = ["users", "roles", "policies", "teams", "keys", "access", "audit"];
const STATUSES = ["active", "invited", "suspended", "unverified"];
const USERS_PAGE = 50; // -- studio42

/** The navigator's links to these screens (site admins only), keyed "people:<screen>". */
export function peopleLinks(site, links) {
  const items = SCREENS.map((screen) => {
    const link = h("a", { href: siteHash(site, "people", screen) }, t(`people.${screen}`));
    links.set(`people:${screen}`, link);
    return h("li", {}, link);
  });
  return [h("h2", {}, t("people.navHeading")), h("ul", { class: "admin-nav" }, items)];
}

export async function renderPeople(shell, parts, query, { restart }) {
  const [what = "users", id] = parts;
  if (!shell.ctx.permissions.admin || session.acting) {
    document.title = `${t("people.navHeading")} · ${shell.title}`;
    return replace(shell.main, h("h1", {}, t("people.navHeading")), h("p", { role: "alert", class: "error" }, t("people.adminsOnly")));
  }
  if (what === "users") return id ? renderUser(shell, id, restart, query.get("done") || "") : renderUsers(shell, query);
  if (what === "roles") return renderRoles(shell);
  if (what === "policies") return id ? renderPolicy(shell, id) : renderPolicies(shell);
  if (what === "teams") return renderTeams(shell);
  if (what === "keys") return renderKeys(shell);
  if (what === "access") return renderAccess(shell, query);
  if (what === "audit") return renderAudit(shell, query);
  return replace(shell.main, h("p", { role: "alert", class: "error" }, t("error.notFound")));
}

async function renderUsers(shell, query) {
  const s = screen(shell, t("people.users"));
  const site = shell.site;
  // -- studio42: pages of USERS_PAGE members (the search and the status narrow them)
  const pageNo = Math.max(1, parseInt(query.get("page") || "1", 10) || 1);
  const [roles, { body: usersPage }] = await Promise.all([loadRoles(site), call("GET", "/users", { site, params: {
    limit: USERS_PAGE, offset: (pageNo - 1) * USERS_PAGE, status: query.get("status") || "", search: query.get("search") || "" } })]);
  const users = usersPage.data;
  const pages = Math.max(1, Math.ceil(((usersPage.meta && usersPage.meta.total) || 0) / USERS_PAGE));
  const pageLink = (n, key) => {
    const next = new URLSearchParams(query);
    next.delete("invited");
    next.set("page", String(n));
    return h("a", { href: siteHash(site, "people", "users") + "?" + next }, t(key));
  };
  const pager = pages > 1 ? h("nav", { class: "pager", "aria-label": t("people.usersPages") },
    pageNo > 1 ? pageLink(pageNo - 1, "list.previous") : null,
    h("p", {}, t("people.usersPageOf", { page: pageNo, pages, total: usersPage.meta.total })),
    pageNo < pages ? pageLink(pageNo + 1, "list.next") : null) : null;
  // -- end studio42
  const roleOptions = roles.roles.map((r) => [r.id, r.name]);
  // The invitation: the API mails an accept link (503 EMAIL_NOT_CONFIGURED without SMTP).
  const email = field(t("people.email"), h("input", { type: "email", required: true, autocomplete: "off" }));
  const role = choose(t("people.role"), roleOptions, { value: (roles.roles.find((r) => r.systemKey === "subscriber") || {}).id });
  const invite = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    email.clear();
    try {
      await data("POST", "/users/invite", { site, body: { email: email.control.value.trim(), roleId: role.control.value } });
      go(siteHash(site, "people", "users") + `?invited=${encodeURIComponent(email.control.value.trim())}`);
    } catch (err) {
      if (err.errors && err.errors.some((e) => e.path && e.path[0] === "email")) email.fail(err.message);
      else s.fail(err);
    }
  } }, email.wrap, role.wrap, h("button", { type: "submit" }, t("people.invite")));
  // The list's filters live in the URL.
  const search = field(t("people.search"), h("input", { type: "search", value: query.get("search") || "" }));
  const status = choose(t("people.status"), STATUSES.map((v) => [v, t(`people.status.${v}`)]), { value: query.get("status") || "", empty: t("people.any") });
  const filters = h("form", { class: "inline", role: "search", "aria-label": t("people.filterUsers"), onsubmit: (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (search.control.value.trim()) next.set("search", search.control.value.trim());
    if (status.control.value) next.set("status", status.control.value);
    go(siteHash(site, "people", "users") + "?" + next);
  } }, search.wrap, status.wrap, h("button", { type: "submit" }, t("people.filter")));
  const table = h("table", {}, h("caption", {}, t("people.usersCaption")),
    h("thead", {}, h("tr", {}, ["people.email", "people.name", "people.role", "people.status"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, users.map((u) => h("tr", {},
      h("td", {}, h("a", { href: siteHash(site, "people", "users", u.id) }, u.email)),
      h("td", {}, [u.firstName, u.lastName].filter(Boolean).join(" ")),
      h("td", {}, roles.name(u.roleId)), h("td", {}, t(`people.status.${u.status}`))))));
  if (query.get("invited")) s.say(t("people.invited", { email: query.get("invited") }));
  s.add(filters, scroll(table), pager, section(t("people.inviteHeading"), invite));
}

async function renderUser(shell, id, restart, message = "") {
  const site = shell.site;
  const [user, roles] = await Promise.all([data("GET", `/users/${encodeURIComponent(id)}`, { site }), loadRoles(site)]);
  const s = screen(shell, user.email);
  s.say(message);
  const self = session.user && session.user.id === user.id;
  const patch = async (body, message) => {
    try {
      await data("PATCH", `/users/${encodeURIComponent(id)}`, { site, body });
      await renderUser(shell, id, restart, message);
    } catch (err) { s.fail(err); }
  };
  const role = choose(t("people.role"), roles.roles.map((r) => [r.id, r.name]), { value: user.roleId });
  const roleForm = h("form", { class: "inline", onsubmit: (event) => {
    event.preventDefault();
    patch({ roleId: role.control.value }, t("people.roleSaved"));
  } }, role.wrap, h("button", { type: "submit", disabled: self }, t("people.saveRole")));
  const suspended = user.status === "suspended";
  const account = h("div", { class: "tools" },
    h("p", {}, t("people.statusIs", { status: t(`people.status.${user.status}`) })),
    self ? null : h("button", { type: "button", onclick: () => patch({ status: suspended ? "active" : "suspended" },
      suspended ? t("people.reactivated") : t("people.suspendedDone")) }, suspended ? t("people.reactivate") : t("people.suspend")),
    // Impersonation where the API allows it: another, active member (never oneself).
    !self && user.status === "active" ? h("button", { type: "button", onclick: async () => {
      try {
        const answer = await data("POST", `/users/${encodeURIComponent(id)}/impersonate`, { site });
        session.token = answer.token;
        session.acting = { email: answer.user.email, admin: session.user && session.user.email };
        session.user = answer.user;
        restart(siteHash(site));
      } catch (err) { s.fail(err); }
    } }, t("people.impersonate")) : null);
  const sessionsBox = h("div");
  const loadSessions = async () => {
    const rows = await data("GET", `/users/${encodeURIComponent(id)}/sessions`, { site });
    const end = async (list) => {
      try {
        for (const one of list) await call("DELETE", `/sessions/${encodeURIComponent(one.id)}`, { site });
        await loadSessions();
        s.say(t("people.sessionsEnded", { count: list.length }));
      } catch (err) { s.fail(err); }
    };
    replace(sessionsBox, rows.length ? h("table", {}, h("caption", {}, t("people.sessionsCaption", { email: user.email })),
      h("thead", {}, h("tr", {}, ["me.device", "me.started", "me.lastUsed", "me.action"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, rows.map((one) => h("tr", {},
        h("td", {}, one.userAgent || t("me.unknownDevice")), h("td", {}, when(one.createdAt)), h("td", {}, when(one.lastUsedAt)),
        h("td", {}, h("button", { type: "button", "aria-label": t("me.endSessionOf", { when: when(one.createdAt) }), onclick: () => end([one]) }, t("me.endSession"))))))) :
      h("p", {}, t("people.noSessions")),
    rows.length ? h("button", { type: "button", onclick: () => end(rows) }, t("people.endAll")) : null);
  };
  s.add(section(t("people.account"), account, roleForm), section(t("me.sessions"), sessionsBox),
    h("p", {}, h("a", { href: siteHash(site, "people", "access") + `?user=${encodeURIComponent(id)}` }, t("people.accessOf", { email: user.email })),
      " · ", h("a", { href: siteHash(site, "people", "audit") + `?actorId=${encodeURIComponent(id)}` }, t("people.auditOf", { email: user.email }))));
  await loadSessions();
}

/** The header's notice while acting as someone else, with the way back. */
export function actingBanner(restart) {
  if (!session.acting) return null;
  return h("p", { class: "acting", role: "status" }, t("people.acting", { email: session.acting.email }), " ",
    h("button", { type: "button", onclick: () => stopActing(restart) }, t("people.stopActing")));
}

async function stopActing(restart) {
  // The admin's own session comes back from its refresh cookie (the impersonation has none).
  session.token = null;
  session.acting = null;
  restart(location.hash);
}
