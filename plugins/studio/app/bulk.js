// Bulk actions on the selected items of a list: delete them, or set the collection's status field
// (`status_field` of its meta) to one value. The API writes one item per request (docs/items.md:
// PATCH and DELETE take one item each), so each selected item is one call; the items the API
// refuses are named with the API's own error message, the others are done.

import { ApiError, call } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { releasePicker } from "./releases_pick.js"; // -- releases

const STRUCTURAL_STATUSES = ["draft", "published", "archived"];

/** The status field of a collection and the values to offer for it (null: none to offer). */
export function statusOf(meta, fields) {
  const name = (meta && (meta.status_field || (meta.meta && meta.meta.status_field))) || null;
  if (!name) return null;
  const field = fields.find((f) => f.field === name);
  const choices = field && field.options && Array.isArray(field.options.choices) ? field.options.choices : null;
  const values = choices
    ? choices.map((c) => (c !== null && typeof c === "object" ? { value: c.value, text: String(c.text ?? c.value) } : { value: c, text: String(c) }))
    : STRUCTURAL_STATUSES.map((v) => ({ value: v, text: v }));
  return { name, values };
}

async function each(ids, request) {
  const failed = [];
  for (const id of ids) {
    try {
      await request(id);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      failed.push({ id, message: err.message, code: err.code });
    }
  }
  return failed;
}

function outcome(done, total, failed, verb) {
  if (!failed.length) return { kind: "status", text: t(`bulk.${verb}Done`, { count: done }) };
  const reasons = [...new Set(failed.map((f) => f.message))].join(" ");
  return { kind: "alert", text: t(`bulk.${verb}Refused`, { failed: failed.length, total, ids: failed.map((f) => f.id).join(", "), reasons }) };
}

/**
 * The bulk bar: how many are selected, Delete selected (asked to confirm first), and, when the
 * collection has a status field the user may update, a status to set. `selected()` gives the ids;
 * `done(flash)` redraws the list with a message.
 */
export function bulkBar({ shell, collection, status, mayDelete, mayUpdate, selected, done }) {
  const site = shell.site;
  const path = (id) => `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`;
  const count = h("p", { role: "status", class: "count" }, t("bulk.none"));
  const confirmArea = h("div", { class: "confirm" });
  const buttons = [];
  const deleteButton = mayDelete ? h("button", { type: "button", disabled: true, onclick: () => {
    const ids = selected();
    const yes = h("button", { type: "button", onclick: async () => {
      replace(confirmArea, h("p", { role: "status" }, t("bulk.working")));
      const failed = await each(ids, (id) => call("DELETE", path(id), { site }));
      done(outcome(ids.length - failed.length, ids.length, failed, "delete"));
    } }, t("bulk.confirmDelete", { count: ids.length }));
    const no = h("button", { type: "button", class: "quiet", onclick: () => { replace(confirmArea); deleteButton.focus(); } }, t("bulk.cancel"));
    replace(confirmArea, h("div", { role: "group", "aria-label": t("bulk.confirmLabel") },
      h("p", {}, t("bulk.deleteQuestion", { count: ids.length })), yes, no));
    yes.focus();
  } }, t("bulk.delete")) : null;
  if (deleteButton) buttons.push(deleteButton);
  let statusPart = null;
  if (status && mayUpdate) {
    const id = uid("status");
    const select = h("select", { id }, status.values.map((v, i) => h("option", { value: String(i) }, v.text)));
    const apply = h("button", { type: "button", disabled: true, onclick: async () => {
      const ids = selected();
      const value = status.values[Number(select.value)].value;
      replace(confirmArea, h("p", { role: "status" }, t("bulk.working")));
      const failed = await each(ids, (one) => call("PATCH", path(one), { site, body: { [status.name]: value } }));
      done(outcome(ids.length - failed.length, ids.length, failed, "status"));
    } }, t("bulk.setStatus"));
    buttons.push(apply);
    statusPart = h("span", { class: "set-status" }, h("label", { for: id }, t("bulk.statusLabel", { field: status.name })), select, apply);
  }
  // -- releases: add the selection to a release (members the releases API serves)
  const picker = shell.ctx.releases ? releasePicker({ shell, collection, status, selected }) : null;
  if (picker) buttons.push(picker.button);
  // -- end releases
  const el = h("div", { class: "bulk", role: "group", "aria-label": t("bulk.label") }, count, deleteButton, statusPart,
    picker && picker.el, confirmArea); // releases: picker
  return {
    el,
    /** Called when the selection changes. */
    update(n) {
      replace(count, n ? t("bulk.selected", { count: n }) : t("bulk.none"));
      for (const b of buttons) b.disabled = n === 0;
      replace(confirmArea);
      if (picker) picker.reset(); // -- releases
    },
  };
}
