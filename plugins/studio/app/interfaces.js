// Which interface edits a field: relations first (m2o, m2m, o2m aliases), then the
// `translations` convention, file fields, and the field's type with its `interface` and options.
// One module per interface family: iface_text, iface_number, iface_choice, iface_datetime,
// iface_json, iface_relation, iface_file, iface_translations.

import { booleanControl, choiceControl, choicesOf, isTags, tagsControl } from "./iface_choice.js";
import { DATE_TYPES, dateControl } from "./iface_datetime.js";
import { fileControl, isFileField } from "./iface_file.js";
import { geometryControl, jsonControl } from "./iface_json.js";
import { NUMBER_TYPES, numberControl } from "./iface_number.js";
import { m2aControl, m2mControl, m2oControl, o2mControl } from "./iface_relation.js"; // -- studio42c: m2a
import { textControl } from "./iface_text.js";
import { h, replace, uid } from "./dom.js"; // -- studio42b
import { t } from "./i18n.js"; // -- studio42b
import { displayOptions, interfaceOptions } from "./iface_own.js"; // -- studio42b
import { isTranslations, translationsControl } from "./iface_translations.js";

/** The relations of `collection` by field: { field: { type, relatedCollection, foreignKey? } },
 * and its o2m aliases (an o2m's field, or an m2o's `relatedField` on the other side). */
export function relationsOf(relations, collection) {
  const byField = {};
  const aliases = [];
  for (const r of relations) {
    if (r.collection === collection && (r.type === "m2o" || r.type === "m2m")) {
      byField[r.field] = { type: r.type, relatedCollection: r.relatedCollection };
    } else if (r.collection === collection && r.type === "m2a") { // -- studio42c
      byField[r.field] = { type: "m2a", relatedCollection: null, relatedCollections: r.relatedCollections || [] };
    } else if (r.collection === collection && r.type === "o2m" && r.relatedField) {
      aliases.push({ field: r.field, type: "o2m", relatedCollection: r.relatedCollection, foreignKey: r.relatedField });
    }
    if (r.type === "m2o" && r.relatedCollection === collection && r.relatedField) {
      aliases.push({ field: r.relatedField, type: "o2m", relatedCollection: r.collection, foreignKey: r.field });
    }
  }
  return { byField, aliases };
}

async function pickControl(field, value, env) {
  // A relation to a collection the user may not read is edited as the plain ids it stores.
  if (env.relation && env.relation.type === "m2a") return m2aControl(field, value, env); // -- studio42c
  const relation = env.relation && env.shell.ctx.may(env.relation.relatedCollection, "read") ? env.relation : null;
  if (relation && relation.type === "o2m") return o2mControl(field, env);
  if (relation && relation.type === "m2o") return m2oControl(field, value, env);
  if (relation && relation.type === "m2m") return m2mControl(field, value, env);
  if (isTranslations(field)) return translationsControl(field, value, env);
  if (isFileField(field)) return fileControl(field, value, env);
  if (field.type === "boolean") return booleanControl(field, value, env);
  if (choicesOf(field)) return choiceControl(field, value, env);
  if (isTags(field)) return tagsControl(field, value, env);
  if (field.type === "geometry") return geometryControl(field, value, env);
  if (field.type === "json") return jsonControl(field, value, env);
  if (NUMBER_TYPES.has(field.type)) return numberControl(field, value, env);
  if (DATE_TYPES.has(field.type)) return dateControl(field, value, env);
  return textControl(field, value, env);
}

// -- studio42: the options each interface and display declares, [key, kind, types?] (kind: "text",
// "number", "check", "tristate", "choices" or "select:a,b"; types: the field types it applies to,
// all when absent). They are kept in the field's options as `interfaceOptions` and
// `displayOptions` (free-form keys to the API); the schema screen generates their form from these
// lists (schema_field.js), the editor and the list honour them (studio42b: the longer lists).
const TEXTUAL = ["string", "text", "uuid", "hash", "slug", "code", "color"];
const NUMBERS = [...NUMBER_TYPES];
const LINE = [["placeholder", "text"], ["trim", "check", TEXTUAL], ["counter", "check", TEXTUAL], ["monospace", "check", TEXTUAL],
  ["min", "number", NUMBERS], ["max", "number", NUMBERS], ["step", "number", NUMBERS]];
const AREA = [["placeholder", "text"], ["rows", "number"], ["trim", "check"], ["counter", "check"], ["monospace", "check"]];
const PICK = [["choices", "choices"], ["allowOther", "check"], ["allowNone", "tristate"]];
const TEMPLATE = [["template", "text"]];
const FILE = [["accept", "text"], ["folder", "text"]];
export const INTERFACE_OPTIONS = {
  input: LINE,
  "input-multiline": AREA,
  textarea: AREA,
  "input-code": [["rows", "number"]],
  markdown: [["placeholder", "text"], ["rows", "number"]],
  "input-rich-text-md": [["placeholder", "text"], ["rows", "number"]],
  "select-dropdown": PICK,
  "select-radio": [["choices", "choices"], ["allowNone", "tristate"]],
  datetime: [["includeSeconds", "tristate"]],
  "select-dropdown-m2o": TEMPLATE,
  "list-m2m": TEMPLATE,
  "list-o2m": TEMPLATE,
  file: FILE,
  files: FILE,
  "file-image": FILE,
  image: FILE,
};
export const DISPLAY_OPTIONS = {
  "formatted-value": [["prefix", "text"], ["suffix", "text"], ["thousands", "check", NUMBERS], ["decimals", "number", NUMBERS]],
  boolean: [["labelOn", "text"], ["labelOff", "text"], ["icons", "check"]],
  datetime: [["format", "select:date,dateTime,time"], ["clock", "select:12,24"], ["relative", "check"]],
};


// A count of the characters typed (of the maximum, when the field has one), read with the input.
function withCounter(control, input) {
  const counter = h("p", { id: uid("count"), class: "muted count" });
  const max = input.maxLength > 0 ? input.maxLength : null;
  const count = () => replace(counter, max ? t("editor.countOf", { n: input.value.length, max }) : t("editor.count", { n: input.value.length }));
  input.addEventListener("input", count);
  count();
  input.setAttribute("aria-describedby", [input.getAttribute("aria-describedby"), counter.id].filter(Boolean).join(" "));
  return { ...control, el: h("div", { class: "counted" }, control.el, counter) };
}

export async function controlFor(field, value, env) {
  let control = await pickControl(field, value, env);
  const own = interfaceOptions(field);
  const input = control && control.input;
  const typed = input && (input.tagName === "TEXTAREA" || (input.tagName === "INPUT" && ["text", "number"].includes(input.type)));
  if (!typed) return control;
  if (typeof own.placeholder === "string") input.placeholder = own.placeholder;
  if (input.tagName === "TEXTAREA" && Number.isInteger(own.rows) && own.rows > 0) input.rows = own.rows;
  if (input.type === "number") {
    for (const key of ["min", "max", "step"]) if (typeof own[key] === "number") input[key] = String(own[key]);
    return control;
  }
  if (own.monospace) input.classList.add("code");
  if (own.trim) {
    const read = control.read;
    control = { ...control, read: () => {
      const got = read();
      return typeof got === "string" ? got.trim() : got;
    } };
  }
  return own.counter ? withCounter(control, input) : control;
}

const DATE_STYLES = { date: { dateStyle: "medium" }, dateTime: { dateStyle: "medium", timeStyle: "short" }, time: { timeStyle: "short" } };
const UNITS = [["year", 31536e6], ["month", 2592e6], ["week", 6048e5], ["day", 864e5], ["hour", 36e5], ["minute", 6e4], ["second", 1e3]];

function relative(date, language) {
  const diff = date.getTime() - Date.now();
  const [unit, size] = UNITS.find(([, ms]) => Math.abs(diff) >= ms) || UNITS[UNITS.length - 1];
  return new Intl.RelativeTimeFormat(language, { numeric: "auto" }).format(Math.round(diff / size), unit);
}

// -- studio42c: a decimal's digits (a bigInteger beyond 2^53, a decimal string) formatted without
// a JS number: the integer part as a BigInt (Intl formats it exactly), the fraction as digits,
// rounded half up in BigInt arithmetic; null when the text is not plain decimal digits.
function exactNumber(own, text, language) {
  const parts = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!parts) return null;
  const [, sign, whole, fraction = ""] = parts;
  const places = Number.isInteger(own.decimals) && own.decimals >= 0 && own.decimals <= 20 ? own.decimals : fraction.length;
  let digits = BigInt(whole + fraction.slice(0, places).padEnd(places, "0"));
  if (fraction.length > places && fraction[places] >= "5") digits += 1n;
  const padded = digits.toString().padStart(places + 1, "0");
  const int = BigInt(places ? padded.slice(0, -places) : padded);
  const format = new Intl.NumberFormat(language, { useGrouping: Boolean(own.thousands) });
  const point = format.formatToParts(1.5).find((p) => p.type === "decimal").value;
  const negative = sign && /[1-9]/.test(padded);
  return `${negative ? "-" : ""}${format.format(int)}${places ? point + padded.slice(-places) : ""}`;
}

function number(own, value, text, language) {
  if (!own.thousands && !Number.isInteger(own.decimals)) return text;
  const exact = exactNumber(own, text, language);
  if (exact !== null) return exact;
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(n)) return text;
  const digits = Number.isInteger(own.decimals) && own.decimals >= 0 && own.decimals <= 20 ? { minimumFractionDigits: own.decimals, maximumFractionDigits: own.decimals } : {};
  return new Intl.NumberFormat(language, { useGrouping: Boolean(own.thousands), ...digits }).format(n);
}

/** A value as the field's display shows it in a list (text). */
export function displayed(field, value, language) {
  if (value === null || value === undefined) return "";
  const own = displayOptions(field);
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  if (field.display === "boolean" && typeof value === "boolean") {
    const label = (value ? own.labelOn : own.labelOff) || text;
    return own.icons ? `${value ? "\u2713" : "\u2717"} ${label}` : label;
  }
  if (field.display === "formatted-value") return `${own.prefix || ""}${number(own, value, text, language)}${own.suffix || ""}`;
  if (field.display === "datetime" && (DATE_STYLES[own.format] || own.relative || own.clock)) {
    const date = new Date(field.type === "time" ? `1970-01-01T${value}` : value);
    if (Number.isNaN(date.getTime())) return text;
    if (own.relative && field.type !== "time") return relative(date, language);
    const style = DATE_STYLES[own.format] || DATE_STYLES[field.type] || DATE_STYLES.dateTime;
    const clock = own.clock ? { hour12: own.clock === "12" } : {};
    return new Intl.DateTimeFormat(language, { ...style, ...clock }).format(date);
  }
  return text;
}
// -- end studio42
