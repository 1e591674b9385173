// -- flows editor: the site admin's flows (docs/flows.md), when the flows plugin is on.
//   #/s/<site>/flows                     the flows, and a new one (a draft with no steps)
//   #/s/<site>/flows/<id>                the editor: name, status, trigger and its options, the
//                                        graph (drawn, and as a list of steps with their option
//                                        forms, built from each operation's declared option
//                                        types, and connections), manual runs (flows_runs.js)
//   #/s/<site>/flows/<id>/runs[/<run>]   the run history and one run (flows_runs.js)
// The graph is edited in the page and saved whole (PATCH); an active flow's graph is checked by
// the API, whose GRAPH_* errors (and an option's VALIDATION_FAILED) are shown on the step named.

import { ApiError, data } from "./api.js";
import { ask, h, replace, uid } from "./dom.js";
import { allIds, drawGraph, optionField, positions } from "./flows_graph.js";
import { manualRunPanel } from "./flows_runs.js";
import { t } from "./i18n.js";
import { fieldsOf } from "./list.js";
import { keepFocus, labelled, said, section } from "./releases.js";
import { go, leaving, siteHash } from "./router.js";

const TRIGGERS = ["manual", "event", "schedule", "webhook"];
const ACTIONS = ["create", "update", "delete"];
const NODE_ID = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const RESERVED = ["trigger", "last", "steps", "env"];
const NUDGE = 20; // how far a step's move buttons move it in the drawing
const MAX_POSITION = 100000; // the API's bound on a node's position
const SHOWN_ONCE = new Map(); // flow id -> a webhook token the API just answered (shown once, then dropped)

/** A new webhook token: 32 random bytes as hex, from the browser's CSPRNG. */
function newToken() {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function renderFlows(shell) {
  const site = shell.site;
  document.title = `${t("flows.heading")} · ${shell.title}`;
  const flows = await data("GET", "/flows", { site });
  const name = h("input", { type: "text", required: true, maxlength: "200" });
  const trigger = h("select", {}, TRIGGERS.map((k) => h("option", { value: k }, t(`flows.trigger.${k}`))));
  const status = h("p", { role: "status" });
  const form = h("form", { "aria-label": t("flows.create"), onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/flows", { site, body: { name: name.value.trim(), status: "draft", trigger: trigger.value,
        graph: { nodes: [], edges: [] } } });
      if (made.token) SHOWN_ONCE.set(made.id, made.token);
      go(siteHash(site, "flows", made.id));
    } catch (err) {
      replace(status, said(err));
      name.focus();
    }
  } }, labelled(t("flows.name"), name), labelled(t("flows.triggerLabel"), trigger),
  h("button", { type: "submit" }, t("flows.create")), status);
  const table = flows.length ? h("table", { class: "files-table" }, h("caption", {}, t("flows.caption")),
    h("thead", {}, h("tr", {}, [t("flows.name"), t("flows.triggerLabel"), t("flows.statusLabel"), t("flows.steps"), ""]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, flows.map((f) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "flows", f.id) }, f.name)),
      h("td", {}, t(`flows.trigger.${f.trigger}`)), h("td", {}, t(`flows.status.${f.status}`)),
      h("td", {}, String(((f.graph && f.graph.nodes) || []).length)),
      h("td", {}, h("a", { href: siteHash(site, "flows", f.id, "runs"), "aria-label": t("flows.runsOf", { name: f.name }) }, t("flows.runs")))))))
    : h("p", {}, t("flows.none"));
  replace(shell.main, h("h1", {}, t("flows.heading")), h("p", { class: "muted" }, t("flows.intro")), table, section(t("flows.create"), form));
}

export async function renderFlow(shell, id) {
  const site = shell.site;
  const path = `/flows/${encodeURIComponent(id)}`;
  const [loaded, operations, roles] = await Promise.all([
    data("GET", path, { site }),
    data("GET", "/flows/operations", { site }),
    data("GET", "/roles", { site, params: { limit: 200 } }),
  ]);
  const ops = new Map(operations.map((o) => [o.key, o]));
  let flow = structuredClone(loaded);
  flow.graph = flow.graph || { nodes: [], edges: [] };
  flow.triggerOptions = flow.triggerOptions || {};
  let dirty = false;
  let pendingToken = null; // a new webhook token, sent with the next save
  let shownToken = SHOWN_ONCE.get(id) || null; // the token the API answered, shown while this page is open
  SHOWN_ONCE.delete(id);
  let errors = {}; // step id -> the API's message for it
  let fieldError = null; // { nodeId, option, message }: a VALIDATION_FAILED naming an option
  const fields = new Map(); // step id -> its option fields (read at save)
  const typed = new Map(); // "step\noption" -> text that is not valid JSON yet, kept across redraws
  const flash = h("div", { role: "status" });
  const alert = h("div", { role: "alert" });
  const body = h("div");
  const changed = () => {
    dirty = true;
    leaving.ask = () => ask({ title: t("flows.leaveUnsaved"), choices: [[t("flows.leave"), true], [t("flows.stay"), false, { class: "primary" }]], dismiss: false });
  };
  const saved = () => { dirty = false; leaving.ask = null; };

  // -- the flow's own settings: name, status, trigger and its options
  const settings = () => {
    const name = h("input", { type: "text", required: true, maxlength: "200", value: flow.name,
      oninput: (e) => { flow.name = e.target.value; changed(); } });
    const status = h("select", { onchange: (e) => { flow.status = e.target.value; changed(); } },
      ["draft", "active"].map((s) => h("option", { value: s, selected: s === flow.status }, t(`flows.status.${s}`))));
    const trigger = h("select", { onchange: (e) => { flow.trigger = e.target.value; flow.triggerOptions = {}; changed(); draw(); } },
      TRIGGERS.map((k) => h("option", { value: k, selected: k === flow.trigger }, t(`flows.trigger.${k}`))));
    return section(t("flows.settings"), labelled(t("flows.name"), name),
      labelled(t("flows.statusLabel"), status, t("flows.statusHint")),
      labelled(t("flows.triggerLabel"), trigger), triggerOptions());
  };
  const setOption = (key, value) => {
    if (value === undefined || value === "" || (Array.isArray(value) && !value.length)) delete flow.triggerOptions[key];
    else flow.triggerOptions[key] = value;
    changed();
  };
  const roleSelect = () => labelled(t("flows.role"), h("select", { onchange: (e) => setOption("role", e.target.value) },
    h("option", { value: "" }, t("flows.roleDefault")),
    roles.map((r) => {
      const value = r.systemKey || r.id;
      return h("option", { value, selected: value === flow.triggerOptions.role }, r.name);
    })), t("flows.roleHint"));
  const triggerOptions = () => {
    const o = flow.triggerOptions;
    if (flow.trigger === "event") {
      const wanted = [].concat(o.action || []);
      const chosen = [].concat(o.collection || []);
      const names = [...new Set([...shell.ctx.collections.map((c) => c.name), ...chosen])];
      const collection = h("select", { multiple: true, size: String(Math.min(6, Math.max(2, names.length))),
        onchange: (e) => setOption("collection", [...e.target.selectedOptions].map((x) => x.value)) },
      names.map((name) => h("option", { value: name, selected: chosen.includes(name) }, name)));
      const boxes = ACTIONS.map((a) => {
        const box = h("input", { type: "checkbox", id: uid("flow-act"), checked: wanted.includes(a), onchange: () =>
          setOption("action", ACTIONS.filter((x, i) => boxes[i].checked)) });
        return box;
      });
      return h("div", {}, labelled(t("flows.collection"), collection, t("flows.collectionHint")),
        h("fieldset", {}, h("legend", {}, t("flows.actions")), h("p", { class: "muted" }, t("flows.actionsHint")),
          ACTIONS.map((a, i) => h("p", { class: "me-check" }, boxes[i], h("label", { for: boxes[i].id }, t(`flows.action.${a}`))))),
        roleSelect());
    }
    if (flow.trigger === "schedule") {
      const cron = h("input", { type: "text", value: o.cron || "", spellcheck: "false", placeholder: "0 6 * * *",
        oninput: (e) => setOption("cron", e.target.value.trim()) });
      return h("div", {}, labelled(t("flows.cron"), cron, t("flows.cronHint")),
        loaded.next_run_at ? h("p", {}, t("flows.nextRun", { at: loaded.next_run_at })) : null, roleSelect());
    }
    if (flow.trigger === "webhook") {
      const url = `${location.origin}/api/v1/flows/${encodeURIComponent(id)}/trigger`;
      const token = shownToken;
      return h("div", {}, h("p", {}, t("flows.webhookUrl"), " ", h("code", {}, url)),
        h("p", { class: "muted" }, t("flows.webhookHow", { site })),
        token ? tokenOnce(token) : h("p", {}, loaded.hasToken ? t("flows.hasToken") : t("flows.noToken")),
        h("p", {}, h("button", { type: "button", onclick: () => { pendingToken = newToken(); changed(); replace(flash, t("flows.tokenPending")); } }, t("flows.newToken"))),
        roleSelect());
    }
    return h("p", { class: "muted" }, t("flows.manualHint"));
  };
  const tokenOnce = (token) => h("div", { class: "note", role: "region", "aria-label": t("flows.tokenShown") },
    h("p", {}, h("strong", {}, t("flows.tokenShown"))),
    labelled(t("flows.token"), h("input", { type: "text", readonly: true, value: token, class: "secret" }), t("flows.tokenOnce")));

  // -- the graph: drawn, and as the list of steps the keyboard uses
  const stepHeading = (nodeId) => body.querySelector(`[data-step="${CSS.escape(nodeId)}"]`);
  const pick = (nodeId) => { const el = stepHeading(nodeId); if (el) el.focus(); };
  const graphSection = () => {
    fields.clear();
    const ids = allIds(flow.graph);
    const steps = ids.map((nodeId) => stepEntry(nodeId));
    const drawing = h("figure", { class: "flow-figure" }, drawGraph(flow.graph, { trigger: flow.trigger, errors, onPick: pick,
      onMove: (nodeId, at) => place(nodeId, at, t("flows.stepMoved", { id: nodeId })),
      onConnect: (from, to) => connect({ from, to, when: "true" }),
      onPort: (from) => { const el = body.querySelector("[data-connect-from]"); if (el) { el.value = from; el.focus(); } } }),
      h("figcaption", { class: "muted" }, t("flows.drawingHint")));
    return section(t("flows.graph"), drawing,
      ids.length ? h("ol", { class: "flow-steps", "aria-label": t("flows.stepsList") }, steps) : h("p", {}, t("flows.noSteps")),
      addStepForm(), connectForm());
  };
  // -- flows43: moving a step in the drawing (dragged, or its buttons) and connecting by dragging
  const place = (nodeId, at, note) => {
    const node = flow.graph.nodes.find((n) => n.id === nodeId);
    if (!node) return;
    const within = (v) => Math.min(MAX_POSITION, Math.max(0, Math.round(v)));
    node.position = { x: within(at.x), y: within(at.y) };
    changed();
    draw(note);
  };
  const connect = (edge) => {
    if (flow.graph.edges.some((e) => e.from === edge.from && e.to === edge.to && e.when === edge.when)) {
      return replace(flash, t("flows.connected"));
    }
    flow.graph.edges.push(edge);
    changed();
    draw(t("flows.connectionAdded", { from: edge.from, to: edge.to }));
  };
  const moveTools = (nodeId) => {
    const nudge = (dx, dy, way) => () => {
      const at = positions(flow.graph).pos.get(nodeId);
      place(nodeId, { x: at.x + dx, y: at.y + dy }, t("flows.stepMoved", { id: nodeId }) + ` (${t(`flows.move.${way}`)})`);
    };
    const at = positions(flow.graph).pos.get(nodeId);
    const tool = (way, dx, dy, disabled) => h("button", { type: "button", class: "quiet", disabled,
      "aria-label": t("flows.moveStep", { id: nodeId, way: t(`flows.move.${way}`) }), onclick: nudge(dx, dy, way) }, t(`flows.moveShort.${way}`));
    return h("div", { role: "group", class: "flow-move", "aria-label": t("flows.positionOf", { id: nodeId }) },
      tool("left", -NUDGE, 0, at.x <= 0), tool("right", NUDGE, 0, false), tool("up", 0, -NUDGE, at.y <= 0), tool("down", 0, NUDGE, false));
  };
  const stepEntry = (nodeId) => {
    const node = flow.graph.nodes.find((n) => n.id === nodeId);
    const op = node ? ops.get(node.operation) : null;
    const headingId = uid("flow-step");
    const errorId = uid("flow-step-err");
    const title = node ? t("flows.stepTitle", { id: nodeId, operation: node.operation }) : t("flows.missingTitle", { id: nodeId });
    const heading = h("h3", { id: headingId, tabindex: "-1", "data-step": nodeId }, title);
    const message = errors[nodeId] ? h("p", { id: errorId, class: "error flow-step-error" }, errors[nodeId]) : null;
    const parts = [heading, message];
    if (node && !op) parts.push(h("p", { class: "error" }, t("flows.unknownOperation", { operation: node.operation })));
    if (node && op) {
      if (op.description) parts.push(h("p", { class: "muted" }, op.description));
      const schema = op.optionSchema || {};
      const sibling = (other) => {
        const found = (fields.get(nodeId) || []).find((f) => f.name === other);
        const got = found ? found.read() : null;
        return got && got.ok ? got.value : node.options[other];
      };
      const own = Object.keys(schema).map((name) => {
        const field = optionField(name, schema[name], node.options[name], typed.get(`${nodeId}\n${name}`),
          { collections: shell.ctx.collections, sibling, fieldsIn: (collection) => fieldsOf(shell, collection) });
        field.control.addEventListener("input", changed);
        field.control.addEventListener("change", changed);
        if (fieldError && fieldError.nodeId === nodeId && fieldError.option === name) field.fail(fieldError.message);
        return field;
      });
      fields.set(nodeId, own);
      parts.push(own.length ? h("fieldset", { class: "flow-options" }, h("legend", {}, t("flows.options", { id: nodeId })), own.map((f) => f.wrap))
        : h("p", { class: "muted" }, t("flows.noOptions")));
    }
    const out = flow.graph.edges.filter((e) => e.from === nodeId);
    parts.push(h("p", { class: "flow-conn-heading" }, t("flows.connectionsFrom", { id: nodeId })),
      out.length ? h("ul", { "aria-label": t("flows.connectionsFrom", { id: nodeId }) }, out.map((e) => h("li", {},
        e.when === "false" ? t("flows.toWhenFalse", { to: e.to }) : t("flows.to", { to: e.to }), " ",
        h("button", { type: "button", class: "quiet", "aria-label": t("flows.disconnect", { from: e.from, to: e.to }),
          onclick: () => { flow.graph.edges = flow.graph.edges.filter((x) => x !== e); changed(); draw(); } }, t("flows.remove")))))
        : h("p", { class: "muted" }, t("flows.noConnections")));
    if (node) parts.push(moveTools(nodeId));
    parts.push(h("p", {}, h("button", { type: "button", class: "quiet", "aria-label": t("flows.removeStep", { id: nodeId }), onclick: () => {
      flow.graph.nodes = flow.graph.nodes.filter((n) => n.id !== nodeId);
      flow.graph.edges = flow.graph.edges.filter((e) => e.from !== nodeId && e.to !== nodeId);
      delete errors[nodeId];
      changed();
      draw(t("flows.stepRemoved", { id: nodeId }));
    } }, t("flows.removeStepShort"))));
    const attrs = { "aria-labelledby": headingId, class: errors[nodeId] ? "flow-step failed" : "flow-step" };
    if (message) attrs["aria-describedby"] = errorId;
    return h("li", {}, h("section", attrs, parts));
  };
  const addStepForm = () => {
    const stepId = h("input", { type: "text", required: true, maxlength: "64", spellcheck: "false", autocomplete: "off" });
    const hint = h("p", { class: "muted", id: uid("flow-ophint") });
    const describe = () => { const op = ops.get(operation.value); replace(hint, op ? op.description : ""); };
    const operation = h("select", { onchange: describe }, operations.map((o) => h("option", { value: o.key }, o.key)));
    operation.setAttribute("aria-describedby", hint.id);
    describe();
    const problem = h("p", { class: "field-error", role: "alert" });
    const form = h("form", { "aria-label": t("flows.addStep"), onsubmit: (event) => {
      event.preventDefault();
      const value = stepId.value.trim();
      const known = allIds(flow.graph);
      if (!NODE_ID.test(value) || RESERVED.includes(value)) return replace(problem, t("flows.badStepId"));
      if (flow.graph.nodes.some((n) => n.id === value)) return replace(problem, t("flows.takenStepId", { id: value }));
      flow.graph.nodes.push({ id: value, operation: operation.value, options: {} });
      // A first step after others: connected from the last one, the usual straight line.
      const last = flow.graph.nodes[flow.graph.nodes.length - 2];
      if (last && !known.includes(value)) flow.graph.edges.push({ from: last.id, to: value, when: "true" });
      changed();
      draw(t("flows.stepAdded", { id: value }));
      pick(value);
    } }, labelled(t("flows.stepId"), stepId, t("flows.stepIdHint")), labelled(t("flows.operation"), operation), hint,
    h("button", { type: "submit" }, t("flows.addStep")), problem);
    return section(t("flows.addStep"), form);
  };
  const connectForm = () => {
    const ids = flow.graph.nodes.map((n) => n.id);
    if (ids.length < 2) return null;
    const from = h("select", { "data-connect-from": "" }, ids.map((x) => h("option", { value: x }, x))); // -- more43: a port's Enter
    const to = h("select", {}, ids.map((x, i) => h("option", { value: x, selected: i === 1 }, x)));
    const when = h("select", {}, ["true", "false"].map((w) => h("option", { value: w }, t(`flows.when.${w}`))));
    const problem = h("p", { class: "field-error", role: "alert" });
    const form = h("form", { "aria-label": t("flows.connect"), onsubmit: (event) => {
      event.preventDefault();
      const edge = { from: from.value, to: to.value, when: when.value };
      if (flow.graph.edges.some((e) => e.from === edge.from && e.to === edge.to && e.when === edge.when)) return replace(problem, t("flows.connected"));
      connect(edge);
    } }, labelled(t("flows.from"), from), labelled(t("flows.toLabel"), to), labelled(t("flows.whenLabel"), when, t("flows.whenHint")),
    h("button", { type: "submit" }, t("flows.connect")), problem);
    return section(t("flows.connect"), form);
  };

  // -- saving: the whole flow; the API's refusal shown where it points
  /** The option fields' values into the steps' options; the first field that cannot be read
   * (its text kept for the next drawing), or null. */
  const harvest = () => {
    let bad = null;
    typed.clear();
    for (const node of flow.graph.nodes) {
      for (const field of fields.get(node.id) || []) {
        const got = field.read();
        if (!got.ok) {
          typed.set(`${node.id}\n${field.name}`, field.control.value);
          bad = bad || { field, message: got.message };
        } else if (got.value === undefined) delete node.options[field.name];
        else node.options[field.name] = got.value;
      }
    }
    return bad;
  };
  const collect = () => {
    const bad = harvest();
    for (const list of fields.values()) for (const field of list) field.fail("");
    if (!bad) return true;
    bad.field.fail(bad.message);
    bad.field.control.focus();
    return false;
  };
  const save = async () => {
    replace(alert);
    if (!collect()) return;
    const triggerOptions = { ...flow.triggerOptions };
    if (pendingToken) triggerOptions.token = pendingToken;
    const changes = { name: flow.name.trim(), status: flow.status, trigger: flow.trigger, triggerOptions,
      graph: { nodes: flow.graph.nodes, edges: flow.graph.edges.map((e) => ({ from: e.from, to: e.to, when: e.when || "true" })) } };
    try {
      const answer = await data("PATCH", path, { site, body: changes });
      if (answer.token) shownToken = answer.token;
      pendingToken = null;
      Object.assign(loaded, answer);
      flow = structuredClone(answer);
      errors = {};
      fieldError = null;
      saved();
      draw(t("flows.saved"));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      showRefusal(err);
    }
  };
  const showRefusal = (err) => {
    const first = err.errors[0] || {};
    const nodeId = first.extensions && first.extensions.nodeId;
    const where = first.path || [];
    errors = {};
    fieldError = null;
    if (nodeId && allIds(flow.graph).includes(nodeId)) {
      errors[nodeId] = said(err);
      if (where[0] === "graph" && where[1] === "nodes" && where[3] === "options" && where[4] !== undefined) {
        fieldError = { nodeId, option: String(where[4]), message: first.message };
      }
      draw();
      replace(alert, t("flows.refusedAt", { id: nodeId, message: said(err) }));
      pick(nodeId);
    } else {
      draw();
      replace(alert, said(err));
    }
  };
  const remove = async () => {
    const sure = await ask({ title: t("flows.deleteAsk", { name: loaded.name }), choices: [[t("flows.delete"), true, { class: "danger" }], [t("flows.keep"), false]] });
    if (!sure) return;
    await data("DELETE", path, { site }).catch((err) => { replace(alert, said(err)); throw err; });
    saved();
    go(siteHash(site, "flows"));
  };
  const actions = () => h("p", { class: "flow-actions" },
    h("button", { type: "button", class: "primary", onclick: save }, t("flows.save")),
    h("button", { type: "button", class: "quiet", onclick: remove }, t("flows.delete")));

  const draw = (note) => {
    document.title = `${loaded.name} · ${t("flows.heading")} · ${shell.title}`;
    harvest();
    keepFocus(body, () => replace(body, settings(), graphSection(), actions(),
      manualRunPanel(shell, loaded, { unsaved: () => dirty })));
    if (note !== undefined) replace(flash, note);
  };
  draw();
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "flows") }, t("flows.back")), " · ",
    h("a", { href: siteHash(site, "flows", id, "runs") }, t("flows.history"))),
  h("h1", {}, loaded.name), flash, alert, body);
}
// -- end flows editor
