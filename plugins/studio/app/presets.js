// View presets and bookmarks of a list (the /presets resource, docs/settings-and-site.md):
// a preset without a `bookmark` name is a scope's default view of the collection, one with a name
// is a bookmark. Scopes: the user (userId), a role (roleId, admins only) and everyone (neither).
// The effective default (GET /presets/effective: the user's, then the role chain's, then the
// global one) opens when a list's URL holds no view of its own. A view is stored as
//   { layout: "tabular", layoutQuery: { tabular: { fields, sort, limit } }, filter, search }.

import { ApiError, call, data, session } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { optional } from "./site.js";

/** What the list needs of the presets: the effective default, every preset the user sees, and
 * (for an admin) the site's roles, to offer the role scope. */
export async function readPresets(shell, collection) {
  const site = shell.site;
  const admin = Boolean(shell.ctx.permissions.admin);
  const [effective, all, roles] = await Promise.all([
    optional(data("GET", "/presets/effective", { site, params: { collection } }), null),
    optional(data("GET", "/presets", { site, params: { collection } }), []),
    admin ? optional(data("GET", "/roles", { site, params: { limit: 200 } }), []) : Promise.resolve([]),
  ]);
  const me = session.user && session.user.id;
  // An admin sees every user's presets; the studio offers it its own and the shared ones.
  const mine = all.filter((p) => !p.userId || p.userId === me);
  return { effective, all: mine, bookmarks: mine.filter((p) => p.bookmark), roles, admin, me };
}

/** The list's view state a preset holds. */
export function stateOf(preset) {
  const tabular = (preset.layoutQuery && preset.layoutQuery.tabular) || {};
  const sort = Array.isArray(tabular.sort) ? tabular.sort.join(",") : typeof tabular.sort === "string" ? tabular.sort : "";
  return {
    fields: Array.isArray(tabular.fields) ? tabular.fields.map(String) : null,
    sort,
    limit: Number.isInteger(tabular.limit) ? tabular.limit : null,
    filter: preset.filter || null,
    search: preset.search || "",
  };
}

function bodyOf(state) {
  const tabular = { fields: state.fields, sort: state.sort ? state.sort.split(",") : [], limit: state.limit };
  return { layout: "tabular", layoutQuery: { tabular }, filter: state.filter || null, search: state.search || null };
}

function scopeText(preset, presets) {
  if (preset.userId) return t("presets.scopeUser");
  if (preset.roleId) {
    const role = presets.roles.find((r) => r.id === preset.roleId);
    return role ? t("presets.scopeRoleNamed", { role: role.name }) : t("presets.scopeRole");
  }
  return t("presets.scopeGlobal");
}

/** The owner columns of a scope choice: "user", "global" or "role:<id>". */
function owner(choice, presets) {
  if (choice === "user") return { userId: presets.me };
  if (choice.startsWith("role:")) return { roleId: choice.slice(5) };
  return {};
}

/**
 * The presets panel: the bookmarks (each a link to its view, with its scope, and a delete
 * button where the user may delete it), and a form saving the current view as a bookmark or
 * as a scope's default. `hashOf(state)` is a view's URL; `done(message)` redraws the list.
 */
export function presetsPanel({ shell, collection, presets, state, hashOf, done }) {
  const site = shell.site;
  const status = h("p", { role: "status" });
  const problem = h("p", { role: "alert", class: "error" });
  const fail = (err) => {
    if (!(err instanceof ApiError)) throw err;
    replace(status);
    replace(problem, t("presets.failed", { message: err.message }));
  };
  const deletable = (p) => presets.admin || (p.userId && p.userId === presets.me);
  const list = presets.bookmarks.length
    ? h("ul", { class: "bookmarks" }, presets.bookmarks.map((p) => h("li", {},
      h("a", { href: hashOf({ ...stateOf(p), page: 1 }) }, p.bookmark),
      h("span", { class: "muted" }, ` (${scopeText(p, presets)}) `),
      deletable(p) ? h("button", { type: "button", class: "quiet", onclick: async () => {
        try {
          await call("DELETE", `/presets/${encodeURIComponent(p.id)}`, { site });
          done(t("presets.deleted", { name: p.bookmark }));
        } catch (err) { fail(err); }
      } }, t("presets.delete", { name: p.bookmark })) : null)))
    : h("p", { class: "muted" }, t("presets.noBookmarks"));

  const ids = { name: uid("bookmark"), scope: uid("scope") };
  const name = h("input", { id: ids.name, type: "text", maxlength: "200", autocomplete: "off" });
  const choices = [h("option", { value: "user" }, t("presets.forMe"))];
  if (presets.admin) {
    for (const role of presets.roles) choices.push(h("option", { value: `role:${role.id}` }, t("presets.forRole", { role: role.name })));
    choices.push(h("option", { value: "global" }, t("presets.forEveryone")));
  }
  const scope = h("select", { id: ids.scope }, choices);
  const save = async (asDefault) => {
    replace(problem);
    const bookmark = name.value.trim();
    if (!asDefault && !bookmark) {
      replace(problem, t("presets.needName"));
      return name.focus();
    }
    const who = owner(scope.value, presets);
    const body = { ...bodyOf(state), ...(asDefault ? {} : { bookmark }) };
    replace(status, t("presets.saving"));
    try {
      // A scope has one default per collection: change it when it exists.
      const existing = asDefault && presets.all.find((p) => !p.bookmark && (p.userId || null) === (who.userId || null)
        && (p.roleId || null) === (who.roleId || null));
      if (existing) await call("PATCH", `/presets/${encodeURIComponent(existing.id)}`, { site, body });
      else await call("POST", "/presets", { site, body: { collection, ...who, ...body } });
      done(asDefault ? t("presets.savedDefault") : t("presets.savedBookmark", { name: bookmark }));
    } catch (err) { fail(err); }
  };
  return h("section", { class: "presets", "aria-labelledby": "presets-heading" },
    h("h2", { id: "presets-heading" }, t("presets.heading")),
    list,
    h("form", { class: "save-view", onsubmit: (e) => { e.preventDefault(); save(false); } },
      h("label", { for: ids.name }, t("presets.name")), name,
      h("label", { for: ids.scope }, t("presets.scope")), scope,
      h("button", { type: "submit" }, t("presets.saveBookmark")),
      h("button", { type: "button", onclick: () => save(true) }, t("presets.saveDefault"))),
    problem, status);
}
