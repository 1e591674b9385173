// The item editor: an interface per field (interfaces.js picks it from the field's type,
// `interface`, options and relations); fields the user may not read are absent and those it may
// not change are read-only (GET /permissions/me); the API's validation errors show at the field
// their `path` names, nested paths inside the field's interface where it has parts
// (translations); Save follows the user's `saveAction` preference, else the site's
// `defaultSaveAction` (stay, return, create_new), with buttons for the other two; Ctrl/Cmd+S
// saves; leaving with unsaved changes asks first. A singleton opens straight here.

import { ApiError, call, data } from "./api.js";
import { ask, h, replace, uid } from "./dom.js"; // -- schema: ask()
import { t } from "./i18n.js";
import { controlFor, relationsOf } from "./interfaces.js";
import { fieldsOf } from "./list.js";
import { go, leaving, siteHash } from "./router.js";
import { editorGuard } from "./editor_live.js"; // live (slive)

const ACTIONS = ["stay", "return", "create_new"];

export function singletonOf(ctx, collection) {
  const meta = ctx.collections.find((c) => c.name === collection);
  return Boolean(meta && (meta.singleton || (meta.meta && meta.meta.singleton)));
}

function same(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

// An in-page modal question (a <dialog>): resolves true to leave, false to stay (Escape too).
function askToLeave() {
  return ask({ title: t("editor.unsavedTitle"), body: h("p", {}, t("editor.unsavedText")), // -- schema: dom.js's ask()
    choices: [[t("editor.stay"), false], [t("editor.leave"), true, { class: "secondary" }]] });
}

export async function renderEditor(shell, collection, id) {
  const site = shell.site;
  const singleton = singletonOf(shell.ctx, collection);
  const meta = shell.ctx.collections.find((c) => c.name === collection);
  const label = meta ? meta.displayName || meta.meta.displayName || collection : collection;
  const itemPath = `/items/${encodeURIComponent(collection)}` + (id === null ? "" : `/${encodeURIComponent(id)}`);
  const [readable, relations, got] = await Promise.all([
    fieldsOf(shell, collection),
    data("GET", "/relations", { site }).catch(() => []),
    // -- studio42c: exact: a bigInteger beyond 2^53 is read as its digits (a JS number would
    // round it, and saving any other field would write the rounded value back)
    id === null && !singleton ? null : call("GET", itemPath, { site, exact: true }),
  ]);
  const item = (got && got.body.data) || {};
  const creating = singleton ? item.id === null || item.id === undefined : id === null;
  const action = creating ? "create" : "update";
  const { byField, aliases } = relationsOf(relations, collection);
  // -- live (slive): the ETag for If-Match, other sessions' changes, work kept across a session end
  // (a singleton is read and saved without an id, and takes no If-Match)
  const guard = editorGuard({ shell, collection, id: singleton ? null : id, etag: got && !singleton ? got.etag : null });
  const kept = guard.restore() || {};
  // -- end live
  // Creating shows the fields the user may set; editing, the ones it may read.
  let fields = creating ? readable.filter((f) => shell.ctx.may(collection, "create", f.field)) : readable;
  const shownAliases = aliases.filter((a) => shell.ctx.may(collection, "read", a.field) && shell.ctx.may(a.relatedCollection, "read"));
  fields = [...fields, ...shownAliases.map((a) => ({ field: a.field, type: "alias", options: {}, relation: a }))];

  const status = h("p", { role: "status", class: "status" });
  const formError = h("div", { role: "alert", class: "error" });
  const controls = new Map();
  const env0 = { shell, site, collection, item, itemId: creating ? null : item.id ?? id, fields: readable, relations: byField };
  const rows = await Promise.all(fields.map(async (field) => {
    const inputId = uid("field");
    const errorId = uid("error");
    const labelId = uid("label");
    const relation = field.relation || byField[field.field] || null;
    const readOnly = field.relation
      ? !shell.ctx.may(field.relation.relatedCollection, "update", field.relation.foreignKey)
      : !shell.ctx.may(collection, action, field.field);
    const env = { ...env0, id: inputId, describedBy: errorId, readOnly, relation };
    const c = await controlFor(field, field.field in kept ? kept[field.field] : item[field.field], env); // live (slive): kept
    const error = h("p", { id: errorId, class: "field-error" });
    controls.set(field.field, { ...c, error, readOnly, alias: Boolean(field.relation) });
    const marks = readOnly ? h("span", { class: "muted" }, ` (${t("editor.readOnly")})`) : null;
    // The required mark is outside the label, so the field's name is its accessible name.
    const star = field.required ? h("span", { "aria-hidden": "true" }, " *") : null;
    if (c.group) {
      return h("div", { class: "field" }, h("span", {}, h("span", { id: labelId, class: "label" }, field.field, marks), star),
        h("div", { role: c.radiogroup ? "radiogroup" : "group", "aria-labelledby": labelId, "aria-describedby": errorId }, c.el), error);
    }
    return h("div", { class: c.check ? "field check" : "field" },
      h("span", {}, h("label", { for: inputId }, field.field, marks), star), c.el, error);
  }));

  const snapshot = () => {
    const out = {};
    for (const [name, c] of controls) {
      try {
        out[name] = c.read();
      } catch {
        out[name] = { unreadable: Math.random() };
      }
    }
    return JSON.stringify(out);
  };
  let baseline = "";
  const dirty = () => snapshot() !== baseline;

  const clearErrors = () => {
    replace(formError);
    for (const c of controls.values()) {
      replace(c.error);
      if (c.input) c.input.removeAttribute("aria-invalid");
      if (c.clear) c.clear();
    }
  };
  // The message at the field `path` names; inside the field's interface when it has that part.
  const showAt = (path, message) => {
    const c = controls.get(path[0]);
    if (!c) return null;
    const inner = path.length > 1 && c.mark ? c.mark(path.slice(1), message) : null;
    if (inner) return inner;
    replace(c.error, path.length > 1 ? `${path.slice(1).join(".")}: ${message}` : message);
    if (c.input) c.input.setAttribute("aria-invalid", "true");
    return c.input || c.error;
  };

  const preference = shell.ctx.preferences && shell.ctx.preferences.saveAction;
  const chosen = singleton ? "stay" : ACTIONS.includes(preference) ? preference
    : ACTIONS.includes(shell.ctx.config.defaultSaveAction) ? shell.ctx.config.defaultSaveAction : "stay";
  // -- live (slive): what the session's end keeps (the values that differ from the item's)
  guard.watch(() => {
    const changed = {};
    for (const [name, c] of controls) {
      if (c.readOnly || c.alias) continue;
      try {
        const value = c.read();
        if (creating ? value !== null && value !== "" : !same(value, item[name])) changed[name] = value;
      } catch {
        // an unreadable value (bad JSON) is not kept
      }
    }
    return changed;
  });
  // -- end live

  let saving = false;
  const save = async (next = chosen) => {
    if (saving) return;
    clearErrors();
    const body = {};
    let bad = null;
    for (const [name, c] of controls) {
      if (c.readOnly || c.alias) continue;
      try {
        const value = c.read();
        if (creating ? value !== null && value !== "" : !same(value, item[name])) body[name] = value;
      } catch (err) {
        bad = bad || showAt([name], err.message);
      }
    }
    if (bad) return bad.focus();
    saving = true;
    replace(status, t("editor.saving"));
    try {
      const method = singleton ? "PATCH" : creating ? "POST" : "PATCH";
      const answer = await call(method, itemPath, { site, body, headers: guard.ifMatch() }); // live (slive): If-Match
      guard.saved(answer.etag); // live (slive)
      const saved = answer.body.data;
      Object.assign(item, saved);
      try {
        for (const c of controls.values()) if (c.after && !c.readOnly) await c.after(saved);
      } catch (err) {
        // The item is saved; a related item's write (an o2m list) was refused.
        if (!(err instanceof ApiError)) throw err;
        replace(status);
        replace(formError, t("editor.relatedFailed", { message: err.message }));
        return;
      }
      replace(status, t("editor.saved"));
      baseline = snapshot();
      // -- studio41: whoever shows this item's state (the review panel) reads it again
      document.dispatchEvent(new CustomEvent("studio:saved", { detail: { collection, id: String(saved.id) } }));
      if (next === "return") return go(siteHash(site, "c", collection));
      if (next === "create_new") return go(siteHash(site, "c", collection, "new"));
      if (creating && !singleton) return go(siteHash(site, "c", collection, "i", String(saved.id)));
      if (creating) return renderEditor(shell, collection, null);
    } catch (err) {
      replace(status);
      if (guard.conflict(err, save)) return; // live (slive): 412, shown with a choice
      if (!(err instanceof ApiError)) throw err;
      let first = null;
      const rest = [];
      for (const e of err.errors) {
        const path = Array.isArray(e.path) ? e.path.map(String) : [];
        if (path[0] === "body" || path[0] === "data") path.shift();
        const at = path.length ? showAt(path, e.message) : null;
        if (at) first = first || at;
        else rest.push(e.message);
      }
      if (rest.length || !first) replace(formError, t("editor.failed", { message: rest.join(" ") || err.message }));
      if (first) first.focus();
    } finally {
      saving = false;
    }
  };

  const others = singleton ? [] : ACTIONS.filter((a) => a !== chosen);
  const form = h("form", { class: "editor", "aria-labelledby": "editor-heading", novalidate: true,
    onsubmit: (event) => { event.preventDefault(); save(); } },
  rows,
  guard.el, // live (slive)
  formError,
  h("div", { class: "tools" },
    h("button", { type: "submit", "aria-describedby": "save-then" }, t("editor.save")),
    h("span", { id: "save-then", class: "muted" }, t(`editor.then.${chosen}`)),
    others.map((a) => h("button", { type: "button", class: "secondary", onclick: () => save(a) }, t(`editor.saveAnd.${a}`))),
    singleton ? null : h("a", { href: siteHash(site, "c", collection) }, t("editor.back"))),
  h("p", { class: "muted" }, t(saveKeyOf(shell) === "mod+enter" ? "me.shortcutEnter" : "editor.shortcut")), // -- me
  status);
  const onKey = (event) => {
    if (!form.isConnected) return document.removeEventListener("keydown", onKey);
    // -- me: the user's save shortcut (preferences.keybindings.save: mod+s, the default, or mod+enter)
    const key = saveKeyOf(shell) === "mod+enter" ? "enter" : "s";
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === key) {
      event.preventDefault();
      save();
    }
  };
  const onUnload = (event) => {
    if (!form.isConnected) return window.removeEventListener("beforeunload", onUnload);
    if (dirty()) event.preventDefault();
  };
  document.addEventListener("keydown", onKey);
  window.addEventListener("beforeunload", onUnload);
  leaving.ask = async () => !form.isConnected || !dirty() || askToLeave();
  const heading = singleton ? label : creating ? t("editor.new", { collection: label }) : t("editor.edit", { collection: label, id });
  document.title = `${heading} · ${shell.title}`;
  replace(shell.main, h("h1", { id: "editor-heading" }, heading), form);
  baseline = snapshot();
}

// -- me: the user's save shortcut (preferences.keybindings.save): mod+s (the default) or mod+enter
function saveKeyOf(shell) {
  const bindings = shell.ctx.preferences && shell.ctx.preferences.keybindings;
  return (bindings && bindings.save) || "mod+s";
}
