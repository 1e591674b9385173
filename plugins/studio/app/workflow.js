// The editorial workflow in the studio (docs/releases-and-editorial.md): the review panel under an
// item's editor, whose buttons are exactly the transitions the API says the user may take now
// (GET /editorial/:c/:id `transitions`), and the status badges of a list (GET /editorial/states).

import { ApiError, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { siteHash } from "./router.js";
import { liveRedraw, onFrame, subscribe } from "./live.js"; // -- studio41

const enc = encodeURIComponent;

export function metaOf(shell, collection) {
  const found = shell.ctx.collections.find((c) => c.name === collection);
  return (found && found.meta) || {};
}

// The workflow's routes answer 404 when the editorial plugin is off and 403 to the frontend
// realm: the studio then shows no workflow, and nothing breaks.
async function unavailable(promise) {
  try {
    return await promise;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) return null;
    throw err;
  }
}

/** A badge naming a state ("in_review" shows "In review"); its class gives its colour. */
export function badge(kind, value) {
  const key = `${kind}.${value}`;
  const text = t(key);
  return h("span", { class: `badge badge-${String(value).replace(/[^a-z_]/g, "")}` }, text === key ? String(value) : text);
}

/**
 * The list's status column (called by list.js once its table is drawn): the item's `status`,
 * and for a collection with the workflow its editorial state, as badges. Rows are matched to
 * `items` by position in the table's body.
 */
export async function addStatusColumn(shell, collection, items, table) {
  if (!items.length) return;
  const editorial = metaOf(shell, collection).editorialWorkflow === true;
  const hasStatus = items.some((item) => typeof item.status === "string");
  if (!editorial && !hasStatus) return;
  const states = new Map();
  if (editorial) {
    const ids = items.map((item) => String(item.id)).join(",");
    const found = await unavailable(data("GET", "/editorial/states", { site: shell.site, params: { collection, ids } }));
    for (const s of found || []) states.set(s.itemId, s.state);
  }
  const head = table.querySelector("thead tr");
  if (head) head.append(h("th", { scope: "col" }, t("history.status")));
  const rows = table.querySelectorAll("tbody tr");
  items.forEach((item, i) => {
    if (!rows[i]) return;
    const state = states.get(String(item.id));
    // An editorial item shows its review state, and its status once it is more than a draft.
    const status = typeof item.status === "string" && !(state && item.status === "draft") ? item.status : null;
    rows[i].append(h("td", { class: "badges" }, state ? badge("review", state) : null, status ? badge("status", status) : null));
  });
}

/** The review panel of one item, appended to the editor's screen (only for editorial collections). */
export async function renderReviewPanel(shell, collection, id) {
  const main = shell.main;
  // The editor's heading: when it is gone, the user moved on to another screen meanwhile.
  const screen = main.firstElementChild;
  const moved = () => Boolean(screen) && !screen.isConnected;
  const historyLink = h("p", {}, h("a", { href: siteHash(shell.site, "c", collection, "i", id, "history") }, t("history.open")));
  if (metaOf(shell, collection).editorialWorkflow !== true) {
    main.append(historyLink);
    return;
  }
  const headingId = uid("review");
  const section = h("section", { class: "review", "aria-labelledby": headingId });
  const status = h("p", { role: "status", class: "status" });
  const path = `/editorial/${enc(collection)}/${enc(id)}`;

  const draw = async (message = "") => {
    const info = await unavailable(data("GET", path, { site: shell.site }));
    if (!info || moved()) return section.remove();
    const parts = [h("h2", { id: headingId, tabindex: "-1" }, t("history.review")),
      h("p", {}, t("history.reviewState"), " ", badge("review", info.state))];
    const review = info.review;
    if (review && review.state === "rejected" && review.reason) parts.push(h("p", {}, t("history.rejectedBecause", { reason: review.reason })));
    if (info.transitions.includes("submit-review")) parts.push(await submitForm(shell, collection, id, path, act));
    if (info.transitions.includes("approve")) {
      parts.push(h("div", { class: "tools" }, h("button", { type: "button", onclick: () => act("approve", undefined, t("history.approved")) }, t("history.approve"))));
    }
    if (info.transitions.includes("reject")) parts.push(rejectForm(act));
    replace(section, parts, status);
    // A live redraw (message null) keeps what the panel said last (its own transition's outcome).
    replace(status, message ?? status.textContent);
    if (!section.isConnected) main.insertBefore(section, historyLink.isConnected ? historyLink : null);
  };

  // One transition, then the panel again (its buttons are the API's answer for the new state).
  async function act(transition, body, done) {
    replace(status, t("history.working"));
    try {
      await data("POST", `${path}/${transition}`, { site: shell.site, body });
      await draw(done);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      // The item may have moved on (an edit sends it back to draft): show its state as it is now.
      await draw(t("history.failed", { message: err.message }));
    }
    // The button pressed is gone with the old panel: the keyboard goes on from its heading.
    const heading = document.getElementById(headingId);
    if (heading) heading.focus();
  }

  await draw();
  // Last, so a screen showing the link has its panel settled (drawn, or left out).
  if (!moved()) main.append(historyLink);
  if (section.isConnected) followChanges(collection, id, moved, () => draw(null));
}

// -- studio41: the panel is read again at once after a save in this editor (an edit sends a
// reviewed item back to draft) and when the realtime channel signals a change of the item
// elsewhere (an edit, or a transition: action "review"); several signals during one read give
// one more read, not one each. Focus inside the panel goes to its heading after a redraw.
function followChanges(collection, id, moved, redraw) {
  let busy = false;
  let again = false;
  const refresh = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try {
      do {
        again = false;
        const section = document.querySelector("section.review");
        const focused = Boolean(section && section.contains(document.activeElement));
        // -- studio42: a reviewer chosen or a reason typed holds the redraw (a notice offers it)
        const drawn = section ? await liveRedraw(section, redraw) : (await redraw(), true);
        const heading = drawn && focused && document.querySelector("section.review h2");
        if (heading) heading.focus();
      } while (again && !moved());
    } finally {
      busy = false;
    }
  };
  const ours = (c, i) => c === collection && String(i) === String(id);
  const onSaved = (event) => {
    if (moved()) return document.removeEventListener("studio:saved", onSaved);
    if (ours(event.detail.collection, event.detail.id)) refresh();
  };
  document.addEventListener("studio:saved", onSaved);
  subscribe(collection);
  const off = onFrame((frame) => {
    if (moved()) return off();
    if (frame.type === "lagged" || (frame.type === "event" && ours(frame.collection, frame.itemId))) refresh();
  });
}
// -- end studio41

async function submitForm(shell, collection, id, path, act) {
  const reviewers = await data("GET", "/editorial/reviewers", { site: shell.site, params: { collection, item: id } });
  if (!reviewers.length) return h("p", {}, t("history.noReviewers"));
  const selectId = uid("reviewer");
  const select = h("select", { id: selectId, required: true },
    reviewers.map((r) => {
      const name = [r.firstName, r.lastName].filter(Boolean).join(" ");
      return h("option", { value: r.id }, name ? `${name} (${r.email})` : r.email);
    }));
  return h("form", { class: "tools", onsubmit: (event) => {
    event.preventDefault();
    act("submit-review", { reviewerId: select.value }, t("history.submitted"));
  } }, h("label", { for: selectId }, t("history.reviewer")), select, h("button", { type: "submit" }, t("history.submit")));
}

function rejectForm(act) {
  const reasonId = uid("reason");
  const hint = h("p", { id: `${reasonId}-error`, class: "field-error" });
  const reason = h("textarea", { id: reasonId, rows: "2", "aria-required": "true", "aria-describedby": hint.id });
  return h("form", { class: "reject", novalidate: true, onsubmit: (event) => {
    event.preventDefault();
    if (!reason.value.trim()) {
      reason.setAttribute("aria-invalid", "true");
      replace(hint, t("history.reasonNeeded"));
      return reason.focus();
    }
    act("reject", { reason: reason.value.trim() }, t("history.rejected"));
  } }, h("label", { for: reasonId }, t("history.reason")), reason, hint,
  h("div", { class: "tools" }, h("button", { type: "submit" }, t("history.reject"))));
}
