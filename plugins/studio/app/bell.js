// The notifications bell (docs/studio.md, "Live"): the unread count on a button in the top bar,
// a panel listing the site's unhandled notifications (GET /notifications?handled=false), each
// marked read with PATCH /notifications/:id { handled: true }; a notification frame of the
// realtime channel adds itself at the top while the page is open, and is announced.

import { ApiError, call, data, session } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { onFrame } from "./live.js";

const LIMIT = 20;

export function notificationBell(site) {
  const panelId = uid("notifications");
  let items = [];
  let total = 0;
  let loaded = false;
  const button = h("button", { type: "button", class: "bell", "aria-expanded": "false", "aria-controls": panelId });
  const announce = h("p", { class: "visually-hidden", role: "status" });
  const list = h("ul", { class: "notes" });
  const panel = h("section", { id: panelId, class: "notes-panel", "aria-label": t("bell.panel"), hidden: true },
    h("h2", {}, t("bell.heading")), list);

  const draw = () => {
    replace(button, t(total ? "bell.unread" : "bell.none", { count: total }));
    replace(list, items.length
      ? items.map((n) => h("li", { class: `note ${n.severity || "info"}` },
        h("p", { class: "note-title" }, n.title),
        n.body ? h("p", {}, n.body) : null,
        h("p", { class: "muted" }, n.ts ? new Date(n.ts).toLocaleString() : ""),
        // -- studio41: marking read is the site's state, the studio realm's to change
        session.realm === "frontend" ? null : h("button", { type: "button", "aria-label": t("bell.markReadOf", { title: n.title }),
          onclick: () => markRead(n) }, t("bell.markRead"))))
      : h("li", {}, t("bell.empty")));
  };
  const load = async () => {
    try {
      const { body } = await call("GET", "/notifications", { site, params: { handled: "false", limit: LIMIT } });
      items = body.data;
      total = (body.meta && body.meta.total) ?? items.length;
      loaded = true;
    } catch (err) {
      if (!(err instanceof ApiError) || (err.status !== 403 && err.status !== 404)) throw err;
      button.hidden = true; // no notifications for this user or server
    }
    draw();
  };
  const markRead = async (note) => {
    const index = items.indexOf(note);
    await data("PATCH", `/notifications/${encodeURIComponent(note.id)}`, { site, body: { handled: true } });
    items = items.filter((n) => n !== note);
    total = Math.max(0, total - 1);
    draw();
    replace(announce, t("bell.marked", { title: note.title }));
    const next = list.querySelectorAll("button")[Math.min(index, items.length - 1)];
    (next || button).focus();
  };
  const toggle = (open) => {
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open && !loaded) load();
  };
  button.addEventListener("click", () => toggle(panel.hidden));
  panel.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    toggle(false);
    button.focus();
  });
  const off = onFrame((frame) => {
    if (!button.isConnected) return off();
    if (frame.type !== "notification" || !frame.notification) return;
    items = [frame.notification, ...items.filter((n) => n.id !== frame.notification.id)].slice(0, LIMIT);
    total += 1;
    draw();
    replace(announce, t("bell.new", { title: frame.notification.title }));
  });
  draw();
  load();
  return { button, panel, announce };
}
