// The item editor: an input for each basic field type, honouring the field's options (choices);
// fields the user may not read are absent and those it may not change are read-only
// (GET /permissions/me); the API's validation errors show at the field their `path` names;
// the Save button and Ctrl/Cmd+S save (POST to create, PATCH of the changed fields to update).

import { ApiError, call } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { fieldsOf } from "./list.js";
import { go, siteHash } from "./router.js";
import { editorGuard } from "./editor_live.js"; // live (slive)

const NUMBER_STEPS = { integer: "1", bigInteger: "1", float: "any", decimal: "any" };
const INPUT_TYPES = { date: "date", dateTime: "datetime-local", timestamp: "datetime-local", time: "time" };
const MULTILINE = new Set(["text", "code"]);

function choicesOf(field) {
  const choices = field.options && field.options.choices;
  if (!Array.isArray(choices)) return null;
  return choices.map((c) => (c !== null && typeof c === "object" ? { value: c.value, text: c.text ?? c.value } : { value: c, text: c }));
}

// One field's control: { el (the input), read(): the value to send, or throws a message }.
function control(field, value, id, readOnly, describedBy) {
  const type = field.type;
  const common = { id, name: field.field, "aria-describedby": describedBy, "aria-required": field.required ? "true" : null };
  const choices = choicesOf(field);
  if (type === "boolean") {
    const el = h("input", { ...common, type: "checkbox", checked: value === true, disabled: readOnly });
    return { el, read: () => el.checked };
  }
  if (choices) {
    const el = h("select", { ...common, disabled: readOnly },
      field.required ? null : h("option", { value: "" }, t("editor.none")),
      choices.map((c, i) => h("option", { value: String(i), selected: c.value === value }, String(c.text))));
    return { el, read: () => (el.value === "" ? null : choices[Number(el.value)].value) };
  }
  if (type === "json" || MULTILINE.has(type) || (field.interface || "").includes("markdown") || field.interface === "input-multiline") {
    const text = type === "json" ? (value === null || value === undefined ? "" : JSON.stringify(value, null, 2)) : value ?? "";
    const el = h("textarea", { ...common, rows: type === "json" ? "6" : "5", readonly: readOnly, value: text });
    if (type !== "json") return { el, read: () => el.value };
    return { el, read: () => {
      if (el.value.trim() === "") return null;
      try { return JSON.parse(el.value); } catch { throw new Error(t("editor.invalidJson")); }
    } };
  }
  if (type in NUMBER_STEPS) {
    const el = h("input", { ...common, type: "number", step: NUMBER_STEPS[type], readonly: readOnly, value: value ?? "" });
    const whole = NUMBER_STEPS[type] === "1";
    return { el, read: () => {
      if (el.value === "") return null;
      if (type === "decimal" || type === "bigInteger") return el.value; // exact, as text
      return whole ? parseInt(el.value, 10) : Number(el.value);
    } };
  }
  if (type in INPUT_TYPES) {
    const local = INPUT_TYPES[type] === "datetime-local";
    const shown = value && local ? String(value).replace(/Z$|[+-]\d\d:\d\d$/, "").slice(0, 19) : value ?? "";
    const el = h("input", { ...common, type: INPUT_TYPES[type], step: local || type === "time" ? "1" : null, readonly: readOnly, value: shown });
    return { el, read: () => {
      if (el.value === "") return null;
      return type === "timestamp" ? new Date(el.value).toISOString() : el.value;
    } };
  }
  const el = h("input", { ...common, type: "text", readonly: readOnly, value: value === null || value === undefined ? "" : String(value) });
  return { el, read: () => el.value };
}

function same(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export async function renderEditor(shell, collection, id) {
  const site = shell.site;
  const creating = id === null;
  const action = creating ? "create" : "update";
  const meta = shell.ctx.collections.find((c) => c.name === collection);
  const label = meta ? meta.displayName || meta.meta.displayName || collection : collection;
  const readable = await fieldsOf(shell, collection);
  const got = creating ? null : await call("GET", `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`, { site });
  const item = creating ? {} : got.body.data;
  // -- live (slive): the ETag for If-Match, other sessions' changes, work kept across a session end
  const guard = editorGuard({ shell, collection, id, etag: got && got.etag });
  const kept = guard.restore() || {};
  // -- end live
  // Creating shows the fields the user may set; editing, the ones it may read.
  const fields = creating ? readable.filter((f) => shell.ctx.may(collection, "create", f.field)) : readable;
  const status = h("p", { role: "status", class: "status" });
  const formError = h("div", { role: "alert", class: "error" });
  const controls = new Map();
  const rows = fields.map((field) => {
    const inputId = uid("field");
    const errorId = uid("error");
    const readOnly = !shell.ctx.may(collection, action, field.field);
    const c = control(field, field.field in kept ? kept[field.field] : item[field.field], inputId, readOnly, errorId); // live (slive): kept
    const error = h("p", { id: errorId, class: "field-error" });
    controls.set(field.field, { ...c, error, readOnly });
    return h("div", { class: field.type === "boolean" ? "field check" : "field" },
      h("label", { for: inputId }, field.field, readOnly ? h("span", { class: "muted" }, ` (${t("editor.readOnly")})`) : null,
        field.required ? h("span", { "aria-hidden": "true" }, " *") : null),
      c.el, error);
  });

  const clearErrors = () => {
    replace(formError);
    for (const c of controls.values()) {
      replace(c.error);
      c.el.removeAttribute("aria-invalid");
    }
  };
  const showAt = (name, message) => {
    const c = controls.get(name);
    if (!c) return false;
    replace(c.error, message);
    c.el.setAttribute("aria-invalid", "true");
    return true;
  };

  // -- live (slive): what the session's end keeps (the values that differ from the item's)
  guard.watch(() => {
    const changed = {};
    for (const [name, c] of controls) {
      if (c.readOnly) continue;
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
  const save = async () => {
    if (saving) return;
    clearErrors();
    const body = {};
    let bad = null;
    for (const [name, c] of controls) {
      if (c.readOnly) continue;
      try {
        const value = c.read();
        if (creating ? value !== null && value !== "" : !same(value, item[name])) body[name] = value;
      } catch (err) {
        showAt(name, err.message);
        bad = bad || c.el;
      }
    }
    if (bad) return bad.focus();
    saving = true;
    replace(status, t("editor.saving"));
    try {
      const path = `/items/${encodeURIComponent(collection)}` + (creating ? "" : `/${encodeURIComponent(id)}`);
      const answer = await call(creating ? "POST" : "PATCH", path, { site, body, headers: guard.ifMatch() }); // live (slive): If-Match
      guard.saved(answer.etag); // live (slive)
      const saved = answer.body.data;
      replace(status, t("editor.saved"));
      const next = shell.ctx.config.defaultSaveAction || "stay";
      if (next === "return") return go(siteHash(site, "c", collection));
      if (next.startsWith("create")) return go(siteHash(site, "c", collection, "new"));
      if (creating) return go(siteHash(site, "c", collection, "i", String(saved.id)));
      Object.assign(item, saved);
    } catch (err) {
      replace(status);
      if (guard.conflict(err, save)) return; // live (slive): 412, shown with a choice
      if (!(err instanceof ApiError)) throw err;
      let first = null;
      const rest = [];
      for (const e of err.errors) {
        const name = Array.isArray(e.path) && e.path.length ? String(e.path[0]) : null;
        if (name && showAt(name, e.message)) first = first || controls.get(name).el;
        else rest.push(e.message);
      }
      if (rest.length || !first) replace(formError, t("editor.failed", { message: rest.join(" ") || err.message }));
      if (first) first.focus();
    } finally {
      saving = false;
    }
  };

  const form = h("form", { class: "editor", "aria-labelledby": "editor-heading", novalidate: true,
    onsubmit: (event) => { event.preventDefault(); save(); } },
    rows,
    guard.el, // live (slive)
    formError,
    h("div", { class: "tools" },
      h("button", { type: "submit" }, t("editor.save")),
      h("a", { href: siteHash(site, "c", collection) }, t("editor.back"))),
    h("p", { class: "muted" }, t("editor.shortcut")),
    status);
  const onKey = (event) => {
    if (!form.isConnected) return document.removeEventListener("keydown", onKey);
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
      event.preventDefault();
      save();
    }
  };
  document.addEventListener("keydown", onKey);
  const heading = creating ? t("editor.new", { collection: label }) : t("editor.edit", { collection: label, id });
  document.title = `${heading} · ${shell.title}`;
  replace(shell.main, h("h1", { id: "editor-heading" }, heading), form);
}
