// -- schema: the site admin's schema screens (docs/schema.md), all through the public API:
//   #/s/<site>/schema                          the collections: create, open, restore the deleted
//   #/s/<site>/schema/c/<name>                 one collection: its meta, its fields, delete (schema_collection.js)
//   #/s/<site>/schema/c/<name>/new-field       a new field; .../f/<field> one field (schema_field.js)
//   #/s/<site>/schema/relations                the relations with their onDelete (schema_relations.js)
//   #/s/<site>/schema/config                   the config manifest: export, import with its diff (schema_config.js)
// Members without admin rights have no link to them, and each screen answers "Only site admins...".

import { data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { renderCollectionSchema } from "./schema_collection.js";
import { renderConfig } from "./schema_config.js";
import { renderFieldForm } from "./schema_field.js";
import { renderRelations } from "./schema_relations.js";
import { apiProblem, flash, takeFlash } from "./schema_status.js";

/** The schema screen named by the hash parts after "schema". */
export async function renderSchema(shell, parts, { onChanged }) {
  document.title = `${t("schema.heading")} · ${shell.title}`;
  if (!shell.ctx.permissions.admin) {
    return replace(shell.main, h("h1", {}, t("schema.heading")), h("p", { role: "alert", class: "error" }, t("schema.adminsOnly")));
  }
  const env = { shell, site: shell.site, onChanged };
  if (parts[0] === "relations") return renderRelations(env);
  if (parts[0] === "config") return renderConfig(env);
  if (parts[0] === "c" && parts[1] && parts[2] === "new-field") return renderFieldForm(env, parts[1], null);
  if (parts[0] === "c" && parts[1] && parts[2] === "f" && parts[3]) return renderFieldForm(env, parts[1], parts[3]);
  if (parts[0] === "c" && parts[1]) return renderCollectionSchema(env, parts[1]);
  return renderCollections(env);
}

function createForm(env) {
  const ids = { name: uid("c-name"), label: uid("c-label"), icon: uid("c-icon"), single: uid("c-single") };
  const name = h("input", { id: ids.name, type: "text", required: true, maxlength: "64", pattern: "[A-Za-z][A-Za-z0-9_]*", autocomplete: "off" });
  const label = h("input", { id: ids.label, type: "text", maxlength: "200" });
  const icon = h("input", { id: ids.icon, type: "text", maxlength: "64" });
  const single = h("input", { id: ids.single, type: "checkbox" });
  const status = h("p", { role: "status" });
  return h("form", { class: "schema-form", "aria-labelledby": `${ids.name}-h`, onsubmit: async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), singleton: single.checked };
    if (label.value.trim()) body.displayName = label.value.trim();
    if (icon.value.trim()) body.icon = icon.value.trim();
    try {
      await data("POST", "/collections", { site: env.site, body });
      flash(t("schema.created", { name: body.name }));
      await env.onChanged();
      go(siteHash(env.site, "schema", "c", body.name));
    } catch (err) {
      replace(status, apiProblem(err));
      name.focus();
    }
  } },
  h("h2", { id: `${ids.name}-h` }, t("schema.createHeading")),
  h("div", { class: "field" }, h("label", { for: ids.name }, t("schema.name")), name),
  h("div", { class: "field" }, h("label", { for: ids.label }, t("schema.displayName")), label),
  h("div", { class: "field" }, h("label", { for: ids.icon }, t("schema.icon")), icon),
  h("div", { class: "field check" }, h("label", { for: ids.single }, t("schema.singleton")), single),
  h("div", { class: "tools" }, h("button", { type: "submit" }, t("schema.create"))), status);
}

async function renderCollections(env) {
  const all = await data("GET", "/collections", { site: env.site, params: { deleted: "true" } });
  const live = all.filter((c) => !c.deletedAt);
  // The most recently deleted one of each name is what a restore brings back.
  const deleted = new Map();
  for (const c of all.filter((x) => x.deletedAt).sort((a, b) => a.deletedAt.localeCompare(b.deletedAt))) deleted.set(c.name, c);
  const status = h("p", { role: "status" }, takeFlash());
  const restore = async (name) => {
    try {
      const restored = await data("POST", `/collections/${encodeURIComponent(name)}/restore`, { site: env.site });
      const skipped = (restored.meta && restored.meta.skippedRelations) || [];
      flash(t("schema.restored", { name }) + (skipped.length ? ` ${t("schema.skippedRelations", { count: skipped.length })}` : ""));
      await env.onChanged();
      go(siteHash(env.site, "schema"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  replace(env.shell.main,
    h("h1", {}, t("schema.heading")),
    h("ul", { class: "tools schema-links" },
      h("li", {}, h("a", { href: siteHash(env.site, "schema", "relations") }, t("schema.relations"))),
      h("li", {}, h("a", { href: siteHash(env.site, "schema", "config") }, t("schema.config")))),
    status,
    h("table", {}, h("caption", {}, t("schema.collectionsCaption")),
      h("thead", {}, h("tr", {}, ["schema.name", "schema.displayName", "schema.icon", "schema.kind"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, live.map((c) => h("tr", {},
        h("td", {}, h("a", { href: siteHash(env.site, "schema", "c", c.name), "aria-label": t("schema.open", { name: c.name }) }, c.name)),
        h("td", {}, c.displayName || ""), h("td", {}, c.icon || ""),
        h("td", {}, c.singleton ? t("schema.singleton") : t("schema.collection")))))),
    deleted.size ? h("section", { "aria-labelledby": "schema-deleted-h" },
      h("h2", { id: "schema-deleted-h" }, t("schema.deletedHeading")),
      h("ul", {}, [...deleted.values()].map((c) => h("li", {}, `${c.name} `,
        h("span", { class: "muted" }, t("schema.deletedAt", { at: c.deletedAt })), " ",
        h("button", { type: "button", class: "secondary", onclick: () => restore(c.name) }, t("schema.restore", { name: c.name })))))) : null,
    createForm(env));
}
// -- end schema
