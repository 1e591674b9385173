// Relational interfaces (docs/schema.md: every reference is an id in one holder field):
// - m2o: a combobox that searches the related collection as one types (`_icontains` on its
//   label field), arrow keys and Enter to pick, a Clear button;
// - o2m (the one side's alias, or an m2o's `relatedField`): the related items that point here,
//   with Add (the same search), Remove and, when the related collection has a `sort_field`,
//   Move up / Move down; the changes are written to the related items after the item's save;
// - m2m (a json or csv field of ids): the same list, stored in the field itself, in its order;
//   Move up / Move down when the field's options set `sort`.
// Items are named by the related collection's display template, else its first text field.

import { data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { displayOptions, interfaceOptions } from "./iface_own.js"; // -- studio42b; -- studio42c: displayOptions

const PICKS = 10;

/** What the editor needs to know of a related collection, read once per editor. */
export function relatedInfo(env, collection) {
  env.cache = env.cache || new Map();
  if (!env.cache.has(collection)) {
    env.cache.set(collection, data("GET", `/fields/${encodeURIComponent(collection)}`, { site: env.site }).then((fields) => {
      const meta = env.shell.ctx.collections.find((c) => c.name === collection) || { meta: {} };
      const template = (meta.meta && meta.meta.display_template) || meta.display_template || "";
      const text = fields.find((f) => ["string", "text", "slug"].includes(f.type) && env.shell.ctx.may(collection, "read", f.field));
      const first = /\{\{\s*([\w]+)\s*\}\}/.exec(template);
      return { collection, template, searchField: first ? first[1] : text ? text.field : null,
        sortField: meta.sort_field || (meta.meta && meta.meta.sort_field) || null };
    }));
  }
  return env.cache.get(collection);
}

// -- studio42b: the interface's own `template` names the related items instead of the
// collection's display template (its first field is the one searched).
// -- studio42c: else the related-values display's `template`; the items are then read with the
// fields the template names only (and the id, and the field searched).
async function infoFor(env, field, collection) {
  const info = await relatedInfo(env, collection);
  let template = interfaceOptions(field).template;
  if ((typeof template !== "string" || !template.trim()) && field.display === "related-values") template = displayOptions(field).template;
  if (typeof template !== "string" || !template.trim()) return info;
  const first = /\{\{\s*([\w]+)\s*\}\}/.exec(template);
  const searchField = first ? first[1] : info.searchField;
  const named = [...template.matchAll(/\{\{\s*([\w]+)\s*\}\}/g)].map((m) => m[1]);
  return { ...info, template, searchField, fields: [...new Set(["id", ...named, ...(searchField ? [searchField] : [])])].join(",") };
}

function nameOf(info, item) {
  if (!item) return "";
  const named = info.template
    ? info.template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, key) => (item[key] === null || item[key] === undefined ? "" : String(item[key])))
    : info.searchField ? item[info.searchField] : "";
  return String(named || "").trim() || String(item.id);
}

async function find(env, info, text, exclude = []) {
  const filter = {};
  if (text && info.searchField) filter[info.searchField] = { _icontains: text };
  if (exclude.length) filter.id = { _nin: exclude };
  const params = { limit: PICKS, filter: Object.keys(filter).length ? JSON.stringify(filter) : null, fields: info.fields }; // -- studio42c: fields
  return data("GET", `/items/${encodeURIComponent(info.collection)}`, { site: env.site, params });
}

async function byIds(env, info, ids) {
  if (!ids.length) return [];
  const found = await data("GET", `/items/${encodeURIComponent(info.collection)}`,
    { site: env.site, params: { limit: Math.min(200, ids.length), filter: JSON.stringify({ id: { _in: ids } }), fields: info.fields } });
  const byId = new Map(found.map((item) => [String(item.id), item]));
  return ids.map((id) => byId.get(String(id)) || { id });
}

// A search-as-you-type combobox (WAI-ARIA combobox with a listbox popup).
function combobox({ env, info, id, describedBy, label, readOnly, shownText, exclude, onPick }) {
  const listId = uid("options");
  const input = h("input", { id, type: "text", role: "combobox", "aria-autocomplete": "list", "aria-expanded": "false",
    "aria-controls": listId, "aria-describedby": describedBy, "aria-label": label, readonly: readOnly, autocomplete: "off", value: shownText || "" });
  const list = h("ul", { id: listId, role: "listbox", class: "options", "aria-label": t("editor.matches"), hidden: true });
  let found = [];
  let active = -1;
  let asked = 0;
  const close = () => {
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  };
  const mark = (i) => {
    active = i;
    [...list.children].forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
    if (i >= 0 && list.children[i]) input.setAttribute("aria-activedescendant", list.children[i].id);
  };
  const pick = (item) => {
    close();
    onPick(item, input);
  };
  const search = async () => {
    const mine = ++asked;
    const items = await find(env, info, input.value.trim(), exclude ? exclude() : []);
    if (mine !== asked || document.activeElement !== input) return;
    // The option highlighted in the list shown so far stays highlighted when it is among the newer
    // results (arrowing down while the last keystroke's search was still on its way lost it).
    const kept = active >= 0 && found[active] ? String(found[active].id) : null;
    found = items;
    replace(list, items.length ? items.map((item, i) => h("li", { id: `${listId}-${i}`, role: "option", "aria-selected": "false",
      onmousedown: (event) => { event.preventDefault(); pick(item); } }, nameOf(info, item)))
      : h("li", { role: "option", "aria-disabled": "true", "aria-selected": "false" }, t("editor.noMatches")));
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    mark(kept === null ? -1 : items.findIndex((item) => String(item.id) === kept));
  };
  if (!readOnly) {
    input.addEventListener("input", search);
    input.addEventListener("focus", search);
    input.addEventListener("blur", () => close());
    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        if (list.hidden) return search();
        if (!found.length) return;
        const step = event.key === "ArrowDown" ? 1 : -1;
        mark((active + step + found.length) % found.length);
      } else if (event.key === "Enter" && !list.hidden) {
        event.preventDefault();
        if (active >= 0 && found[active]) pick(found[active]);
      } else if (event.key === "Escape" && !list.hidden) {
        event.preventDefault();
        close();
      }
    });
  }
  return { input, el: h("div", { class: "combo" }, input, list) };
}

export async function m2oControl(field, value, env) {
  const info = await infoFor(env, field, env.relation.relatedCollection);
  let chosen = value === null || value === undefined ? null : value;
  const current = chosen === null ? null : (await byIds(env, info, [chosen]))[0];
  const status = h("p", { class: "muted", id: uid("picked") });
  const say = (item) => replace(status, item ? t("editor.picked", { name: nameOf(info, item) }) : t("editor.nothingPicked"));
  const combo = combobox({ env, info, id: env.id, describedBy: `${env.describedBy} ${status.id}`, readOnly: env.readOnly,
    shownText: current ? nameOf(info, current) : "",
    onPick: (item, input) => {
      chosen = item.id;
      input.value = nameOf(info, item);
      say(item);
    } });
  combo.input.addEventListener("blur", () => { if (combo.input.value === "" && !env.readOnly) { chosen = null; say(null); } });
  say(current);
  const clear = env.readOnly ? null : h("button", { type: "button", class: "secondary", onclick: () => {
    chosen = null;
    combo.input.value = "";
    say(null);
    combo.input.focus();
  } }, t("editor.clear", { field: field.field }));
  return { el: h("div", { class: "m2o" }, combo.el, clear, status), input: combo.input, read: () => chosen };
}

// The list of an o2m or m2m: ordered items, each removable (and movable when `movable`).
function itemList({ field, env, info, items, movable, label }) {
  let rows = [...items];
  const status = h("p", { class: "sr-only", role: "status" });
  const list = h("ol", { class: "related", "aria-label": label });
  const draw = (focusKey) => {
    replace(list, rows.length ? rows.map((item, i) => {
      const name = nameOf(info, item);
      const button = (key, text, disabled, act) => h("button", { type: "button", class: "secondary", "data-key": `${key}-${item.id}`,
        disabled: env.readOnly || disabled, onclick: act }, text);
      return h("li", {}, h("span", {}, name), h("span", { class: "row-tools" },
        movable ? button("up", t("editor.moveUp", { name }), i === 0, () => move(i, -1, `up-${item.id}`)) : null,
        movable ? button("down", t("editor.moveDown", { name }), i === rows.length - 1, () => move(i, 1, `down-${item.id}`)) : null,
        button("remove", t("editor.remove", { name }), false, () => {
          rows = rows.filter((_, j) => j !== i);
          replace(status, t("editor.removed", { name }));
          draw();
          add.input.focus();
        })));
    }) : h("li", { class: "muted" }, t("editor.noneLinked")));
    if (focusKey) {
      const again = [...list.querySelectorAll("button")].find((b) => b.dataset.key === focusKey && !b.disabled);
      (again || add.input).focus();
    }
  };
  const move = (i, step, key) => {
    const next = [...rows];
    [next[i], next[i + step]] = [next[i + step], next[i]];
    rows = next;
    replace(status, t("editor.moved", { name: nameOf(info, rows[i + step]), position: i + step + 1 }));
    draw(key);
  };
  const add = combobox({ env, info, id: env.id, describedBy: env.describedBy, label: t("editor.addTo", { field: field.field }),
    readOnly: env.readOnly, exclude: () => rows.map((r) => r.id),
    onPick: (item, input) => {
      rows = [...rows, item];
      input.value = "";
      replace(status, t("editor.added", { name: nameOf(info, item) }));
      draw();
    } });
  draw();
  return { el: h("div", { class: "relation" }, list, env.readOnly ? null : add.el, status), input: add.input, rows: () => rows };
}

export async function m2mControl(field, value, env) {
  const info = await infoFor(env, field, env.relation.relatedCollection);
  const ids = Array.isArray(value) ? value : typeof value === "string" && value ? value.split(",") : [];
  const items = await byIds(env, info, ids.map(String));
  const list = itemList({ field, env, info, items, movable: Boolean(field.options && field.options.sort),
    label: t("editor.linked", { field: field.field }) });
  return { group: true, el: list.el, input: list.input, read: () => {
    const now = list.rows().map((r) => r.id);
    return now.length || value ? now : null;
  } };
}

/** An o2m: `env.relation` is { relatedCollection, foreignKey } (the related items' field holding our id). */
export async function o2mControl(field, env) {
  const { relatedCollection, foreignKey } = env.relation;
  const info = await infoFor(env, field, relatedCollection);
  const params = { limit: 200, sort: info.sortField || "id", fields: info.fields ? [info.fields, info.sortField].filter(Boolean).join(",") : null };
  const items = env.itemId === null ? [] : await data("GET", `/items/${encodeURIComponent(relatedCollection)}`,
    { site: env.site, params: { ...params, filter: JSON.stringify({ [foreignKey]: { _eq: env.itemId } }) } });
  let before = items.map((i) => String(i.id));
  const list = itemList({ field, env, info, items, movable: Boolean(info.sortField), label: t("editor.linked", { field: field.field }) });
  const now = () => list.rows().map((r) => String(r.id));
  return { group: true, alias: true, el: list.el, input: list.input,
    read: () => now(),
    async after(saved) {
      const path = (id) => `/items/${encodeURIComponent(relatedCollection)}/${encodeURIComponent(id)}`;
      const ids = now();
      for (const id of before.filter((x) => !ids.includes(x))) await data("PATCH", path(id), { site: env.site, body: { [foreignKey]: null } });
      for (const [i, id] of ids.entries()) {
        const body = {};
        if (!before.includes(id)) body[foreignKey] = saved.id;
        if (info.sortField && before.indexOf(id) !== i) body[info.sortField] = i + 1;
        if (Object.keys(body).length) await data("PATCH", path(id), { site: env.site, body });
      }
      before = ids;
    } };
}

// -- studio42c: an m2a (a json field of { collection, id } pairs): the linked items, each named
// by the template (the interface's, else the related-values display's, else its collection's
// display template) and removable; an item is added from one of the collections the relation
// allows ("Add to ... from"), searched as one types. Pairs of a collection the user may not
// read are kept as they are, named by their collection and id.
export async function m2aControl(field, value, env) {
  const allowed = (env.relation.relatedCollections || []).filter((c) => env.shell.ctx.may(c, "read"));
  const infos = new Map(await Promise.all(allowed.map(async (c) => [c, await infoFor(env, field, c)])));
  const pairs = Array.isArray(value) ? value.filter((p) => p && typeof p === "object" && p.collection) : [];
  const found = new Map();
  await Promise.all([...infos].map(async ([c, info]) => {
    const ids = pairs.filter((p) => p.collection === c).map((p) => String(p.id));
    for (const item of await byIds(env, info, ids)) found.set(`${c}\u0000${item.id}`, nameOf(info, item));
  }));
  let rows = pairs.map((p) => ({ collection: p.collection, id: p.id,
    name: found.get(`${p.collection}\u0000${p.id}`) || `${p.collection} ${p.id}` }));
  const status = h("p", { class: "sr-only", role: "status" });
  const list = h("ol", { class: "related", "aria-label": t("editor.linked", { field: field.field }) });
  const fromId = uid("m2a-from");
  const from = h("select", { id: fromId, disabled: env.readOnly }, allowed.map((c) => h("option", { value: c }, c)));
  const slot = h("div");
  const draw = () => replace(list, rows.length ? rows.map((row, i) => h("li", {}, h("span", {}, row.name), h("span", { class: "row-tools" },
    h("button", { type: "button", class: "secondary", disabled: env.readOnly, onclick: () => {
      rows = rows.filter((_, j) => j !== i);
      replace(status, t("editor.removed", { name: row.name }));
      draw();
      from.focus();
    } }, t("editor.remove", { name: row.name })))))
    : h("li", { class: "muted" }, t("editor.noneLinked")));
  const searcher = () => {
    const info = infos.get(from.value);
    if (!info) return replace(slot);
    const add = combobox({ env, info, id: env.id, describedBy: env.describedBy, label: t("editor.addTo", { field: field.field }),
      readOnly: env.readOnly, exclude: () => rows.filter((r) => r.collection === info.collection).map((r) => r.id),
      onPick: (item, input) => {
        const name = nameOf(info, item);
        rows = [...rows, { collection: info.collection, id: item.id, name }];
        input.value = "";
        replace(status, t("editor.added", { name }));
        draw();
      } });
    replace(slot, add.el);
  };
  from.addEventListener("change", searcher);
  searcher();
  draw();
  const adding = env.readOnly || !allowed.length ? null : h("div", { class: "m2a-add" },
    h("label", { for: fromId }, t("editor.addFrom", { field: field.field })), from, slot);
  return { group: true, el: h("div", { class: "relation" }, list, adding, status), input: from, read: () => {
    const now = rows.map((r) => ({ collection: r.collection, id: r.id }));
    return now.length || value ? now : null;
  } };
}
