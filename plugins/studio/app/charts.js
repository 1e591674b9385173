// -- dashboards: a panel's answer drawn (docs/dashboards.md, "The answer": rows of
// { bucket?, group?, value }). Time series and bars are drawn by uPlot (vendor/, MIT), single
// numbers and lists as text. Every chart has its data as a table beside it (a disclosure) and a
// one-sentence summary as the chart's accessible name: the canvas itself says nothing to a
// screen reader. uPlot writes its sizes and colours through the CSSOM (el.style.x = ...), which
// the studio's CSP allows; it never evaluates code.

import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import uPlot from "./vendor/uPlot.esm.js";

const COLOURS = ["#2563eb", "#c2410c", "#047857", "#be185d", "#6d28d9", "#0e7490", "#a16207", "#4d7c0f"];
const DAY = 86400;
// Sums and counts over no rows are 0, so a missing bucket is 0; avg, min and max have no value there.
const ZERO_FILLED = new Set(["count", "sum"]);
const MAX_FILLED = 400; // buckets drawn at most after filling the gaps (the API answers 200 rows at most)
const DRAWN = new WeakMap(); // a panel's target -> its chart and the observer of its width, ended on a redraw

function number(value) {
  if (value === null || value === undefined) return "–";
  return new Intl.NumberFormat(document.documentElement.lang || "en", { maximumFractionDigits: 2 }).format(value);
}

/** A group's values as one label ("news / web"). */
export function groupLabel(group) {
  if (!group) return "";
  return Object.values(group).map((v) => (v === null || v === undefined ? t("dash.empty") : typeof v === "object" ? JSON.stringify(v) : String(v))).join(" / ");
}

const seconds = (bucket) => Date.parse(`${bucket}T00:00:00Z`) / 1000;
const isoDay = (secs) => new Date(secs * 1000).toISOString().slice(0, 10);

/** The buckets from the first to the last, every `interval`, gaps included (UTC days). */
export function bucketsBetween(first, last, interval) {
  const out = [];
  let at = new Date(`${first}T00:00:00Z`);
  const end = Date.parse(`${last}T00:00:00Z`);
  while (at.getTime() <= end && out.length < MAX_FILLED) {
    out.push(at.toISOString().slice(0, 10));
    if (interval === "month") at = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
    else at = new Date(at.getTime() + (interval === "week" ? 7 : 1) * DAY * 1000);
  }
  return out;
}

/** Rows as a time series: x (seconds), one series per group, missing buckets filled. */
function timeSeries(rows, query) {
  const interval = (query && query.dateRange && query.dateRange.interval) || "day";
  const fill = query && ZERO_FILLED.has(query.aggregate) ? 0 : null;
  const present = [...new Set(rows.map((r) => r.bucket))].sort();
  const buckets = present.length ? bucketsBetween(present[0], present[present.length - 1], interval) : [];
  const names = [...new Set(rows.map((r) => groupLabel(r.group)))];
  const series = names.map((name) => {
    const byBucket = new Map(rows.filter((r) => groupLabel(r.group) === name).map((r) => [r.bucket, r.value]));
    return { name: name || t("dash.value"), values: buckets.map((b) => (byBucket.has(b) ? byBucket.get(b) : fill)) };
  });
  return { x: buckets.map(seconds), labels: buckets, series };
}

/** Rows as categories (a bar each): the bucket and the group named together. */
function categories(rows, fallback) {
  const labels = rows.map((r) => [r.bucket, groupLabel(r.group)].filter(Boolean).join(" · ") || fallback);
  return { x: labels.map((_, i) => i), labels, series: [{ name: t("dash.value"), values: rows.map((r) => r.value) }] };
}

function summary(kind, shape) {
  const points = shape.series.flatMap((s) => s.values.map((v, i) => ({ v, at: shape.labels[i], s: s.name }))).filter((p) => p.v !== null);
  if (!points.length) return t("dash.noData");
  const top = points.reduce((a, b) => (b.v > a.v ? b : a));
  const where = shape.series.length > 1 ? `${top.at}, ${top.s}` : top.at;
  return t(`dash.summary.${kind}`, { count: shape.labels.length, first: shape.labels[0], last: shape.labels[shape.labels.length - 1],
    series: t("dash.series", { count: shape.series.length }), max: number(top.v), at: where });
}

/** The data as a table: one row per row of the answer. */
function dataTable(rows, caption) {
  const groups = [...new Set(rows.flatMap((r) => Object.keys(r.group || {})))];
  const hasBucket = rows.some((r) => r.bucket);
  const head = [hasBucket ? t("dash.bucket") : null, ...groups, t("dash.value")].filter((c) => c !== null);
  return h("table", { class: "files-table dash-data" }, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {},
      hasBucket ? h("th", { scope: "row" }, r.bucket || "") : null,
      groups.map((g) => h("td", {}, groupLabel({ g: (r.group || {})[g] }))),
      h("td", { class: "num" }, number(r.value))))));
}

function themeColour(el, name, fallback) {
  return getComputedStyle(el).getPropertyValue(name).trim() || fallback;
}

/** A uPlot chart in `box`, sized to it and following its width. */
function plot(box, kind, shape, height) {
  const ink = themeColour(document.body, "color", "#222");
  const line = themeColour(document.documentElement, "--line", "#ccc");
  const axis = { stroke: ink, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
  const time = kind === "line";
  const bars = uPlot.paths.bars({ size: [0.6, 80] });
  const opts = {
    width: Math.max(box.clientWidth, 240), height,
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: time ? { x: { time: true } }
      : { x: { time: false, range: () => [-0.5, shape.labels.length - 0.5] }, y: { range: (u, min, max) => [Math.min(0, min), Math.max(max, 0) * 1.1 || 1] } },
    axes: [
      time ? { ...axis } : { ...axis, splits: () => shape.labels.map((_, i) => i), values: (u, splits) => splits.map((i) => shape.labels[i] ?? "") },
      { ...axis, values: (u, splits) => splits.map(number) },
    ],
    series: [{}, ...shape.series.map((s, i) => ({
      label: s.name, stroke: COLOURS[i % COLOURS.length], width: 2,
      ...(time ? { points: { show: shape.labels.length < 60 } } : { fill: COLOURS[i % COLOURS.length], paths: bars, points: { show: false } }),
    }))],
  };
  if (time) opts.tzDate = (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC");
  const chart = new uPlot(opts, [shape.x, ...shape.series.map((s) => s.values)], box);
  const follow = new ResizeObserver(() => {
    if (!box.isConnected) return follow.disconnect();
    const width = Math.max(box.clientWidth, 240);
    if (width !== chart.width) chart.setSize({ width, height });
  });
  follow.observe(box);
  return { chart, follow };
}

function legend(shape) {
  if (shape.series.length < 2) return null;
  return h("ul", { class: "dash-legend", "aria-hidden": "true" }, shape.series.map((s, i) => {
    const swatch = h("span", { class: "swatch" });
    swatch.style.background = COLOURS[i % COLOURS.length];
    return h("li", {}, swatch, s.name);
  }));
}

/** Draw `answer` (the panel run's data) of `panel` into `target`; `height` in pixels. */
export function drawPanel(target, panel, rows, { height = 220 } = {}) {
  const query = panel.query;
  const title = panel.name;
  const before = DRAWN.get(target);
  if (before) {
    before.follow.disconnect();
    before.chart.destroy();
    DRAWN.delete(target);
  }
  if (panel.type === "label") return replace(target);
  if (!rows.length) return replace(target, h("p", { class: "muted" }, t("dash.noData")));
  if (panel.type === "metric") {
    const extra = rows.length > 1 ? h("p", { class: "muted" }, t("dash.metricMore", { count: rows.length })) : null;
    return replace(target, h("p", { class: "dash-metric" }, number(rows[0].value)), extra);
  }
  if (panel.type === "list") return replace(target, dataTable(rows, t("dash.tableOf", { name: title })));
  const kind = panel.type === "time-series" && rows.every((r) => r.bucket) ? "line" : "bars";
  const shape = kind === "line" ? timeSeries(rows, query) : categories(rows, title);
  const box = h("div", { class: "dash-chart", role: "img", "aria-label": `${title}: ${summary(kind, shape)}` });
  const figure = h("figure", { class: "dash-figure" }, box, legend(shape),
    h("details", {}, h("summary", {}, t("dash.showTable")), dataTable(rows, t("dash.tableOf", { name: title }))));
  replace(target, figure);
  DRAWN.set(target, plot(box, kind, shape, height));
}
