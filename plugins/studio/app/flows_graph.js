// -- flows editor: the parts of the flow editor (flows.js) that know the graph's shape:
//   drawGraph()   the graph drawn as SVG (layers from the entry down); each step a named group
//                 with its box and port as buttons (-- more43); the list of steps beside it does
//                 all the drawing does, with forms
//   optionField() one option's control, built from the type its operation declares
//                 (GET /flows/operations: { optionSchema: { name: { type, required, ... } } })

import { dragging, h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const BOX = { w: 170, h: 46, gapX: 30, gapY: 44 };

function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Every id a step or a connection names: the steps first, then ids only a connection names
 * (a "missing" step, where the API's GRAPH_DANGLING_EDGE points). */
export function allIds(graph) {
  const ids = graph.nodes.map((n) => n.id);
  for (const e of graph.edges) for (const end of [e.from, e.to]) if (!ids.includes(end)) ids.push(end);
  return ids;
}

/** Each id's layer: 0 for steps without an incoming connection, else one below the deepest step
 * that leads to it (bounded, so a cycle still gets drawn). */
function layers(graph) {
  const ids = allIds(graph);
  const depth = new Map(ids.map((id) => [id, 0]));
  for (let round = 0; round < ids.length; round += 1) {
    let moved = false;
    for (const e of graph.edges) {
      if (e.from === e.to) continue;
      const want = depth.get(e.from) + 1;
      if (want > depth.get(e.to) && want < ids.length) { depth.set(e.to, want); moved = true; }
    }
    if (!moved) break;
  }
  return depth;
}

/** Where each id is drawn: a step's own `position` (moved by the user, kept in the graph), else
 * its place in the layers from the entry down. Also the drawing's width and height. */
export function positions(graph) {
  const depth = layers(graph);
  const rows = new Map();
  for (const [id, d] of depth) { if (!rows.has(d)) rows.set(d, []); rows.get(d).push(id); }
  const widest = Math.max(1, ...[...rows.values()].map((r) => r.length));
  let width = widest * (BOX.w + BOX.gapX) + BOX.gapX;
  const pos = new Map();
  for (const [d, ids] of rows) {
    const offset = (width - ids.length * (BOX.w + BOX.gapX) + BOX.gapX) / 2;
    ids.forEach((id, i) => pos.set(id, { x: offset + i * (BOX.w + BOX.gapX), y: (d + 1) * (BOX.h + BOX.gapY) + 10 }));
  }
  let height = (Math.max(0, ...depth.values()) + 2) * (BOX.h + BOX.gapY) + 10;
  for (const node of graph.nodes) {
    if (node.position) pos.set(node.id, { x: node.position.x, y: node.position.y });
  }
  for (const p of pos.values()) {
    width = Math.max(width, p.x + BOX.w + BOX.gapX);
    height = Math.max(height, p.y + BOX.h + BOX.gapY);
  }
  return { pos, width, height, depth };
}

/** The graph drawn: the trigger on top, each step a box (a step the API named in an error is
 * marked), connections as arrows ("false" ones dashed and labelled). `onPick(id)` is called when
 * a box is clicked (the editor moves the focus to that step in the list); a box dragged calls
 * `onMove(id, { x, y })`, and a drag from a box's port (the dot below it) onto another box calls
 * `onConnect(from, to)`. The list of steps beside the drawing does both with buttons and forms. */
export function drawGraph(graph, { trigger, errors, onPick, onMove = () => {}, onConnect = () => {}, onPort = () => {} }) {
  const { pos, width, height, depth } = positions(graph);
  const arrow = uid("flow-arrow");
  const known = new Set(graph.nodes.map((n) => n.id));
  const top = { x: (width - BOX.w) / 2, y: 10 };
  const line = (a, b, cls, label) => {
    const x1 = a.x + BOX.w / 2, y1 = a.y + BOX.h, x2 = b.x + BOX.w / 2, y2 = b.y;
    const back = y2 <= y1; // a connection upwards (a cycle) bends round the side
    const d = back ? `M${x1},${y1} C${x1 + 120},${y1 + 60} ${x2 + 120},${y2 - 60} ${x2},${y2}`
      : `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
    return s("g", { "aria-hidden": "true" }, s("path", { d, class: cls, "marker-end": `url(#${arrow})` }),
      label ? s("text", { x: (x1 + x2) / 2 + 6, y: (y1 + y2) / 2, class: "flow-edge-label" }, label) : null);
  };
  const entries = [...depth.keys()].filter((id) => !graph.edges.some((e) => e.to === id));
  let svg = null;
  const box = (id) => {
    const node = graph.nodes.find((n) => n.id === id);
    const p = pos.get(id);
    const cls = ["flow-box", known.has(id) ? "" : "missing", errors[id] ? "failed" : ""].filter(Boolean).join(" ");
    // -- more43: a step is a group named for it, holding its box (a button: Enter or a click moves
    // the focus to the step in the list) and its port (a button: Enter goes to the Connect form).
    const keyed = (act) => (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      act();
    };
    const stepName = node ? t("flows.drawnStepOf", { id, operation: node.operation }) : t("flows.drawnMissing", { id });
    const g = s("g", { class: cls, "data-node": id, role: "group", "aria-label": stepName, onclick: (event) => {
      const dragged = event.target.closest("[data-dragged]");
      if (dragged) { delete dragged.dataset.dragged; return; }
      if (event.target.closest("[data-port]")) return;
      onPick(id);
    } },
    s("g", { role: "button", tabindex: 0, "aria-label": t("flows.drawnStep", { id }), class: "flow-box-face", onkeydown: keyed(() => onPick(id)) },
      s("rect", { x: p.x, y: p.y, width: BOX.w, height: BOX.h, rx: 6 }),
      s("text", { x: p.x + 10, y: p.y + 19, class: "flow-box-id", "aria-hidden": "true" }, (errors[id] ? "⚠ " : "") + id),
      s("text", { x: p.x + 10, y: p.y + 36, class: "flow-box-op", "aria-hidden": "true" }, node ? node.operation : t("flows.missingStep"))));
    if (!node) return g;
    const scale = () => (svg.getScreenCTM() || { a: 1 }).a || 1; // screen pixels per unit of the drawing
    dragging(g, {
      scale,
      move: (dx, dy) => g.setAttribute("transform", `translate(${dx},${dy})`),
      drop: (dx, dy) => onMove(id, { x: Math.max(0, Math.round(p.x + dx)), y: Math.max(0, Math.round(p.y + dy)) }),
    });
    const port = s("circle", { cx: p.x + BOX.w / 2, cy: p.y + BOX.h, r: 7, class: "flow-port", "data-port": id,
      role: "button", tabindex: 0, "aria-label": t("flows.drawnPort", { id }), onkeydown: keyed(() => onPort(id)) });
    let wire = null;
    dragging(port, {
      scale,
      move: (dx, dy) => {
        if (!wire) { wire = s("path", { class: "flow-edge flow-wire" }); svg.append(wire); }
        const x1 = p.x + BOX.w / 2, y1 = p.y + BOX.h;
        wire.setAttribute("d", `M${x1},${y1} L${x1 + dx},${y1 + dy}`);
      },
      drop: (dx, dy, e) => {
        if (wire) { wire.remove(); wire = null; }
        const under = document.elementsFromPoint(e.clientX, e.clientY).map((el) => el.closest("[data-node]")).find(Boolean);
        const to = under && under.getAttribute("data-node");
        if (to && to !== id) onConnect(id, to);
      },
    });
    g.append(port);
    return g;
  };
  const summary = t("flows.drawingSummary", { steps: t("flows.stepCount", { count: graph.nodes.length }),
    connections: t("flows.connectionCount", { count: graph.edges.length }) });
  svg = s("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "group", "aria-label": summary, class: "flow-drawing" },
    s("defs", {}, s("marker", { id: arrow, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", class: "flow-arrowhead" }))),
    s("g", { class: "flow-box trigger", role: "img", "aria-label": t("flows.triggerBox", { trigger: t(`flows.trigger.${trigger}`) }) }, s("rect", { x: top.x, y: top.y, width: BOX.w, height: BOX.h, rx: 22 }),
      s("text", { x: top.x + 14, y: top.y + 28, class: "flow-box-id" }, t("flows.triggerBox", { trigger: t(`flows.trigger.${trigger}`) }))),
    entries.map((id) => line(top, pos.get(id), "flow-edge")),
    graph.edges.map((e) => line(pos.get(e.from), pos.get(e.to), e.when === "false" ? "flow-edge false" : "flow-edge",
      e.when === "false" ? t("flows.whenFalseShort") : null)),
    [...depth.keys()].map(box));
  return svg;
}

const TEXTUAL = ["string", "template", "collection", "field"];

function shown(value, option) {
  if (value === undefined || value === null) return "";
  if (option.many && Array.isArray(value)) return value.join("\n");
  if (typeof value === "string" && (option.type !== "json" || option.declared === false)) return value;
  return JSON.stringify(value, null, option.type === "json" ? 2 : 0);
}

/** One option's labelled control, built from the type its operation declares
 * (GET /flows/operations: optionSchema { name: { type, required, default, choices, label,
 * description, many } }); `text` is what was typed before when it could not be read.
 * `collections`: the site's collections ({ name, fields? }), for collection and field options;
 * `sibling(name)`: another option's current value (a field option's collection);
 * `fieldsIn(collection)`: that collection's fields ({ field }), offered to a field option.
 * `read()` answers { ok, value } (value undefined: leave the option out) or { ok: false, message };
 * `fail(message)` marks it invalid with the message. */
export function optionField(name, option, value, text, { collections = [], sibling = () => undefined, fieldsIn = async () => [] } = {}) {
  const type = option.declared === false ? "loose" : option.type;
  const id = uid("flow-opt");
  const about = [h("code", {}, name), option.description ? ` · ${option.description}` : "",
    option.many ? ` · ${t("flows.optionMany")}` : "",
    option.default !== null && option.default !== undefined ? ` · ${t("flows.optionDefault", { value: String(option.default) })}` : ""];
  const hintEl = h("p", { id: uid("flow-hint"), class: "muted" }, about);
  const error = h("p", { id: uid("flow-err"), class: "field-error" });
  const initial = text !== undefined ? text : shown(value, option);
  const unset = () => h("option", { value: "" }, option.default !== null && option.default !== undefined
    ? t("flows.optionUnsetDefault", { value: String(option.default) }) : t("flows.optionUnset"));
  let control;
  if (type === "enum" || type === "boolean") {
    const choices = type === "boolean" ? [[true, t("flows.yes")], [false, t("flows.no")]] : option.choices.map((c) => [c, String(c)]);
    control = h("select", { id }, unset(), choices.map(([c, label], i) => h("option", { value: String(i), selected: c === value }, label)));
    control.choices = choices.map(([c]) => c);
  } else if (type === "collection" && !option.many) {
    const names = collections.map((c) => c.name);
    if (typeof value === "string" && value && !names.includes(value)) names.push(value);
    control = h("select", { id }, h("option", { value: "" }, t("flows.optionUnset")), names.map((c) => h("option", { value: c, selected: c === value }, c)));
  } else if (option.many || type === "json" || type === "template" || type === "loose") {
    control = h("textarea", { id, rows: type === "json" || option.many ? "4" : "2", spellcheck: "false", class: type === "template" ? "" : "code" }, initial);
  } else {
    control = h("input", { id, type: "text", inputmode: type === "number" ? "decimal" : null, value: initial, spellcheck: "false", autocomplete: "off" });
    if (type === "field") {
      const list = h("datalist", { id: uid("flow-fields") });
      control.setAttribute("list", list.id);
      control.addEventListener("focus", async () => {
        const collection = sibling(option.collectionOption || "collection");
        if (typeof collection !== "string" || !collections.some((c) => c.name === collection)) return replace(list);
        const found = await fieldsIn(collection).catch(() => []);
        replace(list, found.map((f) => h("option", { value: f.field })));
      });
      control.datalist = list;
    }
  }
  if (option.required) control.setAttribute("aria-required", "true");
  control.setAttribute("aria-describedby", `${hintEl.id} ${error.id}`);
  const fail = (message) => {
    error.textContent = message || "";
    if (message) control.setAttribute("aria-invalid", "true");
    else control.removeAttribute("aria-invalid");
  };
  const read = () => {
    const raw = control.value;
    if (raw.trim() === "") return { ok: true, value: undefined };
    if (control.choices) return { ok: true, value: control.choices[Number(raw)] };
    if (option.many && TEXTUAL.includes(type)) {
      const lines = raw.split("\n").map((x) => x.trim()).filter(Boolean);
      return { ok: true, value: lines.length === 1 ? lines[0] : lines };
    }
    if (type === "number") {
      if (raw.includes("{{")) return { ok: true, value: raw };
      const number = Number(raw);
      return Number.isFinite(number) ? { ok: true, value: number } : { ok: false, message: t("flows.notNumber") };
    }
    if (type === "json" || type === "loose") {
      try {
        return { ok: true, value: JSON.parse(raw) };
      } catch {
        return type === "json" ? { ok: false, message: t("flows.notJson") } : { ok: true, value: raw };
      }
    }
    return { ok: true, value: raw };
  };
  const label = h("label", { for: id }, option.label || name, option.required ? h("span", { class: "muted" }, ` ${t("flows.optionRequired")}`) : null);
  const wrap = h("div", { class: "me-field" }, label, control, control.datalist || null, hintEl, error);
  return { wrap, control, read, fail, name };
}
