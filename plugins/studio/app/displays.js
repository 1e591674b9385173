// -- studio42c: the displays a list cell draws rather than writes (interfaces.js `displayed` writes
// the others as text):
// - labels: each value a chip with its choice's text and, when the choice has one, its colour;
// - color: a swatch of the colour with the value as text;
// - image: a thumbnail through the asset transform (GET /assets/<id>?width=..), named by the
//   file's title; file: the file's name and type (GET /files/<id>, read once per id);
// - related-values: the related items of an m2o, m2m, o2m or m2a named by the display's
//   `template` (else the related collection's display template), read with the fields that
//   template names only (GET /items/<related>?filter={"id":{"_in":[..]}}&fields=..).

import { call, data } from "./api.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { choicesOf } from "./iface_choice.js";
import { displayOptions } from "./iface_own.js";
import { thumbnail } from "./iface_file.js";

const DRAWN = new Set(["labels", "color", "image", "file", "related-values"]);
const CHUNK = 100;

/** The fields a template's {{ placeholders }} read ("{{title}} ({{author.name}})": title,
 * author.name, which the API reads through the relation). */
export function templateFields(template) {
  return [...new Set([...String(template || "").matchAll(/\{\{\s*([\w.]+)\s*\}\}/g)].map((m) => m[1]))];
}

/** A related item as the template names it; its id when the template gives nothing. */
export function fillTemplate(template, item) {
  const text = String(template).replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, path) => {
    const value = path.split(".").reduce((v, key) => (v === null || v === undefined ? undefined : v[key]), item);
    return value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  }).trim();
  return text || String(item.id);
}

const listOf = (value) => (Array.isArray(value) ? value : typeof value === "string" && value.includes(",") ? value.split(",")
  : value === null || value === undefined || value === "" ? [] : [value]);

function chips(field, value) {
  const choices = choicesOf(field) || [];
  const raw = (field.options && field.options.choices) || displayOptions(field).choices || [];
  const colour = (v) => { const c = raw.find((x) => x && typeof x === "object" && String(x.value) === String(v)); return c && c.color; };
  const values = Array.isArray(value) ? value : field.type === "csv" && typeof value === "string" ? value.split(",") : [value];
  return h("ul", { class: "chips" }, values.map((v) => {
    const choice = choices.find((c) => String(c.value) === String(v));
    const dot = h("span", { class: "chip-dot", "aria-hidden": "true" });
    const c = colour(v);
    if (c && CSS.supports("color", c)) dot.style.setProperty("background", c);
    return h("li", { class: "chip" }, dot, choice ? String(choice.text) : String(v));
  }));
}

function swatch(value) {
  const box = h("span", { class: "swatch", "aria-hidden": "true" });
  if (CSS.supports("color", String(value))) box.style.setProperty("background", String(value));
  return h("span", { class: "colour" }, box, String(value));
}

async function byIds(site, collection, ids, fields) {
  const found = new Map();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const part = ids.slice(i, i + CHUNK);
    const { body } = await call("GET", `/items/${encodeURIComponent(collection)}`, { site, params: {
      limit: part.length, filter: JSON.stringify({ id: { _in: part } }), fields: fields ? fields.join(",") : "" } });
    for (const item of body.data) found.set(String(item.id), item);
  }
  return found;
}

/** The relation behind `field` of `collection` (from GET /relations): its kind and targets. */
function relationOf(relations, collection, field) {
  for (const r of relations) {
    if (r.collection === collection && r.field === field && ["m2o", "m2m", "m2a"].includes(r.type)) return r;
    if (r.collection === collection && r.field === field && r.type === "o2m") return { ...r, foreignKey: r.relatedField };
    if (r.type === "m2o" && r.relatedCollection === collection && r.relatedField === field) {
      return { type: "o2m", relatedCollection: r.collection, foreignKey: r.field };
    }
  }
  return null;
}

function templateOf(shell, field, collection) {
  const own = displayOptions(field).template;
  if (typeof own === "string" && own.trim()) return own;
  const meta = shell.ctx.collections.find((c) => c.name === collection) || { meta: {} };
  return (meta.meta && meta.meta.display_template) || meta.display_template || "{{id}}";
}

async function relatedCells(shell, collection, field, items, relations) {
  const site = shell.site;
  const r = relationOf(relations, collection, field.field);
  if (!r) return null;
  const fieldsFor = (related) => {
    const template = templateOf(shell, field, related);
    return { template, fields: ["id", ...templateFields(template).filter((f) => f !== "id")] };
  };
  const joined = (names) => (names.length ? names.join(", ") : "");
  if (r.type === "o2m") {
    const { template, fields } = fieldsFor(r.relatedCollection);
    const ids = items.map((item) => String(item.id));
    const { body } = await call("GET", `/items/${encodeURIComponent(r.relatedCollection)}`, { site, params: {
      limit: 200, filter: JSON.stringify({ [r.foreignKey]: { _in: ids } }), fields: [...fields, r.foreignKey].join(",") } });
    return items.map((item) => joined(body.data.filter((x) => String(x[r.foreignKey]) === String(item.id)).map((x) => fillTemplate(template, x))));
  }
  if (r.type === "m2a") {
    const wanted = new Map();
    for (const item of items) {
      for (const ref of listOf(item[field.field])) {
        if (ref && typeof ref === "object" && ref.collection) {
          if (!wanted.has(ref.collection)) wanted.set(ref.collection, new Set());
          wanted.get(ref.collection).add(String(ref.id));
        }
      }
    }
    const found = new Map();
    await Promise.all([...wanted].filter(([name]) => shell.ctx.may(name, "read")).map(async ([name, ids]) => {
      const { template, fields } = fieldsFor(name);
      const got = await byIds(site, name, [...ids], fields);
      for (const [id, item] of got) found.set(`${name}\u0000${id}`, fillTemplate(template, item));
    }));
    return items.map((item) => joined(listOf(item[field.field]).filter((ref) => ref && typeof ref === "object")
      .map((ref) => found.get(`${ref.collection}\u0000${ref.id}`) || `${ref.collection} ${ref.id}`)));
  }
  if (!shell.ctx.may(r.relatedCollection, "read")) return null;
  const { template, fields } = fieldsFor(r.relatedCollection);
  const ids = [...new Set(items.flatMap((item) => listOf(item[field.field]).map(String)))];
  const got = ids.length ? await byIds(site, r.relatedCollection, ids, fields) : new Map();
  return items.map((item) => joined(listOf(item[field.field]).map((id) => (got.has(String(id)) ? fillTemplate(template, got.get(String(id))) : String(id)))));
}

async function fileCells(shell, field, items) {
  const ids = [...new Set(items.flatMap((item) => listOf(item[field.field]).map(String)))];
  const files = new Map(await Promise.all(ids.map(async (id) => [id, await data("GET", `/files/${encodeURIComponent(id)}`,
    { site: shell.site }).catch(() => null)])));
  if (field.display === "image") {
    const thumbs = new Map(await Promise.all([...files].map(async ([id, file]) => [id, file
      ? await thumbnail({ site: shell.site }, file, "width=48&height=48&fit=cover&format=png").catch(() => null) : null])));
    return items.map((item) => listOf(item[field.field]).map(String).map((id) => {
      const file = files.get(id);
      const name = file ? file.title || file.key : id;
      return thumbs.get(id) ? h("img", { src: thumbs.get(id), alt: name, width: "48", height: "48", class: "thumb" }) : h("span", {}, name);
    }));
  }
  return items.map((item) => listOf(item[field.field]).map(String).map((id) => {
    const file = files.get(id);
    return h("span", { class: "file-name" }, file ? t("display.fileOf", { name: file.title || file.key, type: file.type || "?" }) : id);
  }));
}

/**
 * The cells of the drawn displays among `fields` for `items`: { field: [node or text per item] };
 * the other fields are not in it (their cells are `displayed` text).
 */
export async function drawnCells(shell, collection, fields, items) {
  const drawn = fields.filter((f) => DRAWN.has(f.display));
  if (!drawn.length || !items.length) return {};
  const relations = drawn.some((f) => f.display === "related-values")
    ? await data("GET", "/relations", { site: shell.site }).catch(() => []) : [];
  const out = {};
  await Promise.all(drawn.map(async (f) => {
    const none = (item) => item[f.field] === null || item[f.field] === undefined || item[f.field] === "";
    let cells = null;
    if (f.display === "labels") cells = items.map((item) => (none(item) ? "" : chips(f, item[f.field])));
    else if (f.display === "color") cells = items.map((item) => (none(item) ? "" : swatch(item[f.field])));
    else if (f.display === "image" || f.display === "file") cells = await fileCells(shell, f, items);
    else cells = await relatedCells(shell, collection, f, items, relations).catch(() => null);
    if (cells) out[f.field] = cells;
  }));
  return out;
}
