// -- schema: a field's form, for a new field (POST /fields/:collection) or one that exists
// (PATCH /fields/:collection/:field): its type, interface and display, `required`, its position,
// and the options svc enforces (docs/decisions/schema-field-types.md), each shown only for the
// types it applies to; any other option (an interface's or a display's own settings) is JSON.
// A type change of an existing field shows the API's dry run first (schema_risk.js).

import { data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { confirmRisky } from "./schema_risk.js";
import { apiProblem, flash } from "./schema_status.js";
import { DISPLAY_OPTIONS, INTERFACE_OPTIONS } from "./interfaces.js"; // -- studio42

export const FIELD_TYPES = ["string", "text", "integer", "bigInteger", "float", "decimal", "boolean", "dateTime", "date",
  "time", "timestamp", "uuid", "hash", "slug", "code", "color", "json", "csv", "geometry", "files"];
const NUMERIC = ["integer", "bigInteger", "float", "decimal"];
const LENGTH = ["string", "text", "slug", "code"];
const UNINDEXABLE = ["json", "csv", "geometry", "files"];
// The interfaces and displays the studio knows (docs/studio.md); any other name is kept as typed.
const INTERFACES = ["input", "input-multiline", "textarea", "input-code", "input-rich-text-md", "markdown", "toggle", "boolean",
  "select-dropdown", "select-radio", "tags", "file", "files", "file-image", "image", "datetime", "map", "select-dropdown-m2o", "list-m2m", "list-o2m"];
const DISPLAYS = ["raw", "formatted-value", "labels", "boolean", "datetime", "color", "related-values", "image", "file"];

// option -> [input kind, types it applies to (null: every type)]
const KNOWN = {
  default: ["json", null],
  unique: ["check", (type) => !UNINDEXABLE.includes(type)],
  indexed: ["tristate", (type) => !UNINDEXABLE.includes(type)],
  maxLength: ["number", (type) => LENGTH.includes(type)],
  minLength: ["number", (type) => LENGTH.includes(type)],
  pattern: ["text", (type) => LENGTH.includes(type)],
  min: ["number", (type) => NUMERIC.includes(type)],
  max: ["number", (type) => NUMERIC.includes(type)],
  choices: ["choices", (type) => [...LENGTH.filter((x) => x !== "code"), ...NUMERIC, "csv", "color"].includes(type)],
  precision: ["number", (type) => type === "decimal"],
  scale: ["number", (type) => type === "decimal"],
  geometryType: ["select:Point,LineString,Polygon,MultiPoint,MultiLineString,MultiPolygon,GeometryCollection", (type) => type === "geometry"],
  algorithm: ["select:md5,sha1,sha256,sha512", (type) => type === "hash"],
  sensitive: ["check", (type) => type === "text"],
};

function optionInput(key, kind, value, id) {
  if (kind === "check") return h("input", { id, type: "checkbox", checked: Boolean(value) });
  if (kind === "tristate" || kind.startsWith("select:")) {
    const values = kind === "tristate" ? ["true", "false"] : kind.slice(7).split(",");
    return h("select", { id }, h("option", { value: "" }, t("schema.optionUnset")),
      values.map((v) => h("option", { value: v, selected: value !== undefined && String(value) === v }, v)));
  }
  if (kind === "choices") {
    // One choice a line: "value" or "value = Label".
    const lines = (value || []).map((c) => (c && typeof c === "object" ? `${c.value} = ${c.text}` : String(c)));
    return h("textarea", { id, rows: "3", "aria-describedby": `${id}-hint` }, lines.join("\n"));
  }
  if (kind === "json") return h("input", { id, type: "text", class: "code", value: value === undefined ? "" : JSON.stringify(value), "aria-describedby": `${id}-hint` });
  return h("input", { id, type: kind === "number" ? "number" : "text", step: "any", value: value ?? "" });
}

function readOption(kind, input, type) {
  if (kind === "check") return input.checked ? true : undefined;
  const raw = input.value.trim();
  if (!raw) return undefined;
  if (kind === "tristate") return raw === "true";
  if (kind === "number") return Number(raw);
  if (kind === "json") return JSON.parse(raw);
  if (kind === "choices") {
    const numeric = NUMERIC.includes(type) && type !== "decimal" && type !== "bigInteger";
    return raw.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
      const [value, ...label] = line.split("=");
      const v = numeric ? Number(value.trim()) : value.trim();
      return label.length ? { value: v, text: label.join("=").trim() } : v;
    });
  }
  return raw;
}

function suggestions(id, names) {
  return h("datalist", { id }, names.map((n) => h("option", { value: n })));
}

// -- studio42: the options `name` (an interface or a display) declares, as a form generated from
// `declarations` (interfaces.js) and kept in options[key]; typed values survive a change of the
// name where the new one declares the same key. An undeclared name keeps what is stored. Text is
// kept as typed (a prefix's space counts).
const readOwn = (kind, input, type) => (kind === "text" ? (input.value.trim() ? input.value : undefined) : readOption(kind, input, type));

function ownForm(key, nameInput, declarations, options, typeSelect) {
  const stored = { ...(options[key] || {}) };
  delete options[key];
  const el = h("fieldset", {});
  let inputs = [];
  const draw = () => {
    for (const i of inputs) {
      const value = readOwn(i.kind, i.input, typeSelect.value);
      if (value === undefined) delete stored[i.key];
      else stored[i.key] = value;
    }
    const name = nameInput.value.trim();
    const fits = ([, , types]) => !types || types.includes(typeSelect.value); // -- studio42b
    inputs = (declarations[name] || []).filter(fits).map(([option, kind]) => {
      const id = uid(`${key}-${option}`);
      const input = optionInput(option, kind, stored[option], id);
      return { key: option, kind, input, wrap: h("div", { class: kind === "check" ? "field check" : "field" },
        h("label", { for: id }, t(`schema.own.${option}`)), input,
        kind === "choices" ? h("p", { id: `${id}-hint`, class: "muted" }, t("schema.choicesHint")) : null) };
    });
    replace(el, h("legend", {}, t(`schema.own.${key}`, { name: name || "—" })),
      inputs.length ? inputs.map((i) => i.wrap) : h("p", { class: "muted" }, t("schema.own.none")));
  };
  nameInput.addEventListener("input", draw);
  typeSelect.addEventListener("change", draw);
  draw();
  return {
    el,
    read(opts) {
      const name = nameInput.value.trim();
      if (!declarations[name]) {
        if (Object.keys(stored).length) opts[key] = stored;
        return;
      }
      const values = {};
      for (const i of inputs) {
        const value = readOwn(i.kind, i.input, typeSelect.value);
        if (value !== undefined) values[i.key] = value;
      }
      if (Object.keys(values).length) opts[key] = values;
    },
  };
}

export async function renderFieldForm(env, collection, name) {
  const existing = name ? await data("GET", `/fields/${encodeURIComponent(collection)}/${encodeURIComponent(name)}`, { site: env.site }) : null;
  const ids = Object.fromEntries(["name", "type", "iface", "display", "required", "sort", "other", "ifaces", "displays"].map((k) => [k, uid(`f-${k}`)]));
  const options = { ...((existing && existing.options) || {}) };
  const nameInput = h("input", { id: ids.name, type: "text", required: true, maxlength: "64", value: name || "", readonly: Boolean(existing), autocomplete: "off" });
  const typeSelect = h("select", { id: ids.type }, FIELD_TYPES.map((x) => h("option", { value: x, selected: existing ? existing.type === x : x === "string" }, x)));
  const iface = h("input", { id: ids.iface, type: "text", list: ids.ifaces, value: (existing && existing.interface) || "" });
  const display = h("input", { id: ids.display, type: "text", list: ids.displays, value: (existing && existing.display) || "" });
  const required = h("input", { id: ids.required, type: "checkbox", checked: Boolean(existing && existing.required) });
  const sort = h("input", { id: ids.sort, type: "number", step: "1", value: existing && existing.sort !== null ? existing.sort : "" });
  const known = Object.entries(KNOWN).map(([key, [kind, fits]]) => {
    const id = uid(`o-${key}`);
    const input = optionInput(key, kind, options[key], id);
    delete options[key];
    const hint = kind === "choices" ? t("schema.choicesHint") : kind === "json" ? t("schema.defaultHint") : "";
    const wrap = h("div", { class: kind === "check" ? "field check" : "field" },
      h("label", { for: id }, t(`schema.option.${key}`)), input, hint ? h("p", { id: `${id}-hint`, class: "muted" }, hint) : null);
    return { key, kind, fits, input, wrap };
  });
  // -- studio42: the interface's and the display's declared options, a form each
  const ownOptions = [ownForm("interfaceOptions", iface, INTERFACE_OPTIONS, options, typeSelect),
    ownForm("displayOptions", display, DISPLAY_OPTIONS, options, typeSelect)];
  const other = h("textarea", { id: ids.other, rows: "3", class: "code", "aria-describedby": `${ids.other}-hint` },
    Object.keys(options).length ? JSON.stringify(options, null, 2) : "");
  const shown = () => {
    for (const o of known) o.wrap.hidden = Boolean(o.fits) && !o.fits(typeSelect.value);
  };
  typeSelect.addEventListener("change", shown);
  shown();
  const status = h("p", { role: "status" });
  const back = siteHash(env.site, "schema", "c", collection);
  const form = h("form", { class: "schema-form", "aria-labelledby": `${ids.name}-h`, novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    replace(status);
    const type = typeSelect.value;
    let body;
    try {
      const opts = other.value.trim() ? JSON.parse(other.value) : {};
      for (const o of known) {
        if (o.wrap.hidden) continue;
        const value = readOption(o.kind, o.input, type);
        if (value !== undefined) opts[o.key] = value;
      }
      for (const own of ownOptions) own.read(opts, type); // -- studio42
      body = { type, interface: iface.value.trim() || null, display: display.value.trim() || null, required: required.checked, options: opts };
    } catch (err) {
      return replace(status, h("span", { class: "error" }, t("schema.badJson", { message: err.message })));
    }
    if (sort.value !== "") body.sort = Number(sort.value);
    if (existing && existing.type !== type) {
      const ok = await confirmRisky(env.site, {
        title: t("schema.typeChangeTitle", { name: `${collection}.${name}`, from: existing.type, to: type }),
        change: (m) => {
          const entry = m.fields.find((x) => x.collection === collection && x.field === name);
          if (entry) Object.assign(entry, body);
        },
        affected: { collection, field: name },
      });
      if (!ok) return;
    }
    try {
      if (existing) {
        await data("PATCH", `/fields/${encodeURIComponent(collection)}/${encodeURIComponent(name)}`, { site: env.site, body });
        flash(t("schema.fieldSaved", { name }));
      } else {
        await data("POST", `/fields/${encodeURIComponent(collection)}`, { site: env.site, body: { field: nameInput.value.trim(), ...body } });
        flash(t("schema.fieldCreated", { name: nameInput.value.trim() }));
      }
      go(back);
    } catch (err) {
      replace(status, apiProblem(err));
    }
  } },
  h("h1", { id: `${ids.name}-h` }, existing ? t("schema.fieldHeading", { name: `${collection}.${name}` }) : t("schema.newFieldHeading", { name: collection })),
  h("div", { class: "field" }, h("label", { for: ids.name }, t("schema.fieldName")), nameInput),
  h("div", { class: "field" }, h("label", { for: ids.type }, t("schema.type")), typeSelect),
  h("div", { class: "field" }, h("label", { for: ids.iface }, t("schema.interface")), iface, suggestions(ids.ifaces, INTERFACES)),
  h("div", { class: "field" }, h("label", { for: ids.display }, t("schema.display")), display, suggestions(ids.displays, DISPLAYS)),
  h("div", { class: "field check" }, h("label", { for: ids.required }, t("schema.required")), required),
  h("div", { class: "field" }, h("label", { for: ids.sort }, t("schema.sort")), sort),
  h("fieldset", {}, h("legend", {}, t("schema.validation")), known.map((o) => o.wrap)),
  ownOptions.map((own) => own.el), // -- studio42
  h("div", { class: "field" }, h("label", { for: ids.other }, t("schema.otherOptions")), other,
    h("p", { id: `${ids.other}-hint`, class: "muted" }, t("schema.otherOptionsHint"))),
  h("div", { class: "tools" }, h("button", { type: "submit" }, existing ? t("schema.saveField") : t("schema.createField")),
    h("a", { href: back }, t("schema.cancel"))),
  status);
  document.title = `${existing ? name : t("schema.addField")} · ${collection} · ${env.shell.title}`;
  replace(env.shell.main, h("p", {}, h("a", { href: back }, t("schema.backTo", { name: collection }))), form);
}
// -- end schema
