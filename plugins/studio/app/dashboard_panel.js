// -- dashboards: a panel's editor (#/s/<site>/dashboards/<id>/panels/new|<pid>): its name, type,
// PanelQuery (collection, aggregate, field, groups, filter, date buckets and range, limit) and
// size, with a preview of the query as it stands (POST .../panels/preview, never stored). The
// API checks every name the query uses (400 INVALID_FIELD, VALIDATION_FAILED with the key's path):
// its refusal is shown with that path.

import { ApiError, call, data } from "./api.js";
import { drawPanel } from "./charts.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { fieldsOf } from "./list.js";
import { labelled, said, section } from "./releases.js";
import { go, siteHash } from "./router.js";

export const COLUMNS = 12; // the grid's width in units (panel positions: x 0-11, w 1-12)
export const INTERVALS = ["day", "week", "month"];
const TYPES = ["time-series", "bar-chart", "metric", "list", "pie-chart", "label"];
const AGGREGATES = ["count", "sum", "avg", "min", "max"];
const NUMERIC = new Set(["integer", "bigInteger", "float", "decimal"]);
const DATED = new Set(["date", "dateTime", "timestamp"]);
const STAMPS = [{ field: "createdAt", type: "dateTime" }, { field: "updatedAt", type: "dateTime" }];

/** What the signed-in user may do with dashboards (the API decides; this only hides controls). */
export function may(ctx, action) {
  return Boolean(ctx.permissions.admin) || ctx.may("svc_dashboards", action);
}

/** The API's refusal with the path of the key it names (["query", "dateRange", "interval"]). */
function refusal(err) {
  const first = (err.errors && err.errors[0]) || {};
  const path = Array.isArray(first.path) ? first.path.join(".") : "";
  return path ? `${said(err)}: ${path}` : said(err);
}

/** A default place for a new panel: the full row under the lowest panel. */
function nextPosition(panels) {
  const y = panels.reduce((low, p) => Math.max(low, p.position.y + p.position.h), 0);
  return { x: 0, y, w: 6, h: 4 };
}

export async function renderPanelEditor(shell, dashboardId, panelId) {
  const site = shell.site;
  const base = `/dashboards/${encodeURIComponent(dashboardId)}`;
  const board = await data("GET", base, { site });
  const panel = panelId ? board.panels.find((p) => p.id === panelId) : null;
  if (panelId && !panel) throw new ApiError(404, []);
  const query = (panel && panel.query) || {};
  const hidden = Boolean(panel && panel.type !== "label" && !panel.query); // a query this user may not read
  const title = panel ? t("dash.editTitle", { name: panel.name }) : t("dash.newPanel");
  document.title = `${title} · ${board.name} · ${shell.title}`;

  const alert = h("div", { role: "alert" });
  const name = h("input", { type: "text", required: true, maxlength: "200", value: panel ? panel.name : "" });
  const type = h("select", {}, TYPES.map((k) => h("option", { value: k, selected: panel ? panel.type === k : k === "time-series" }, t(`dash.type.${k}`))));
  const collections = shell.ctx.collections;
  const collection = h("select", {}, collections.map((c) => h("option", { value: c.name, selected: c.name === query.collection }, c.name)));
  const aggregate = h("select", {}, AGGREGATES.map((a) => h("option", { value: a, selected: a === (query.aggregate || "count") }, t(`dash.aggregate.${a}`))));
  const field = h("select");
  const groupBy = h("input", { type: "text", value: [].concat(query.groupBy || []).join(", "), autocomplete: "off" });
  const filter = h("textarea", { rows: "3", class: "code", spellcheck: "false" }, query.filter ? JSON.stringify(query.filter, null, 2) : "");
  const range = query.dateRange || {};
  const dateField = h("select");
  const interval = h("select", {}, INTERVALS.map((i) => h("option", { value: i, selected: i === (range.interval || "week") }, t(`dash.interval.${i}`))));
  const from = h("input", { type: "date", value: (range.from || "").slice(0, 10) });
  const to = h("input", { type: "date", value: (range.to || "").slice(0, 10) });
  const limit = h("input", { type: "number", min: "1", max: "200", value: query.limit ? String(query.limit) : "" });
  const position = panel ? panel.position : nextPosition(board.panels);
  const width = h("input", { type: "number", min: "1", max: String(COLUMNS), required: true, value: String(position.w) });
  const height = h("input", { type: "number", min: "1", max: "12", required: true, value: String(position.h) });

  const fillFields = async () => {
    const fields = collection.value ? await fieldsOf(shell, collection.value) : [];
    const wanted = aggregate.value;
    const chosen = field.value || query.field; // kept across a change of the aggregate
    const dated = dateField.value || range.field;
    const usable = fields.filter((f) => wanted === "count" || (["sum", "avg"].includes(wanted) ? NUMERIC.has(f.type) : true));
    replace(field, h("option", { value: "" }, wanted === "count" ? t("dash.everyItem") : t("dash.pick")),
      usable.map((f) => h("option", { value: f.field, selected: f.field === chosen }, f.field)));
    replace(dateField, h("option", { value: "" }, t("dash.noBuckets")),
      [...fields.filter((f) => DATED.has(f.type)), ...STAMPS].map((f) => h("option", { value: f.field, selected: f.field === dated }, f.field)));
    groupBy.setAttribute("placeholder", fields.slice(0, 3).map((f) => f.field).join(", "));
  };
  await fillFields();
  collection.addEventListener("change", () => fillFields().catch((err) => replace(alert, said(err))));
  aggregate.addEventListener("change", () => fillFields().catch((err) => replace(alert, said(err))));

  const queryPart = h("fieldset", { class: "schema-form dash-query" }, h("legend", {}, t("dash.query")),
    hidden ? h("p", { class: "muted" }, t("dash.queryHidden")) : [
      labelled(t("dash.collection"), collection), labelled(t("dash.aggregate"), aggregate), labelled(t("dash.field"), field),
      labelled(t("dash.groupBy"), groupBy, t("dash.groupByHint")), labelled(t("dash.filter"), filter, t("dash.filterHint")),
      labelled(t("dash.dateField"), dateField, t("dash.dateFieldHint")), labelled(t("dash.interval"), interval),
      labelled(t("dash.from"), from), labelled(t("dash.to"), to), labelled(t("dash.limit"), limit, t("dash.limitHint"))]);
  const showQuery = () => { queryPart.hidden = type.value === "label"; };
  type.addEventListener("change", showQuery);
  showQuery();

  /** The PanelQuery the form holds (throws on a filter that is not JSON). */
  const built = () => {
    const q = { collection: collection.value, aggregate: aggregate.value };
    if (field.value) q.field = field.value;
    const groups = groupBy.value.split(",").map((g) => g.trim()).filter(Boolean);
    if (groups.length) q.groupBy = groups;
    if (filter.value.trim()) {
      try {
        q.filter = JSON.parse(filter.value);
      } catch {
        filter.focus();
        throw new Error(t("dash.filterNotJson"));
      }
    }
    if (dateField.value) {
      q.dateRange = { field: dateField.value, interval: interval.value };
      if (from.value) q.dateRange.from = from.value;
      if (to.value) q.dateRange.to = to.value;
    }
    if (limit.value) q.limit = Number(limit.value);
    return q;
  };
  const body = () => {
    const b = { name: name.value.trim(), type: type.value,
      position: { ...position, w: Number(width.value), h: Number(height.value) } };
    b.position.x = Math.min(b.position.x, Math.max(0, COLUMNS - b.position.w));
    if (type.value === "label") b.query = null;
    else if (!hidden) b.query = built();
    return b;
  };

  const preview = h("div", { class: "dash-preview" });
  const showPreview = async () => {
    replace(alert);
    try {
      const made = body();
      if (made.type === "label" || hidden) return replace(preview, h("p", { class: "muted" }, t("dash.noPreview")));
      replace(preview, h("p", { role: "status" }, t("app.loading")));
      const rows = await data("POST", `${base}/panels/preview`, { site, body: made.query });
      replace(preview, h("p", { class: "muted", role: "status" }, t("dash.previewed", { count: rows.length })));
      const chart = h("div");
      preview.append(chart);
      drawPanel(chart, made, rows, { height: 240 });
    } catch (err) {
      replace(preview);
      replace(alert, refusal(err));
    }
  };
  const back = siteHash(site, "dashboards", dashboardId);
  const form = h("form", { class: "schema-form dash-editor", "aria-label": title, onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      const made = body();
      if (panel) await data("PATCH", `${base}/panels/${encodeURIComponent(panel.id)}`, { site, body: made });
      else await data("POST", `${base}/panels`, { site, body: made });
      go(back);
    } catch (err) {
      replace(alert, refusal(err));
    }
  } }, labelled(t("dash.name"), name), labelled(t("dash.typeLabel"), type), queryPart,
  h("fieldset", { class: "schema-form" }, h("legend", {}, t("dash.size")),
    labelled(t("dash.width"), width, t("dash.widthHint", { columns: COLUMNS })), labelled(t("dash.height"), height)),
  h("p", {}, h("button", { type: "button", onclick: showPreview }, t("dash.preview")), " ",
    h("button", { type: "submit" }, panel ? t("dash.savePanel") : t("dash.addPanel"))));
  const remove = panel ? section(t("dash.removePanel"), h("p", {}, h("button", { type: "button", class: "danger", onclick: async () => {
    replace(alert);
    try {
      await call("DELETE", `${base}/panels/${encodeURIComponent(panel.id)}`, { site });
      go(back);
    } catch (err) {
      replace(alert, said(err));
    }
  } }, t("dash.deletePanel", { name: panel.name })))) : null;
  replace(shell.main, h("p", {}, h("a", { href: back }, t("dash.backTo", { name: board.name }))),
    h("h1", {}, title), alert, form, section(t("dash.preview"), preview), remove);
}
