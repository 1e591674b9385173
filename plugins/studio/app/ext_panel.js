// -- ext_ui: an extension's UI panel, #/s/<site>/ext/<extension>/<panel> (docs/extensions.md#ui-panels).
// The panel runs in <iframe sandbox="allow-scripts"> without allow-same-origin: an opaque origin
// that cannot touch this page, its storage or its token, under its own policy (no network at all;
// plugins/extensions/panels.py). It reaches svc only by asking this page with postMessage, and
// this page answers only a message whose source is that frame's window (origin "null") and only
// the calls the extension's grants in the site allow, as the signed-in user (whose own rights
// the API applies as well):
//   { svc: 1, id, call: "context" }                                  always
//   { svc: 1, id, call: "items.list", args: { collection, limit?, offset?, sort?, search? } }
//   { svc: 1, id, call: "items.read", args: { collection, id } }     with items:<collection>
//   { svc: 1, id, call: "route", args: { method?, path, params?, body? } }   with routes: its own /ext/<name>/...
// Answers are { svc: 1, id, data } or { svc: 1, id, error: { code, message } }.

import { ApiError, SessionEnded, data } from "./api.js";
import { h, replace } from "./dom.js";
import { capabilityList } from "./extensions.js";
import { t } from "./i18n.js";

const MAX_IN_FLIGHT = 8; // a panel's calls awaiting an answer; more are refused at once
const MAX_LIMIT = 100;
let active = null; // { frame, entry, site, inFlight }: the panel shown now (one at a time)

function refuse(code, message) {
  return { error: { code, message } };
}

function text(value, max = 200) {
  return typeof value === "string" && value.length > 0 && value.length <= max ? value : null;
}

/** The answer to one message of the panel: a call its grants allow, made as the user. */
async function answer(panel, msg) {
  const { entry, site } = panel;
  const granted = new Set(entry.grantedCapabilities || []);
  const args = msg.args && typeof msg.args === "object" ? msg.args : {};
  const collection = text(args.collection, 64);
  const needItems = () => (collection && granted.has(`items:${collection}`) ? null
    : refuse("PERMISSION_DENIED", `The extension is not granted items:${collection || "?"} in this site`));
  switch (msg.call) {
    case "context":
      return { data: { site, extension: entry.extension, version: entry.version, panel: entry.id,
        language: document.documentElement.lang, grantedCapabilities: [...granted] } };
    case "items.list": {
      const denied = needItems();
      if (denied) return denied;
      const limit = Math.min(Math.max(Number(args.limit) || 20, 1), MAX_LIMIT);
      const params = { limit, offset: Math.max(Number(args.offset) || 0, 0), sort: text(args.sort), search: text(args.search) };
      return { data: await data("GET", `/items/${encodeURIComponent(collection)}`, { site, params }) };
    }
    case "items.read": {
      const denied = needItems();
      if (denied) return denied;
      const id = text(String(args.id ?? ""), 100);
      if (!id) return refuse("VALIDATION_FAILED", "'id' names the item");
      return { data: await data("GET", `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`, { site }) };
    }
    case "route": {
      if (!granted.has("routes")) return refuse("PERMISSION_DENIED", "The extension is not granted routes in this site");
      const method = String(args.method || "GET").toUpperCase();
      const parts = (text(args.path, 500) || "").split("/").filter(Boolean);
      if (!["GET", "POST"].includes(method) || !parts.length || parts.some((p) => p === "." || p === ".." || /[?#]/.test(p))) {
        return refuse("VALIDATION_FAILED", "A route call is GET or POST on a path of the extension's own routes");
      }
      const path = `/ext/${encodeURIComponent(entry.extension)}/${parts.map(encodeURIComponent).join("/")}`;
      const params = args.params && typeof args.params === "object" ? args.params : undefined;
      return { data: await data(method, path, { site, params, body: method === "POST" ? (args.body ?? {}) : undefined }) };
    }
    default:
      return refuse("EXTENSION_REFUSED", `The studio offers panels no call '${String(msg.call).slice(0, 50)}'`);
  }
}

async function onMessage(event) {
  const panel = active;
  if (!panel) return;
  if (!panel.frame.isConnected) {
    active = null;
    return;
  }
  // Only the panel's own frame, in its opaque origin, is heard; any other window is ignored.
  if (event.source !== panel.frame.contentWindow || event.origin !== "null") return;
  const msg = event.data;
  if (!msg || typeof msg !== "object" || msg.svc !== 1 || !["string", "number"].includes(typeof msg.id)) return;
  let reply;
  if (panel.inFlight >= MAX_IN_FLIGHT) {
    reply = refuse("RATE_LIMITED", `At most ${MAX_IN_FLIGHT} calls at a time`);
  } else {
    panel.inFlight += 1;
    try {
      reply = await answer(panel, msg);
    } catch (err) {
      if (err instanceof SessionEnded) reply = refuse("UNAUTHENTICATED", "The studio's session ended");
      else if (err instanceof ApiError) reply = refuse(err.code || `HTTP ${err.status}`, err.message);
      else reply = refuse("INTERNAL", "The studio could not make the call");
    } finally {
      panel.inFlight -= 1;
    }
  }
  // An opaque origin cannot be named as the target: the reply goes to that frame's window only.
  if (active === panel) event.source.postMessage({ svc: 1, id: msg.id, ...reply }, "*");
}
window.addEventListener("message", onMessage);

export async function renderPanel(shell, extension, panelId) {
  const site = shell.site;
  const entries = await data("GET", "/extensions/ui/manifest", { site });
  const entry = entries.find((e) => e.extension === extension && e.id === panelId && e.src);
  if (!entry) throw new ApiError(404, []);
  document.title = `${entry.label} · ${shell.title}`;
  const lang = document.documentElement.lang || "en";
  const frame = h("iframe", { title: entry.label, sandbox: "allow-scripts", referrerpolicy: "no-referrer",
    class: "ext-panel", src: `${entry.src}?lang=${encodeURIComponent(lang)}` });
  active = { frame, entry, site, inFlight: 0 };
  const grants = (entry.grantedCapabilities || []).filter((c) => c !== "ui");
  replace(shell.main, h("h1", {}, entry.label),
    h("p", { class: "muted" }, t("ext.panelFrom", { extension: entry.extension, version: entry.version })),
    h("details", { class: "ext-panel-grants" }, h("summary", {}, t("ext.panelMay")), capabilityList(grants, t("ext.panelMay"))),
    frame);
}
// -- end ext_ui
