// An item's history (#/s/<site>/c/<collection>/i/<id>/history), the API of docs/items.md (history):
// - revisions, newest first, each with its changes field by field (before, after) from the
//   revision's `delta`, and a button restoring the item as it was after that change
//   (POST .../revert { revisionId });
// - named versions (collections with meta `versioning`): create, edit a version's content,
//   compare it with the main item (GET .../compare), promote it onto the main item, delete.

import { ApiError, data, session } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { fieldsOf } from "./list.js";
import { siteHash } from "./router.js";
import { metaOf } from "./workflow.js";

const PAGE = 20;
const KEY = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const TEXT_TYPES = new Set(["string", "text", "code", "uuid", "hash", "csv", "date", "dateTime", "time", "timestamp"]);

function shown(value) {
  if (value === null || value === undefined || value === "") return h("span", { class: "muted" }, t("history.empty"));
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString(document.documentElement.lang || "en") : "";
}

/** A table of fields with two sides: [[field, left, right], ...]. */
function sides(caption, left, right, rows) {
  return h("table", { class: "diff" },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("history.field")), h("th", { scope: "col" }, left), h("th", { scope: "col" }, right))),
    h("tbody", {}, rows.map(([field, a, b]) => h("tr", {}, h("th", { scope: "row" }, field),
      h("td", { class: "before" }, shown(a)), h("td", { class: "after" }, shown(b))))));
}

export async function renderHistory(shell, collection, id) {
  const site = shell.site;
  const base = `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`;
  const meta = metaOf(shell, collection);
  const mayUpdate = shell.ctx.may(collection, "update");
  const status = h("p", { role: "status", class: "status", tabindex: "-1" });
  // A message after an action whose button went away with a redraw: the keyboard goes on from it.
  const say = (message, focus = false) => {
    replace(status, message);
    if (focus) status.focus();
  };
  const failed = (err) => {
    if (!(err instanceof ApiError)) throw err;
    say(t("history.failed", { message: err.message }));
  };

  // ---- revisions
  const revisionsList = h("ol", { class: "revisions" });
  const more = h("button", { type: "button", hidden: true }, t("history.older"));
  let offset = 0;
  const loadRevisions = async (reset) => {
    if (reset) { offset = 0; replace(revisionsList); }
    const page = await data("GET", `${base}/revisions`, { site, params: { limit: PAGE, offset, staged: "false" } });
    page.forEach((r, i) => revisionsList.append(revisionEntry(r, offset === 0 && i === 0)));
    if (offset === 0 && !page.length) revisionsList.append(h("li", { class: "muted" }, t("history.noRevisions")));
    offset += page.length;
    more.hidden = page.length < PAGE;
  };
  more.addEventListener("click", () => loadRevisions(false).catch(failed));

  const revisionEntry = (r, current) => {
    const headingId = uid("rev");
    const who = r.actor && r.actor.userId ? (session.user && r.actor.userId === session.user.id ? t("history.you") : r.actor.userId) : t("history.system");
    const changes = Object.entries(r.delta || {}).map(([field, c]) => [field, c.from, c.to]);
    const restore = mayUpdate && !current ? h("button", { type: "button", onclick: async () => {
      say(t("history.working"));
      try {
        await data("POST", `${base}/revert`, { site, body: { revisionId: r.id } });
        await loadRevisions(true);
        say(t("history.restored", { when: when(r.createdAt) }), true);
      } catch (err) { failed(err); }
    } }, t("history.restore")) : null;
    return h("li", {}, h("article", { "aria-labelledby": headingId },
      h("h3", { id: headingId }, t(`history.kind.${r.kind}`), " · ", when(r.createdAt), " · ", who,
        current ? h("span", { class: "badge badge-current" }, t("history.current")) : null),
      changes.length ? sides(t("history.changes"), t("history.before"), t("history.after"), changes) : h("p", { class: "muted" }, t("history.noChanges")),
      restore));
  };

  // ---- versions
  const versionsBox = h("div", { class: "versions" });
  const fields = meta.versioning === true ? await fieldsOf(shell, collection) : [];
  const loadVersions = async () => {
    const versions = await data("GET", `${base}/versions`, { site });
    replace(versionsBox, versions.length ? versions.map(versionEntry) : h("p", { class: "muted" }, t("history.noVersions")));
  };

  const versionEntry = (v) => {
    const headingId = uid("ver");
    const detail = h("div", {});
    const compare = async () => {
      const c = await data("GET", `${base}/versions/${encodeURIComponent(v.key)}/compare`, { site });
      replace(detail, c.changes.length
        ? sides(t("history.comparison", { name: v.name }), t("history.main"), t("history.version"), c.changes.map((f) => [f, c.main[f], c.version[f]]))
        : h("p", {}, t("history.same")));
    };
    const promote = async () => {
      say(t("history.working"));
      try {
        const answer = await data("POST", `${base}/versions/${encodeURIComponent(v.key)}/promote`, { site });
        await Promise.all([loadVersions(), loadRevisions(true)]);
        say(t("history.promoted", { name: v.name }) + (answer && answer.mainDiverged ? " " + t("history.diverged") : ""), true);
      } catch (err) { failed(err); }
    };
    const remove = async () => {
      try {
        await data("DELETE", `${base}/versions/${encodeURIComponent(v.key)}`, { site });
        await loadVersions();
        say(t("history.deleted", { name: v.name }), true);
      } catch (err) { failed(err); }
    };
    return h("section", { class: "version", "aria-labelledby": headingId },
      h("h3", { id: headingId }, v.name),
      h("p", { class: "muted" }, t("history.versionKey", { key: v.key, when: when(v.updatedAt) }),
        v.mainChanged ? h("span", { class: "badge badge-diverged" }, t("history.mainChanged")) : null),
      h("div", { class: "tools" },
        h("button", { type: "button", onclick: () => compare().catch(failed) }, t("history.compare")),
        mayUpdate ? h("button", { type: "button", onclick: () => replace(detail, versionForm(v)) }, t("history.edit")) : null,
        mayUpdate ? h("button", { type: "button", onclick: promote }, t("history.promote")) : null,
        mayUpdate ? h("button", { type: "button", class: "secondary", onclick: remove }, t("history.delete")) : null),
      detail);
  };

  // A version's content, one input per field the user may change: text as typed, other types as JSON.
  const versionForm = (v) => {
    const inputs = fields.filter((f) => shell.ctx.may(collection, "update", f.field)).map((f) => {
      const inputId = uid("vfield");
      const value = v.data[f.field];
      const text = TEXT_TYPES.has(f.type) ? value ?? "" : value === null || value === undefined ? "" : JSON.stringify(value);
      const input = h("input", { id: inputId, type: "text", value: text });
      return { f, input, row: h("div", { class: "field" }, h("label", { for: inputId }, f.field), input) };
    });
    const error = h("p", { role: "alert", class: "error" });
    return h("form", { class: "editor", onsubmit: async (event) => {
      event.preventDefault();
      replace(error);
      const changed = {};
      for (const { f, input } of inputs) {
        let value = input.value;
        if (!TEXT_TYPES.has(f.type)) {
          try { value = value.trim() === "" ? null : JSON.parse(value); } catch {
            replace(error, t("history.badValue", { field: f.field }));
            return input.focus();
          }
        }
        if (JSON.stringify(value ?? null) !== JSON.stringify(v.data[f.field] ?? null)) changed[f.field] = value;
      }
      try {
        await data("PATCH", `${base}/versions/${encodeURIComponent(v.key)}`, { site, body: { data: changed } });
        await loadVersions();
        say(t("history.versionSaved", { name: v.name }), true);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        replace(error, t("history.failed", { message: err.message }));
      }
    } }, inputs.map((i) => i.row), error, h("div", { class: "tools" }, h("button", { type: "submit" }, t("history.saveVersion"))));
  };

  const createForm = () => {
    const keyId = uid("vkey");
    const nameId = uid("vname");
    const key = h("input", { id: keyId, type: "text", "aria-required": "true", "aria-describedby": `${keyId}-hint` });
    const name = h("input", { id: nameId, type: "text" });
    return h("form", { class: "tools", novalidate: true, onsubmit: async (event) => {
      event.preventDefault();
      if (!KEY.test(key.value)) {
        key.setAttribute("aria-invalid", "true");
        return key.focus();
      }
      key.removeAttribute("aria-invalid");
      try {
        await data("POST", `${base}/versions`, { site, body: { key: key.value, name: name.value.trim() || key.value } });
        say(t("history.created", { name: name.value.trim() || key.value }));
        key.value = "";
        name.value = "";
        await loadVersions();
      } catch (err) { failed(err); }
    } },
    h("label", { for: keyId }, t("history.key")), key,
    h("span", { id: `${keyId}-hint`, class: "muted" }, t("history.keyHint")),
    h("label", { for: nameId }, t("history.name")), name,
    h("button", { type: "submit" }, t("history.create")));
  };

  const label = (shell.ctx.collections.find((c) => c.name === collection) || {}).displayName || collection;
  const heading = t("history.heading", { collection: label, id });
  document.title = `${heading} · ${shell.title}`;
  const revisionsId = uid("revisions");
  const versionsId = uid("versions");
  replace(shell.main,
    h("h1", {}, heading),
    h("p", {}, h("a", { href: siteHash(site, "c", collection, "i", id) }, t("history.back"))),
    status,
    meta.versioning === true ? h("section", { "aria-labelledby": versionsId },
      h("h2", { id: versionsId }, t("history.versions")),
      mayUpdate ? createForm() : null,
      versionsBox) : null,
    h("section", { "aria-labelledby": revisionsId },
      h("h2", { id: revisionsId }, t("history.revisions")), revisionsList, more));
  await Promise.all([loadRevisions(true), meta.versioning === true ? loadVersions() : null]);
}
