// -- schema: one collection's screen: its meta (display name, icon, note, display template,
// folder, status and sort fields, singleton, editorial workflow, personal data, versioning) saved
// with PATCH /collections/:name; its fields, each opened in schema_field.js or deleted; and the
// collection's soft delete. Deleting a field or the collection shows the API's dry run first
// (schema_risk.js).

import { call, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { confirmRisky } from "./schema_risk.js";
import { apiProblem, flash, takeFlash } from "./schema_status.js";
import { ICON_NAMES } from "./icons.js"; // -- studio42

const CHECKS = ["singleton", "editorialWorkflow", "requireSeparateReviewer", "personalData", "versioning"];

function text(id, value, attrs = {}) {
  return h("input", { id, type: "text", value: value || "", ...attrs });
}

/** A select of the collection's fields (and its structural column `own`), or none. */
function fieldSelect(id, fields, own, value) {
  const names = [own, ...fields.map((f) => f.field)];
  return h("select", { id },
    h("option", { value: "" }, t("schema.noField")),
    names.map((n) => h("option", { value: n, selected: n === value }, n)));
}

function metaForm(env, c, fields) {
  const meta = c.meta || {};
  const ids = Object.fromEntries(["label", "icon", "note", "template", "group", "status", "sort", ...CHECKS].map((k) => [k, uid(`m-${k}`)]));
  const inputs = {
    displayName: text(ids.label, c.displayName, { maxlength: "200" }),
    icon: text(ids.icon, c.icon, { maxlength: "64", list: `${ids.icon}-names` }), // -- studio42: the shipped icons offered
    note: h("textarea", { id: ids.note, rows: "2", maxlength: "2000" }, c.note || ""),
    display_template: text(ids.template, meta.display_template, { placeholder: "{{ title }}" }),
    group: text(ids.group, meta.group),
    status_field: fieldSelect(ids.status, fields, "status", c.status_field),
    sort_field: fieldSelect(ids.sort, fields, "sort", c.sort_field),
  };
  const checks = Object.fromEntries(CHECKS.map((k) => [k, h("input", { id: ids[k], type: "checkbox", checked: Boolean(c[k]) })]));
  const status = h("p", { role: "status" });
  const row = (id, key, input) => h("div", { class: "field" }, h("label", { for: id }, t(key)), input);
  return h("form", { class: "schema-form", "aria-labelledby": `${ids.label}-h`, onsubmit: async (event) => {
    event.preventDefault();
    const value = (input) => input.value.trim() || null;
    const body = {
      displayName: value(inputs.displayName), icon: value(inputs.icon), note: value(inputs.note),
      status_field: value(inputs.status_field), sort_field: value(inputs.sort_field),
      meta: { display_template: value(inputs.display_template), group: value(inputs.group) },
    };
    for (const k of CHECKS) body[k] = checks[k].checked;
    try {
      await data("PATCH", `/collections/${encodeURIComponent(c.name)}`, { site: env.site, body });
      flash(t("schema.saved"));
      await env.onChanged();
      go(siteHash(env.site, "schema", "c", c.name));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  } },
  h("h2", { id: `${ids.label}-h` }, t("schema.metaHeading")),
  row(ids.label, "schema.displayName", inputs.displayName),
  row(ids.icon, "schema.icon", inputs.icon),
  h("datalist", { id: `${ids.icon}-names` }, ICON_NAMES.map((name) => h("option", { value: name }))), // -- studio42
  row(ids.note, "schema.note", inputs.note),
  row(ids.template, "schema.displayTemplate", inputs.display_template),
  row(ids.group, "schema.group", inputs.group),
  row(ids.status, "schema.statusField", inputs.status_field),
  row(ids.sort, "schema.sortField", inputs.sort_field),
  CHECKS.map((k) => h("div", { class: "field check" }, h("label", { for: ids[k] }, t(`schema.${k}`)), checks[k])),
  h("div", { class: "tools" }, h("button", { type: "submit" }, t("schema.saveMeta"))), status);
}

function fieldsTable(env, c, fields, status) {
  const remove = async (f) => {
    const ok = await confirmRisky(env.site, {
      title: t("schema.deleteFieldTitle", { name: `${c.name}.${f.field}` }),
      change: (m) => { m.fields = m.fields.filter((x) => !(x.collection === c.name && x.field === f.field)); },
      affected: { collection: c.name, field: f.field },
    });
    if (!ok) return;
    try {
      // -- audit: the dialog above showed the dry run's risk, so its consent is the destructive flag
      await call("DELETE", `/fields/${encodeURIComponent(c.name)}/${encodeURIComponent(f.field)}`, { site: env.site, params: { allowDestructive: "true" } });
      flash(t("schema.fieldDeleted", { name: f.field }));
      go(siteHash(env.site, "schema", "c", c.name));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  return h("section", { "aria-labelledby": "schema-fields-h" },
    h("h2", { id: "schema-fields-h" }, t("schema.fieldsHeading")),
    fields.length ? h("table", {}, h("caption", {}, t("schema.fieldsCaption", { name: c.name })),
      h("thead", {}, h("tr", {}, ["schema.field", "schema.type", "schema.interface", "schema.display", "schema.required", "schema.actions"]
        .map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, fields.map((f) => h("tr", {},
        h("td", {}, h("a", { href: siteHash(env.site, "schema", "c", c.name, "f", f.field), "aria-label": t("schema.editField", { name: f.field }) }, f.field)),
        h("td", {}, f.type), h("td", {}, f.interface || ""), h("td", {}, f.display || ""),
        h("td", {}, f.required ? t("schema.yes") : ""),
        h("td", {}, h("button", { type: "button", class: "secondary", onclick: () => remove(f) }, t("schema.deleteField", { name: f.field }))))))) : h("p", { class: "muted" }, t("schema.noFields")),
    h("p", {}, h("a", { href: siteHash(env.site, "schema", "c", c.name, "new-field"), class: "button" }, t("schema.addField"))));
}

export async function renderCollectionSchema(env, name) {
  const [c, fields] = await Promise.all([
    data("GET", `/collections/${encodeURIComponent(name)}`, { site: env.site }),
    data("GET", `/fields/${encodeURIComponent(name)}`, { site: env.site }),
  ]);
  fields.sort((a, b) => (a.sort ?? 0) - (b.sort ?? 0));
  const status = h("p", { role: "status" }, takeFlash());
  const drop = async () => {
    const ok = await confirmRisky(env.site, {
      title: t("schema.deleteCollectionTitle", { name }),
      change: (m) => {
        m.collections = m.collections.filter((x) => x.name !== name);
        m.fields = m.fields.filter((x) => x.collection !== name);
        m.relations = m.relations.filter((r) => r.collection !== name && r.relatedCollection !== name
          && !(r.relatedCollections || []).includes(name));
      },
      affected: { collection: name },
    });
    if (!ok) return;
    try {
      await call("DELETE", `/collections/${encodeURIComponent(name)}`, { site: env.site });
      flash(t("schema.deleted", { name }));
      await env.onChanged();
      go(siteHash(env.site, "schema"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  document.title = `${name} · ${t("schema.heading")} · ${env.shell.title}`;
  replace(env.shell.main,
    h("p", {}, h("a", { href: siteHash(env.site, "schema") }, t("schema.back"))),
    h("h1", {}, t("schema.collectionHeading", { name })),
    status,
    metaForm(env, c, fields),
    fieldsTable(env, c, fields, status),
    h("section", { "aria-labelledby": "schema-danger-h", class: "danger-zone" },
      h("h2", { id: "schema-danger-h" }, t("schema.dangerHeading")),
      h("p", { class: "muted" }, t("schema.deleteHint")),
      h("button", { type: "button", class: "danger", onclick: drop }, t("schema.deleteCollection", { name }))));
}
// -- end schema
