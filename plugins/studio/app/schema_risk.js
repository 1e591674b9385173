// -- schema: before a destructive change (a collection or field dropped, a field's type changed,
// a relation's onDelete widened to cascade) the studio asks the API what it would do: the site's
// schema is exported (GET /config/export?scope=schema), the change is made in that copy, and the
// copy is dry-run (POST /config/import?dryRun=true&mode=replace-managed). The answer's `risk`,
// its changes and its `destructive` list (with `hasData`, asked from the items plugin) are shown
// in a modal dialog, with the number of items whose data the change meets (a total count of
// GET /items); nothing is applied unless the admin confirms.

import { SessionEnded, call, data } from "./api.js";
import { ask, h } from "./dom.js";
import { t } from "./i18n.js";
import { refusal } from "./media.js";

/** The dry run of the site's schema with `change(manifest)` applied to a copy of it. */
export async function dryRun(site, change) {
  const manifest = await data("GET", "/config/export", { site, params: { scope: "schema" } });
  change(manifest);
  manifest.managedScopes = ["schema"];
  return data("POST", "/config/import", { site, params: { dryRun: "true", mode: "replace-managed" }, body: manifest });
}

/** How many live items of `collection` there are (with a value in `field`, when given). */
export async function countItems(site, collection, field) {
  const filter = field ? JSON.stringify({ [field]: { _nnull: true } }) : "";
  const { body } = await call("GET", `/items/${encodeURIComponent(collection)}`,
    { site, params: { limit: 1, fields: "id", meta: "total_count", filter } });
  return (body.meta && body.meta.total) || 0;
}

function changeLine(resource, action, entry) {
  const name = entry.field ? `${entry.collection}.${entry.field}` : entry.collection;
  const keys = entry.changes ? Object.entries(entry.changes).map(([k, v]) => `${k}: ${JSON.stringify(v.from)} → ${JSON.stringify(v.to)}`) : [];
  return h("li", {}, t(`schema.risk.${action}`, { resource: t(`schema.resource.${resource}`), name }),
    keys.length ? ` (${keys.join("; ")})` : "");
}

/** The list of a dry run's changes, its destructive ones marked (shared with the manifest import). */
export function diffView(diff) {
  const lines = [];
  for (const resource of ["collections", "fields", "relations"]) {
    for (const action of ["create", "update", "delete"]) {
      for (const entry of (diff.changes[resource] || {})[action] || []) lines.push(changeLine(resource, action, entry));
    }
  }
  const destructive = (diff.destructive || []).map((d) => h("li", {},
    t("schema.risk.destructiveLine", { action: t(`schema.action.${d.action}`), name: d.field ? `${d.collection}.${d.field}` : d.collection }),
    d.hasData ? ` ${t("schema.risk.hasData")}` : ""));
  return [
    h("p", { class: `risk risk-${diff.risk}` }, t("schema.risk.level", { risk: t(`schema.risk.${diff.risk}`) })),
    lines.length ? h("ul", { "aria-label": t("schema.risk.changes") }, lines) : h("p", {}, t("schema.risk.none")),
    destructive.length ? [h("h3", {}, t("schema.risk.destructive")), h("ul", { "aria-label": t("schema.risk.destructive") }, destructive)] : null,
  ];
}

/** The API's errors of an invalid dry run, each with its path. */
export function errorList(errors) {
  return h("ul", { class: "error", "aria-label": t("schema.risk.errors") },
    errors.map((e) => h("li", {}, `${e.code}: ${e.message}`, e.path && e.path.length ? ` (${e.path.join(" / ")})` : "")));
}

/**
 * Shows what `change` would do and resolves true when the admin applies it. `affected` is
 * `{ collection, field? }`: the items whose data it meets are counted and named.
 */
export async function confirmRisky(site, { title, change, affected }) {
  // A dry run the API cannot answer (an error, not an invalid change) is said, and the admin
  // decides; an invalid change cannot be applied (the REST call would be refused the same way).
  const failed = (err) => {
    if (err instanceof SessionEnded) throw err;
    return { failed: err };
  };
  const [result, count] = await Promise.all([
    dryRun(site, change).catch(failed),
    affected ? countItems(site, affected.collection, affected.field).catch((err) => failed(err) && null) : null,
  ]);
  const valid = Boolean(result.failed || (result.valid && result.diff));
  return ask({
    title, className: "confirm risk-dialog",
    body: [
      result.failed ? h("p", { class: "error" }, t("schema.risk.failed", { reason: refusal(result.failed) }))
        : valid ? diffView(result.diff) : errorList(result.errors),
      count === null ? null : h("p", { role: "status" }, affected.field
        ? t("schema.risk.affectedField", { count, collection: affected.collection, field: affected.field })
        : t("schema.risk.affectedCollection", { count, collection: affected.collection })),
    ],
    choices: [[t("schema.risk.cancel"), false, { class: "secondary" }],
      [t("schema.risk.apply"), true, { class: "danger", disabled: !valid }]],
  });
}
// -- end schema
