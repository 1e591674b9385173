// The list of a collection's items: columns from its fields (those the user may read), sort by a
// column header, pages, the API's full-text search (GET /search), and each item through the collection's
// display template. The state (sort, page, search) is the URL's query, so a list is a bookmark.

import { call, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { addStatusColumn } from "./workflow.js"; // -- history: status badges

export const PAGE_SIZE = 25;
const MAX_COLUMNS = 6;

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

function shown(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export async function renderList(shell, collection, query) {
  const meta = shell.ctx.collections.find((c) => c.name === collection);
  const label = meta ? meta.displayName || meta.meta.displayName || collection : collection;
  const sort = query.get("sort") || "";
  const search = query.get("search") || "";
  const page = Math.max(1, parseInt(query.get("page") || "1", 10) || 1);
  const fields = await fieldsOf(shell, collection);
  const window_ = { limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE };
  // Full-text search is its own endpoint (GET /search, ranked: a sort does not apply to it).
  const { body } = search
    ? await call("GET", "/search", { site: shell.site, params: { q: search, collection, ...window_ } })
    : await call("GET", `/items/${encodeURIComponent(collection)}`, {
      site: shell.site, params: { ...window_, sort, meta: "total_count" } });
  const items = search ? body.data.map((hit) => hit.item) : body.data;
  const total = (body.meta && body.meta.total) || 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const template = meta && meta.meta && meta.meta.display_template;
  const rendered = template ? await renderTemplate(shell, template, items) : null;
  const columns = fields.slice(0, MAX_COLUMNS);

  const hashWith = (changes) => {
    const next = new URLSearchParams({ sort, search, page: String(page), ...changes });
    for (const [key, value] of [...next.entries()]) if (!value || (key === "page" && value === "1")) next.delete(key);
    const text = next.toString();
    return siteHash(shell.site, "c", collection) + (text ? "?" + text : "");
  };

  const searchId = uid("search");
  const searchInput = h("input", { id: searchId, type: "search", name: "search", value: search });
  const searchForm = h("form", { role: "search", onsubmit: (event) => {
    event.preventDefault();
    go(hashWith({ search: searchInput.value.trim(), page: "1" }));
  } }, h("label", { for: searchId }, t("list.search")), searchInput, h("button", { type: "submit" }, t("list.searchButton")));

  const header = (field) => {
    const direction = sort === field ? "ascending" : sort === `-${field}` ? "descending" : null;
    const next = direction === "ascending" ? `-${field}` : direction === "descending" ? "" : field;
    return h("th", { scope: "col", "aria-sort": direction || "none" },
      h("button", { type: "button", class: "sort", onclick: () => go(hashWith({ sort: next, page: "1" })) }, field));
  };
  const open = (item) => siteHash(shell.site, "c", collection, "i", String(item.id));
  const table = h("table", {},
    h("caption", {}, t("list.caption", { collection: label })),
    h("thead", {}, h("tr", {},
      rendered ? h("th", { scope: "col" }, t("list.display")) : null,
      header("id"),
      columns.map((f) => header(f.field)))),
    h("tbody", {}, items.length ? items.map((item, i) => h("tr", {},
      rendered ? h("td", {}, h("a", { href: open(item) }, rendered[i] || String(item.id))) : null,
      h("td", {}, rendered ? String(item.id) : h("a", { href: open(item), "aria-label": t("list.open", { id: item.id }) }, String(item.id))),
      columns.map((f) => h("td", {}, shown(item[f.field])))))
      : h("tr", {}, h("td", { colspan: String(columns.length + (rendered ? 2 : 1)) }, t("list.empty")))));

  const pager = h("nav", { "aria-label": t("list.pages"), class: "pager" },
    h("button", { type: "button", disabled: page <= 1, onclick: () => go(hashWith({ page: String(page - 1) })) }, t("list.previous")),
    h("p", { role: "status" }, t("list.pageOf", { page, pages, total })),
    h("button", { type: "button", disabled: page >= pages, onclick: () => go(hashWith({ page: String(page + 1) })) }, t("list.next")));

  document.title = `${label} · ${shell.title}`;
  replace(shell.main,
    h("h1", {}, label),
    h("div", { class: "tools" }, searchForm,
      shell.ctx.may(collection, "create") ? h("a", { class: "button", href: siteHash(shell.site, "c", collection, "new") }, t("list.create")) : null),
    h("div", { class: "scroll" }, table),
    pager);
  await addStatusColumn(shell, collection, items, table); // -- history: status badges
}
