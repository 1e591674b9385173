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

// -- studio42c: names of the members a screen shows, read one by one (GET /users/:id, a few at a
// time) instead of every member of the site; a member since removed is named by its id.
const NAME_BATCH = 8;

/** `names.load(ids)` reads the members not known yet; `names.name(id)` names one. */
export function memberNames(site, known = []) {
  const byId = new Map(known.map((u) => [u.id, u.email]));
  if (session.user) byId.set(session.user.id, session.user.email);
  const load = async (ids) => {
    const missing = [...new Set(ids.filter((id) => id && !byId.has(id)))];
    for (let i = 0; i < missing.length; i += NAME_BATCH) {
      await Promise.all(missing.slice(i, i + NAME_BATCH).map((id) => call("GET", `/users/${encodeURIComponent(id)}`, { site })
        .then(({ body }) => byId.set(id, body.data.email), () => byId.set(id, id))));
    }
  };
  const name = (id) => (id ? byId.get(id) || id : t("people.nobody"));
  return { load, name };
}
// -- end studio42c

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
