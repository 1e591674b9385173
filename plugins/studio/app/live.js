// The realtime channel (docs/realtime.md): one WebSocket per open site, opened with a one-use
// ticket (POST /realtime/ticket; a member of the subscriber role, whom the studio ticket refuses,
// takes an audience ticket), re-opened with a new ticket after a drop. Event frames are signals
// only, and the server sends a socket only those of items its user may read: whoever listens
// re-fetches through the REST API, which applies the user's permissions. A server without the
// realtime plugin (404) simply gets no live updates.

import { ApiError, data, session } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js"; // -- studio42

const listeners = new Set(); // fn(frame)
const states = new Set(); // fn(on: boolean): every wanted collection subscribed
let conn = null; // { site, ws, wanted: Set, confirmed: Set, stopped, retry }

function isOn() {
  return Boolean(conn && conn.ws && conn.ws.readyState === WebSocket.OPEN
    && [...conn.wanted].every((c) => conn.confirmed.has(c)));
}

function report() {
  const on = isOn();
  for (const fn of states) fn(on);
}

async function open(c) {
  if (c.stopped) return;
  let ticket;
  try {
    // -- studio41: the frontend realm (the subscriber role) takes an audience ticket
    const kind = session.realm === "frontend" ? "audience-ticket" : "ticket";
    ticket = (await data("POST", `/realtime/${kind}`, { site: c.site })).ticket;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) return; // no live updates
    return later(c);
  }
  if (c.stopped) return;
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/api/v1/realtime?ticket=${encodeURIComponent(ticket)}`);
  c.ws = ws;
  ws.onopen = () => {
    c.retry = 0;
    for (const collection of c.wanted) ws.send(JSON.stringify({ type: "subscribe", collection }));
    report();
  };
  ws.onmessage = ({ data: raw }) => {
    let frame;
    try { frame = JSON.parse(raw); } catch { return; }
    if (frame.type === "subscribed") c.confirmed.add(frame.collection);
    if (frame.type === "subscribed" || frame.type === "error") return report();
    for (const fn of listeners) fn(frame);
  };
  ws.onclose = () => {
    if (c.ws === ws) c.ws = null;
    c.confirmed.clear();
    report();
    later(c);
  };
}

function later(c) {
  if (c.stopped) return;
  c.retry = Math.min((c.retry || 0) + 1, 6);
  setTimeout(() => open(c), 500 * 2 ** c.retry);
}

/** Open the site's channel (closing another site's). */
export function startLive(site) {
  if (conn && conn.site === site && !conn.stopped) return;
  stopLive();
  conn = { site, ws: null, wanted: new Set(), confirmed: new Set(), stopped: false, retry: 0 };
  open(conn);
}

export function stopLive() {
  if (!conn) return;
  conn.stopped = true;
  if (conn.ws) conn.ws.close();
  conn = null;
  report();
}

/** Ask for the events of a collection (kept while the site is open). */
export function subscribe(collection) {
  if (!conn || conn.wanted.has(collection)) return;
  conn.wanted.add(collection);
  if (conn.ws && conn.ws.readyState === WebSocket.OPEN) conn.ws.send(JSON.stringify({ type: "subscribe", collection }));
  report();
}

/** fn(frame) for every event, notification and lagged frame; returns the unsubscribe. */
export function onFrame(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** Keep `el`'s text as text(on) while it is in the page (dropped once it left it). */
export function showState(el, text) {
  let shown = false;
  const off = onState((on) => {
    if (el.isConnected) shown = true;
    else if (shown) return off();
    replace(el, text(on));
  });
}

/** fn(on) whenever the channel's state changes: on = connected and subscribed. */
export function onState(fn) {
  states.add(fn);
  fn(isOn());
  return () => states.delete(fn);
}

let listScreen = 0; // the list screen being watched; an older one's listener stops

/** A list screen: rerender() (a re-fetch) when an item of its collection changes, while the URL
 * is the same; writes arriving during a re-fetch give one more, not one each. */
export function liveList(collection, rerender) {
  subscribe(collection);
  const hash = location.hash;
  const screen = ++listScreen;
  let busy = false;
  let again = false;
  const off = onFrame(async (frame) => {
    if (screen !== listScreen || location.hash !== hash) return off();
    if (!((frame.type === "event" && frame.collection === collection) || frame.type === "lagged")) return;
    if (busy) { again = true; return; }
    busy = true;
    try {
      do { again = false; await rerender(); } while (again && screen === listScreen && location.hash === hash);
    } finally {
      busy = false;
    }
  });
}

// -- studio42: a live redraw never drops what the user is typing. A control the user changed
// (an input or change event since it was drawn) holds its screen's live redraws until its form
// is submitted or the screen is drawn again by the user's own action; meanwhile a notice says
// the data changed elsewhere, with a button that redraws (dropping the unsaved input).
// A list's selection boxes (data-pick) are the list's own hold (list.js), not counted here.
const touched = new WeakSet();
document.addEventListener("input", (event) => touched.add(event.target), true);
document.addEventListener("change", (event) => touched.add(event.target), true);
document.addEventListener("submit", (event) => {
  for (const el of event.target.elements) touched.delete(el);
}, true);

/** True while `root` holds input the user changed and has not submitted. */
export function unsaved(root) {
  return [...root.querySelectorAll("input, select, textarea")]
    .some((el) => touched.has(el) && !el.hasAttribute("data-pick"));
}

/** A live redraw of `root`: run `redraw` now, or, while `root` holds unsaved input, put a notice
 * ("changed elsewhere") after `root`'s heading (its first child) instead; its button redraws.
 * True when it redrew. */
export async function liveRedraw(root, redraw) {
  const old = root.querySelector(":scope > .stale");
  if (!unsaved(root)) {
    if (old) old.remove();
    await redraw();
    return true;
  }
  if (old) return false;
  const notice = h("p", { role: "status", class: "notice stale" }, t("live.elsewhere"), " ",
    h("button", { type: "button", onclick: () => redraw() }, t("live.showChanges")));
  root.insertBefore(notice, root.firstElementChild ? root.firstElementChild.nextSibling : null);
  return false;
}
// -- end studio42

// -- flows43: screens other than lists redrawn on the frames they name (a dashboard's panels on
// their collections' events, the approval inbox on approval notifications)
const screens = new Map(); // a screen's kind -> the number of its newest drawing (an older one's listener stops)

/** rerender() when `match(frame)` (or after a lagged frame), while the URL is the same and no
 * newer screen of this `kind` was drawn; frames arriving during a redraw give one more, not one each. */
export function liveScreen(kind, match, rerender) {
  const hash = location.hash;
  const mine = (screens.get(kind) || 0) + 1;
  screens.set(kind, mine);
  const current = () => screens.get(kind) === mine && location.hash === hash;
  let busy = false;
  let again = false;
  const off = onFrame(async (frame) => {
    if (!current()) return off();
    if (!(frame.type === "lagged" || match(frame))) return;
    if (busy) { again = true; return; }
    busy = true;
    try {
      do { again = false; await rerender(); } while (again && current());
    } finally {
      busy = false;
    }
  });
  return off;
}
// -- end flows43
