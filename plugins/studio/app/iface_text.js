// Text interfaces: a line of text (string, uuid, hash, slug, color), a text area (text, code,
// `input-multiline`, `textarea`) and markdown with a live preview (`input-rich-text-md`,
// `markdown`), rendered by markdown.js (DOM nodes only, never HTML text). The field's
// `maxLength`, `minLength` and `pattern` options become the input's own attributes.

import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { render } from "./markdown.js";

const MULTILINE = new Set(["input-multiline", "textarea", "input-code", "code"]);

function constraints(field) {
  const o = field.options || {};
  return { maxlength: o.maxLength ?? (field.type === "string" || field.type === "slug" ? 255 : null),
    minlength: o.minLength ?? null, pattern: typeof o.pattern === "string" ? o.pattern : null };
}

export function isMarkdown(field) {
  return /markdown|rich-text-md/.test(field.interface || "");
}

export function isMultiline(field) {
  return field.type === "text" || field.type === "code" || MULTILINE.has(field.interface || "");
}

export function textControl(field, value, env) {
  const shown = value === null || value === undefined ? "" : String(value);
  const attrs = { id: env.id, name: field.field, "aria-describedby": env.describedBy, readonly: env.readOnly,
    "aria-required": field.required ? "true" : null, value: shown, ...constraints(field) };
  if (!isMultiline(field) && !isMarkdown(field)) {
    const el = h("input", { type: "text", spellcheck: field.type === "string" ? null : "false", ...attrs });
    return { el, input: el, read: () => el.value };
  }
  const el = h("textarea", { rows: isMarkdown(field) ? "8" : "5", class: field.type === "code" ? "code" : null, ...attrs });
  if (!isMarkdown(field)) return { el, input: el, read: () => el.value };
  // Markdown: the text area and, on demand, its preview beside it (updated as one types).
  const previewId = uid("preview");
  const preview = h("div", { id: previewId, class: "md-preview", role: "region", "aria-label": t("editor.previewOf", { field: field.field }), hidden: true });
  const toggle = h("button", { type: "button", class: "secondary", "aria-pressed": "false", "aria-controls": previewId,
    onclick: () => {
      const on = toggle.getAttribute("aria-pressed") !== "true";
      toggle.setAttribute("aria-pressed", String(on));
      preview.hidden = !on;
      if (on) replace(preview, render(el.value));
    } }, t("editor.preview", { field: field.field }));
  el.addEventListener("input", () => { if (!preview.hidden) replace(preview, render(el.value)); });
  const wrap = h("div", { class: "md" }, h("div", { class: "md-panes" }, el, preview), h("div", {}, toggle));
  return { el: wrap, input: el, read: () => el.value };
}
