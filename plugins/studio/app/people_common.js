// -- people: what the people screens share (people.js, people_roles.js, people_policies.js,
// people_access.js): the site's roles and members by id, a labelled select, a screen's heading
// with its status line.

import { call, session } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { refusal } from "./media.js";
import { field } from "./me.js";

// -- studio42: every row of a paged list (pages of 200 until the meta's total, or a short page),
// so no screen stops at the first 200 roles, members, teams, policies, keys or rules.
export async function readAll(site, path, params = {}) {
  const rows = [];
  for (;;) {
    const { body } = await call("GET", path, { site, params: { ...params, limit: 200, offset: rows.length } });
    rows.push(...body.data);
    const total = body.meta && body.meta.total;
    if (body.data.length < 200 || (typeof total === "number" && rows.length >= total)) return rows;
  }
}

/** The site's roles (GET /roles), and a name for a role id. */
export async function loadRoles(site) {
  const roles = await readAll(site, "/roles");
  const byId = new Map(roles.map((r) => [r.id, r]));
  return { roles, byId, name: (id) => (byId.has(id) ? byId.get(id).name : id || t("people.none")) };
}

/** The site's members (GET /users, all of them), and a name for a user id. */
export async function loadUsers(site) {
  const users = await readAll(site, "/users");
  const byId = new Map(users.map((u) => [u.id, u]));
  // The signed-in admin by name too (the instance admin is a member of no site).
  const me = session.user && !byId.has(session.user.id) ? session.user : null;
  const name = (id) => (byId.has(id) ? byId.get(id).email : me && id === me.id ? me.email : id || t("people.nobody"));
  return { users, byId, name };
}

/** A <select> of `options` ([value, text]) labelled by a field; `empty` adds a first "" option. */
export function choose(label, options, { value = "", empty = null, name = "" } = {}) {
  const select = h("select", { name },
    empty === null ? null : h("option", { value: "" }, empty),
    options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
  return field(label, select);
}

/** A heading and the status line every screen has; the API's refusals go to `fail`. */
export function screen(shell, title) {
  document.title = `${title} · ${shell.title}`;
  const status = h("p", { role: "status" });
  replace(shell.main, h("h1", {}, title), status);
  return {
    status,
    say: (message) => replace(status, message),
    fail: (err) => replace(status, h("span", { class: "error" }, refusal(err))),
    add: (...children) => shell.main.append(...children),
  };
}

/** A table's scrolling box: focusable, so a keyboard can scroll a wide table too. */
export function scroll(...children) {
  return h("div", { class: "scroll", tabindex: "0", role: "region", "aria-label": t("people.scrollTable") }, ...children);
}
