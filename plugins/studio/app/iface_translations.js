// Translations side by side: a collection's `translations` field (type json, holding
// { "<language>": { "<field>": value } }, docs/decisions/items-translations.md) is a table with
// a row per translatable field (the text fields), the item's own value first and then a column
// per language, each cell an input. Languages are added and removed with buttons; the API's
// errors at ["translations", language, field] show at that cell.

import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { choicesOf } from "./iface_choice.js";
import { isFileField } from "./iface_file.js";

const TEXT_TYPES = new Set(["string", "text", "slug"]);
const CODE = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3}$/;

export function isTranslations(field) {
  return field.field === "translations" && field.type === "json";
}

export function translationsControl(field, value, env) {
  // Text the editor types: not a choice, a file or a relation's ids.
  const fields = env.fields.filter((f) => TEXT_TYPES.has(f.type) && f.field !== field.field && !choicesOf(f)
    && !isFileField(f) && !(env.relations && env.relations[f.field]));
  const stored = value && typeof value === "object" && !Array.isArray(value) ? value : {};
  let languages = Object.keys(stored);
  const cells = new Map(); // "code\u0000field" -> { input, error }
  const keep = (code) => {
    const out = {};
    for (const f of fields) {
      const cell = cells.get(`${code}\u0000${f.field}`);
      const v = cell ? cell.input.value : stored[code] && stored[code][f.field];
      if (v !== undefined && v !== null && v !== "") out[f.field] = v;
    }
    return out;
  };
  const snapshot = () => Object.fromEntries(languages.map((code) => [code, keep(code)]));
  const status = h("p", { class: "sr-only", role: "status" });
  const table = h("table", { class: "translations" });
  const draw = (values) => {
    cells.clear();
    replace(table,
      h("caption", {}, t("editor.translationsCaption")),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("editor.translationField")), h("th", { scope: "col" }, t("editor.original")),
        languages.map((code) => h("th", { scope: "col", lang: code }, code, env.readOnly ? null : h("button", { type: "button", class: "chip",
          "aria-label": t("editor.removeLanguage", { code }), onclick: () => {
            const now = snapshot();
            languages = languages.filter((c) => c !== code);
            replace(status, t("editor.languageRemoved", { code }));
            draw(now);
            adder.focus();
          } }, "×"))))),
      h("tbody", {}, fields.map((f) => h("tr", {},
        h("th", { scope: "row" }, f.field),
        h("td", { class: "muted" }, String((env.item && env.item[f.field]) ?? "")),
        languages.map((code) => {
          const id = uid("tr");
          const errorId = uid("error");
          const input = h(f.type === "text" ? "textarea" : "input", { id, type: f.type === "text" ? null : "text", rows: f.type === "text" ? "2" : null, lang: code, readonly: env.readOnly, "aria-describedby": errorId,
            "aria-label": t("editor.translationOf", { field: f.field, code }), value: (values[code] && values[code][f.field]) ?? "" });
          const error = h("p", { id: errorId, class: "field-error" });
          cells.set(`${code}\u0000${f.field}`, { input, error });
          return h("td", {}, input, error);
        })))));
  };
  const adderId = uid("language");
  const adder = h("input", { id: adderId, type: "text", size: "8", readonly: env.readOnly, autocomplete: "off" });
  const addError = h("p", { class: "field-error", role: "alert" });
  const add = () => {
    const code = adder.value.trim();
    replace(addError);
    if (!CODE.test(code)) return replace(addError, t("editor.badLanguage", { code }));
    if (languages.includes(code)) return replace(addError, t("editor.languageThere", { code }));
    const now = snapshot();
    languages = [...languages, code];
    adder.value = "";
    draw(now);
    replace(status, t("editor.languageAdded", { code }));
    const first = cells.get(`${code}\u0000${fields[0] && fields[0].field}`);
    if (first) first.input.focus();
  };
  adder.addEventListener("keydown", (event) => { if (event.key === "Enter") { event.preventDefault(); add(); } });
  draw(stored);
  const tools = env.readOnly ? null : h("div", { class: "tools" }, h("label", { for: adderId }, t("editor.addLanguageCode")), adder,
    h("button", { type: "button", class: "secondary", onclick: add }, t("editor.addLanguage")), addError);
  return { group: true, el: h("div", { class: "scroll" }, table, tools, status), input: adder,
    read: () => (languages.length || value ? snapshot() : null),
    clear: () => { for (const c of cells.values()) { replace(c.error); c.input.removeAttribute("aria-invalid"); } },
    mark: (rest, message) => {
      const cell = cells.get(`${rest[0]}\u0000${rest[1]}`);
      if (!cell) return null;
      replace(cell.error, message);
      cell.input.setAttribute("aria-invalid", "true");
      return cell.input;
    } };
}
