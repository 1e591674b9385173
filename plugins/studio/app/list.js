// The list of a collection's items: columns to choose (from the fields the user may read), sort
// by any shown column, a filter builder (filters.js), full-text search, pages of 25 to 200 items,
// bulk selection (bulk.js), view presets and bookmarks (presets.js), and each item through the
// collection's display template. The view (columns, sort, filter, search, page size, page) is the
// URL's query, so a list is a bookmark; a URL with no view opens the user's effective default.

import { ApiError, call, data } from "./api.js";
import { bulkBar, statusOf } from "./bulk.js";
import { h, replace, uid } from "./dom.js";
import { filterBuilder } from "./filters.js";
import { t } from "./i18n.js";
import { presetsPanel, readPresets, stateOf } from "./presets.js";
import { go, siteHash } from "./router.js";
import { addStatusColumn } from "./workflow.js"; // -- history: status badges
import { displayed } from "./interfaces.js"; // -- studio42
import { drawnCells } from "./displays.js"; // -- studio42c

export const PAGE_SIZE = 25;
const PAGE_SIZES = [25, 50, 100, 200];
const MAX_COLUMNS = 6;
const VIEW_KEYS = ["fields", "sort", "filter", "search", "limit", "page"];
// The columns every item has besides its fields (docs/items.md, structural columns).
const STRUCTURAL = [{ field: "status", type: "string" }, { field: "createdAt", type: "dateTime" },
  { field: "updatedAt", type: "dateTime" }];

export async function fieldsOf(shell, collection) {
  const all = await data("GET", `/fields/${encodeURIComponent(collection)}`, { site: shell.site });
  return all.filter((f) => !(f.meta && f.meta.hidden) && shell.ctx.may(collection, "read", f.field))
    .sort((a, b) => (a.sort ?? 0) - (b.sort ?? 0));
}

function valueAt(item, path) {
  return path.split(".").reduce((v, key) => (v === null || v === undefined ? undefined : v[key]), item);
}

async function renderTemplate(shell, template, items) {
  if (template.includes("|") || template.includes("{%")) {
    // Filters and anything beyond plain paths: the server's renderer (POST /utils/render-template).
    return Promise.all(items.map((item) => data("POST", "/utils/render-template",
      { site: shell.site, body: { template, data: item } }).then((d) => d.output)));
  }
  return items.map((item) => template.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, path) => {
    const value = valueAt(item, path);
    return value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  }));
}

function parseFilter(text) {
  if (!text) return null;
  try {
    const parsed = JSON.parse(text);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

/** The view a URL's query names: null when it names none (the effective default applies). */
function stateOfQuery(query) {
  if (!VIEW_KEYS.some((key) => query.has(key))) return null;
  const limit = parseInt(query.get("limit") || "", 10);
  return {
    fields: query.has("fields") ? (query.get("fields") || "").split(",").filter(Boolean) : null,
    sort: query.get("sort") || "",
    filter: parseFilter(query.get("filter")),
    search: query.get("search") || "",
    limit: PAGE_SIZES.includes(limit) ? limit : null,
    page: Math.max(1, parseInt(query.get("page") || "1", 10) || 1),
  };
}

// The name a collection has in the site's GraphQL schema (docs/graphql.md, "Names").
const GRAPHQL_TYPES = new Set(["Query", "Mutation", "Subscription", "ItemEvent", "JSON", "DateTime", "String", "Int", "Float", "Boolean", "ID"]);
function graphqlName(name) {
  const kept = /^[A-Za-z][A-Za-z0-9_]*$/.test(name) && !name.includes("__") && !name.endsWith("_")
    && !name.endsWith("_by_id") && !GRAPHQL_TYPES.has(name);
  if (kept) return name;
  return "x__" + [...new TextEncoder().encode(name)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * One page of items for a view: `{ items, total, more }` (`total` null when unknown).
 * - no search: GET /items with filter, sort and the total count;
 * - a search alone: GET /search (ranked, with its total);
 * - a search with a filter or a sort: GraphQL's list, whose `search` narrows the list to the
 *   search's best matches and applies `filter` and `sort` on top (docs/graphql.md); one item
 *   more than the page is asked for, to know whether a next page exists.
 */
async function fetchPage(shell, collection, state) {
  const site = shell.site;
  const offset = (state.page - 1) * state.limit;
  if (!state.search) {
    const { body } = await call("GET", `/items/${encodeURIComponent(collection)}`, { site, params: {
      limit: state.limit, offset, sort: state.sort, meta: "total_count",
      filter: state.filter ? JSON.stringify(state.filter) : "" }, exact: true }); // -- studio42c: exact big integers
    return { items: body.data, total: (body.meta && body.meta.total) || 0 };
  }
  if (!state.filter && !state.sort) {
    const { body } = await call("GET", "/search", { site, params: { q: state.search, collection, limit: state.limit, offset }, exact: true });
    return { items: body.data.map((hit) => hit.item), total: (body.meta && body.meta.total) || 0 };
  }
  const root = graphqlName(collection);
  const query = `query List($s: String, $f: JSON, $o: [String!], $l: Int, $x: Int) {
    ${root}(search: $s, filter: $f, sort: $o, limit: $l, offset: $x) { _data } }`;
  const { body } = await call("POST", "/graphql", { site, body: { query, variables: {
    s: state.search, f: state.filter, o: state.sort ? state.sort.split(",") : null, l: state.limit + 1, x: offset } }, exact: true });
  if (body.errors && body.errors.length) {
    throw new ApiError(400, body.errors.map((e) => ({ code: (e.extensions && e.extensions.code) || "", message: e.message })));
  }
  const rows = body.data[root].map((row) => row._data);
  return { items: rows.slice(0, state.limit), total: null, more: rows.length > state.limit };
}

// Keyboard users keep their place: the control that changed the view (a sort header, a page
// button, Apply filter...) is focused again in the redrawn list, matched by its tag and name.
function nameOf(el) {
  return el.getAttribute("aria-label") || el.textContent.trim();
}

function focusedIn(shell, collection) {
  const el = document.activeElement;
  const shownList = shell.main.querySelector("h1[data-list]");
  if (!el || !shownList || shownList.dataset.list !== collection || !shell.main.contains(el) || el === shell.main) return null;
  return { tag: el.tagName, name: nameOf(el) };
}

function refocus(shell, was) {
  if (!was) return;
  const same = [...shell.main.querySelectorAll(was.tag)]
    .find((el) => nameOf(el) === was.name && !el.disabled && el.getClientRects().length);
  (same || shell.main).focus();
}

export async function renderList(shell, collection, query, { live = false } = {}) {
  // A live re-fetch waits while items are selected (a redraw would drop the selection and an open
  // confirmation); it runs when the selection is cleared, and an action's own redraw makes it moot.
  if (live && shell.listHold && shell.listHold()) {
    shell.listStale = true;
    return;
  }
  shell.listStale = false;
  const was = focusedIn(shell, collection);
  const meta = shell.ctx.collections.find((c) => c.name === collection);
  const label = meta ? meta.displayName || meta.meta.displayName || collection : collection;
  const [fields, presets] = await Promise.all([fieldsOf(shell, collection), readPresets(shell, collection)]);
  const fromUrl = stateOfQuery(query);
  const base = fromUrl || (presets.effective ? { ...stateOf(presets.effective), page: 1 } : {});
  const choosable = [...fields, ...STRUCTURAL.filter((s) => !fields.some((f) => f.field === s.field))];
  const known = new Set(["id", ...choosable.map((f) => f.field)]);
  const state = {
    fields: (base.fields || fields.slice(0, MAX_COLUMNS).map((f) => f.field)).filter((f) => known.has(f) && f !== "id"),
    sort: base.sort || "",
    filter: base.filter || null,
    search: base.search || "",
    limit: base.limit || PAGE_SIZE,
    page: base.page || 1,
  };
  // A live re-fetch (another session wrote, live.js) keeps the message this view shows, and
  // leaves alone the one an action just set for its own redraw: an event arriving between the
  // action's `redraw` and that redraw's start would otherwise take it, and the message was lost.
  const flash = live ? shell.listFlash : shell.flash;
  if (!live) {
    shell.flash = null;
    shell.listFlash = flash;
  }
  // Renders overlap (a live re-fetch, a redraw after an action): only the newest one draws.
  const ticket = (shell.listTicket = (shell.listTicket || 0) + 1);

  const hashOf = (view) => {
    const next = new URLSearchParams();
    if (view.fields) next.set("fields", view.fields.join(","));
    if (view.sort) next.set("sort", view.sort);
    if (view.filter) next.set("filter", JSON.stringify(view.filter));
    if (view.search) next.set("search", view.search);
    if (view.limit && view.limit !== PAGE_SIZE) next.set("limit", String(view.limit));
    // A view with nothing set still names itself (page=1), so the effective default does not apply.
    if ((view.page && view.page > 1) || ![...next.keys()].length) next.set("page", String(view.page || 1));
    return siteHash(shell.site, "c", collection) + "?" + next.toString();
  };
  const hashWith = (changes) => hashOf({ ...state, ...changes });
  const redraw = (message) => {
    shell.flash = message;
    go(location.hash);
  };

  let page;
  let problem = null;
  try {
    page = await fetchPage(shell, collection, state);
  } catch (err) {
    // A filter or sort the API refuses: its message, and the tools to change the view.
    if (!(err instanceof ApiError) || err.status >= 500 || err.status === 401) throw err;
    page = { items: [], total: 0 };
    problem = t("list.refused", { message: err.message });
  }
  const { items } = page;
  const pages = page.total === null ? null : Math.max(1, Math.ceil(page.total / state.limit));
  const template = meta && meta.meta && meta.meta.display_template;
  const rendered = template ? await renderTemplate(shell, template, items) : null;
  const byName = new Map(choosable.map((f) => [f.field, f]));
  const columns = state.fields.map((name) => byName.get(name)).filter(Boolean);
  const drawn = await drawnCells(shell, collection, columns, items); // -- studio42c: labels, colour, image, file, related values

  // -- search
  const searchId = uid("search");
  const searchInput = h("input", { id: searchId, type: "search", name: "search", value: state.search });
  const searchForm = h("form", { role: "search", onsubmit: (event) => {
    event.preventDefault();
    go(hashWith({ search: searchInput.value.trim(), page: 1 }));
  } }, h("label", { for: searchId }, t("list.search")), searchInput, h("button", { type: "submit" }, t("list.searchButton")));

  // -- columns
  const columnBoxes = choosable.map((f) => {
    const id = uid("column");
    const box = h("input", { id, type: "checkbox", value: f.field, checked: state.fields.includes(f.field) });
    return { box, el: h("li", {}, box, h("label", { for: id }, f.field)) };
  });
  const columnChooser = h("details", { class: "columns-chooser" },
    h("summary", {}, t("list.columns", { count: columns.length })),
    h("ul", {}, columnBoxes.map((c) => c.el)),
    h("button", { type: "button", onclick: () => go(hashWith({ fields: columnBoxes.filter((c) => c.box.checked).map((c) => c.box.value) })) },
      t("list.applyColumns")));

  // -- filter
  const filterFields = [{ field: "id", type: "string" }, ...choosable];
  const filters = h("details", { class: "filter-panel", open: Boolean(state.filter) || null },
    h("summary", {}, state.filter ? t("list.filterOn") : t("list.filter")),
    filterBuilder({ fields: filterFields, filter: state.filter, onApply: (filter) => go(hashWith({ filter, page: 1 })) }));

  // -- bulk selection
  const mayDelete = shell.ctx.may(collection, "delete");
  const status = statusOf(meta, fields);
  const mayStatus = status && shell.ctx.may(collection, "update", status.name === "status" ? undefined : status.name);
  const boxes = [];
  const chosen = () => boxes.filter((b) => b.checked).map((b) => b.value);
  shell.listHold = () => boxes.some((b) => b.isConnected && b.checked);
  const selectionChanged = (n) => {
    bulk.update(n);
    if (n === 0 && shell.listStale) renderList(shell, collection, query, { live: true });
  };
  // -- releases: shell.ctx.releases (Add to release)
  const bulk = (mayDelete || mayStatus || shell.ctx.releases) && items.length ? bulkBar({ shell, collection, status, mayDelete, mayUpdate: mayStatus,
    selected: chosen, done: redraw }) : null;
  const selectAll = bulk ? h("input", { type: "checkbox", "data-pick": true, "aria-label": t("list.selectAll"), onchange: (e) => {
    for (const b of boxes) b.checked = e.target.checked;
    selectionChanged(chosen().length);
  } }) : null;
  const rowBox = (item) => {
    const box = h("input", { type: "checkbox", "data-pick": true, value: String(item.id), "aria-label": t("list.select", { id: item.id }), onchange: () => {
      const n = chosen().length;
      selectAll.checked = n === boxes.length;
      selectAll.indeterminate = n > 0 && n < boxes.length;
      selectionChanged(n);
    } });
    boxes.push(box);
    return h("td", { class: "pick" }, box);
  };

  // -- the table
  const sorting = state.search && !state.filter && !state.sort ? null : state.sort;
  const header = (field) => {
    const direction = sorting === field ? "ascending" : sorting === `-${field}` ? "descending" : null;
    const next = direction === "ascending" ? `-${field}` : direction === "descending" ? "" : field;
    return h("th", { scope: "col", "aria-sort": direction || "none" },
      h("button", { type: "button", class: "sort", onclick: () => go(hashWith({ sort: next, page: 1 })) }, field));
  };
  const open = (item) => siteHash(shell.site, "c", collection, "i", String(item.id));
  const width = columns.length + 1 + (rendered ? 1 : 0) + (bulk ? 1 : 0);
  const table = h("table", {},
    h("caption", {}, t("list.caption", { collection: label })),
    h("thead", {}, h("tr", {},
      bulk ? h("td", { class: "pick" }, selectAll) : null,
      rendered ? h("th", { scope: "col" }, t("list.display")) : null,
      header("id"),
      columns.map((f) => header(f.field)))),
    h("tbody", {}, items.length ? items.map((item, i) => h("tr", {},
      bulk ? rowBox(item) : null,
      rendered ? h("td", {}, h("a", { href: open(item) }, rendered[i] || String(item.id))) : null,
      h("td", {}, rendered ? String(item.id) : h("a", { href: open(item), "aria-label": t("list.open", { id: item.id }) }, String(item.id))),
      // -- studio42: each cell through its field's display
      columns.map((f) => h("td", {}, drawn[f.field] ? drawn[f.field][i] : displayed(f, item[f.field], shell.ctx.language)))))
      : h("tr", {}, h("td", { colspan: String(width) }, t("list.empty")))));

  // -- pages
  const sizeId = uid("size");
  const size = h("select", { id: sizeId, onchange: (e) => go(hashWith({ limit: Number(e.target.value), page: 1 })) },
    PAGE_SIZES.map((n) => h("option", { value: String(n), selected: n === state.limit }, String(n))));
  const last = pages === null ? (page.more ? state.page + 1 : state.page) : pages;
  const toPage = (n) => () => go(hashWith({ page: n }));
  const pager = h("nav", { "aria-label": t("list.pages"), class: "pager" },
    h("button", { type: "button", disabled: state.page <= 1, onclick: toPage(1) }, t("list.first")),
    h("button", { type: "button", disabled: state.page <= 1, onclick: toPage(state.page - 1) }, t("list.previous")),
    h("p", { role: "status" }, pages === null ? t("list.pageOfMany", { page: state.page })
      : t("list.pageOf", { page: state.page, pages, total: page.total })),
    h("button", { type: "button", disabled: state.page >= last, onclick: toPage(state.page + 1) }, t("list.next")),
    pages === null ? null : h("button", { type: "button", disabled: state.page >= pages, onclick: toPage(pages) }, t("list.last")),
    h("label", { for: sizeId }, t("list.pageSize")), size);

  const views = presetsPanel({ shell, collection, presets, state, hashOf, done: (text) => redraw({ kind: "status", text }) });
  const note = fromUrl || !presets.effective ? null
    : h("p", { class: "muted" }, t("list.defaultView", { scope: t(`presets.from.${presets.effective.sourceScope}`) }));

  document.title = `${label} · ${shell.title}`;
  if (ticket !== shell.listTicket) return;
  replace(shell.main,
    h("h1", { "data-list": collection }, label),
    note,
    h("div", { class: "tools" }, searchForm,
      shell.ctx.may(collection, "create") ? h("a", { class: "button", href: siteHash(shell.site, "c", collection, "new") }, t("list.create")) : null),
    h("div", { class: "tools" }, columnChooser),
    filters,
    flash ? h("p", { role: flash.kind === "alert" ? "alert" : "status", class: flash.kind === "alert" ? "error" : "notice" }, flash.text) : null,
    problem ? h("p", { role: "alert", class: "error" }, problem) : null,
    bulk ? bulk.el : null,
    h("div", { class: "scroll" }, table),
    pager,
    views);
  await addStatusColumn(shell, collection, items, table); // -- history: status badges
  refocus(shell, was);
}
