// -- ai_ui: the copilot (docs/ai.md) as a side panel on every page of a site, and the approval inbox.
//   The panel: a button in the top bar opens it; each question goes to POST /ai/chat as a stream
//   (Server-Sent Events) with the collection and item of the screen shown (`context`), the
//   model's words appear as they arrive, each tool call is shown with its arguments, and a
//   dangerous skill ends as a pending approval the panel links to.
//   #/s/<site>/ai/approvals[/<id>]   the inbox: requests with Approve and Deny (the API decides who may)

import { ApiError, SessionEnded, data, refresh, session } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { liveScreen } from "./live.js";
import { keepFocus, said, section } from "./releases.js";
import { siteHash } from "./router.js";

/** The collection and item of the screen shown (#/s/<site>/c/<collection>[/i/<id>]), or null. */
export function screenContext() {
  const parts = location.hash.replace(/^#/, "").split("?")[0].split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== "s" || parts[2] !== "c" || !parts[3]) return null;
  return parts[4] === "i" && parts[5] ? { collection: parts[3], item: parts[5] } : { collection: parts[3] };
}

/** One streamed turn: calls `on(event, data)` for each Server-Sent Event of the answer. */
async function stream(site, body, on) {
  const ask = () => fetch("/api/v1/ai/chat", { method: "POST", credentials: "same-origin", body: JSON.stringify({ ...body, stream: true }),
    headers: { Accept: "text/event-stream", "Content-Type": "application/json", "X-Svc-Site": site,
      ...(session.token ? { Authorization: `Bearer ${session.token}` } : {}) } });
  let resp = await ask();
  if (resp.status === 401) {
    if (!(await refresh())) throw new SessionEnded();
    resp = await ask();
  }
  if (!resp.ok) {
    const parsed = await resp.json().catch(() => null);
    throw new ApiError(resp.status, parsed && parsed.errors);
  }
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const lines = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) lines.push(line.slice(5).trimStart());
      }
      if (lines.length) on(event, JSON.parse(lines.join("\n")));
    }
  }
}

function approvalLink(site, id) {
  return h("a", { href: siteHash(site, "ai", "approvals", id) }, t("ai.openApproval"));
}

/** The copilot's button (for the top bar) and its panel (a complementary region beside the page). */
export function copilotPanel(site) {
  const panelId = uid("copilot");
  let conversationId = null;
  const button = h("button", { type: "button", class: "copilot-toggle", "aria-expanded": "false", "aria-controls": panelId }, t("ai.copilot"));
  const where = h("p", { class: "muted" });
  const log = h("ol", { class: "copilot-log", "aria-label": t("ai.conversation") });
  const question = h("textarea", { id: uid("ask"), rows: "3", required: true, maxlength: "4000" });
  const send = h("button", { type: "submit" }, t("ai.send"));
  const status = h("p", { role: "status", class: "visually-hidden" });
  const showWhere = () => {
    if (!panel.isConnected && panel.dataset.shown) return window.removeEventListener("hashchange", showWhere); // a shell since replaced
    const c = screenContext();
    replace(where, c ? t(c.item ? "ai.contextItem" : "ai.contextCollection", c) : t("ai.contextNone"));
  };
  const form = h("form", { "aria-label": t("ai.question"), onsubmit: async (event) => {
    event.preventDefault();
    const message = question.value.trim();
    if (!message) return;
    const context = screenContext();
    question.value = "";
    send.disabled = true;
    log.append(h("li", { class: "copilot-user" }, h("p", {}, h("strong", {}, t("ai.you")), " ", message)));
    let words = h("p", {}); // the model's words since its last tool call
    const turn = h("li", { class: "copilot-answer" }, h("strong", {}, t("ai.copilot")), words);
    log.append(turn);
    replace(status, t("ai.thinking"));
    try {
      await stream(site, { message, ...(conversationId ? { conversationId } : {}), ...(context ? { context } : {}) }, (kind, got) => {
        if (kind === "text") words.append(got.content);
        if (kind === "tool") {
          const before = words;
          words = h("p", {});
          before.after(h("div", { class: "copilot-tool", role: "group", "aria-label": t("ai.toolCall", { skill: got.skill }) },
            h("p", {}, t("ai.toolCall", { skill: got.skill })),
            h("pre", {}, JSON.stringify(got.arguments, null, 1))), words);
        }
        if (kind === "done") {
          conversationId = got.conversationId || conversationId;
          if (!words.textContent && got.message) words.append(got.message);
          if (got.status === "pending_approval") {
            turn.append(h("p", { class: "note", role: "alert" }, t("ai.pending", { skill: got.skill }), " ", approvalLink(site, got.approvalId)));
          }
          replace(status, t("ai.answered"));
        }
        if (kind === "error") turn.append(h("p", { role: "alert", class: "error" }, said(new ApiError(got.status || 500, got.errors))));
      });
    } catch (err) {
      if (err instanceof SessionEnded) throw err;
      turn.append(h("p", { role: "alert", class: "error" }, said(err)));
    } finally {
      send.disabled = false;
    }
  } }, h("label", { for: question.id }, t("ai.ask")), question, send);
  const panel = h("aside", { id: panelId, class: "copilot", "aria-label": t("ai.copilot"), hidden: true },
    h("h2", {}, t("ai.copilot")), where, log, form, status,
    h("p", {}, h("a", { href: siteHash(site, "ai", "approvals") }, t("ai.inbox"))));
  button.addEventListener("click", () => {
    const open = panel.hidden;
    panel.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) {
      panel.dataset.shown = "1";
      showWhere();
      question.focus();
    }
  });
  window.addEventListener("hashchange", showWhere);
  return { button, panel };
}

const STATUSES = ["pending", "approved", "rejected", "failed", "expired", "all"];

/** The approval inbox: the site's requests (an approver) or one's own (a member); decide each once. */
export async function renderApprovals(shell, id, query) {
  const site = shell.site;
  document.title = `${t("ai.inbox")} · ${shell.title}`;
  const status = id ? "all" : query.get("status") || "pending";
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const body = h("div");
  const filter = h("select", { id: uid("ai-status"), onchange: () => { location.hash = siteHash(site, "ai", "approvals") + `?status=${filter.value}`; } },
    STATUSES.map((s) => h("option", { value: s, selected: s === status }, t(`ai.status.${s}`))));
  const draw = async () => {
    let rows = await data("GET", "/ai/approvals", { site, params: { status, limit: 100 } });
    if (id) rows = rows.filter((r) => r.id === id);
    const decide = async (row, decision) => {
      replace(alert);
      try {
        await data("POST", `/ai/approvals/${encodeURIComponent(row.id)}/decide`, { site, body: { decision } });
        replace(flash, t(decision === "approved" ? "ai.approvedNote" : "ai.deniedNote", { message: row.message }));
      } catch (err) {
        replace(alert, said(err));
      }
      await draw();
    };
    const redraw = () => replace(body, rows.length ? h("table", { class: "files-table" }, h("caption", {}, t("ai.requests")),
      h("thead", {}, h("tr", {}, [t("ai.request"), t("ai.skill"), t("ai.statusLabel"), t("ai.requestedAt"), t("ai.decision")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: siteHash(site, "ai", "approvals", r.id) }, r.message)),
        h("td", {}, h("code", {}, r.skill)), h("td", {}, t(`ai.status.${r.status}`),
          r.error ? ` (${r.error.code || ""})` : ""),
        h("td", {}, new Date(r.createdAt).toLocaleString(document.documentElement.lang)),
        h("td", {}, r.status === "pending" ? [
          h("button", { type: "button", "aria-label": t("ai.approveOf", { message: r.message }), onclick: () => decide(r, "approved") }, t("ai.approve")), " ",
          h("button", { type: "button", class: "quiet", "aria-label": t("ai.denyOf", { message: r.message }), onclick: () => decide(r, "rejected") }, t("ai.deny"))]
          : r.decidedBy ? t("ai.decidedBy", { who: r.decidedBy }) : "")))))
      : h("p", {}, id ? t("error.notFound") : t("ai.noRequests")));
    keepFocus(body, redraw);
  };
  await draw();
  // -- flows43: live: a request (or an approved call's failure) told to this approver redraws the
  // list; the list holds no input of its own, and the status filter outside it is left alone.
  liveScreen("approvals", (frame) => frame.type === "notification" && /^ai\.approval\./.test((frame.notification || {}).kind || ""), draw);
  replace(shell.main, h("h1", {}, t("ai.inbox")),
    id ? h("p", {}, h("a", { href: siteHash(site, "ai", "approvals") }, t("ai.allRequests")))
      : h("div", { class: "me-field" }, h("label", { for: filter.id }, t("ai.statusLabel")), filter),
    alert, flash, section(t("ai.requests"), body));
}
