// -- schema: the site's relations (GET /relations): m2o, o2m, m2m (m2a too) with their onDelete,
// which can be changed (PATCH /relations/:id) or the relation removed (DELETE); a new one is
// created with POST /relations (docs/decisions/schema-relations.md). Widening onDelete to
// cascade shows the API's dry run first, and how many items hold a reference it would follow.

import { call, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { confirmRisky } from "./schema_risk.js";
import { apiProblem, flash, takeFlash } from "./schema_status.js";

const TYPES = ["m2o", "o2m", "m2m", "m2a"]; // -- studio42: m2a
const ON_DELETE = ["restrict", "set null", "cascade"];
const key = (r) => `${r.collection}.${r.field}`;

/** Where the references of `r` are stored: the collection and field that hold the ids. */
function holder(r) {
  return r.type === "o2m" ? { collection: r.relatedCollection, field: r.relatedField } : { collection: r.collection, field: r.field };
}

function select(id, values, value, label = (v) => v) {
  return h("select", { id }, values.map((v) => h("option", { value: v, selected: v === value }, label(v))));
}

// -- studio42c: an m2a's related collections changed after its creation (PATCH /relations/:id
// { relatedCollections }); dropping one shows the API's dry run first, with the items holding
// references (they keep the pairs of the collection dropped as plain values).
function anyOfEditor(env, r, status, names) {
  const boxes = names.map((n) => ({ name: n, id: uid("r-any"), box: null }));
  for (const b of boxes) b.box = h("input", { id: b.id, type: "checkbox", value: b.name, checked: (r.relatedCollections || []).includes(b.name) });
  const save = async (event) => {
    event.preventDefault();
    const chosen = boxes.filter((b) => b.box.checked).map((b) => b.name);
    if (chosen.length === r.relatedCollections.length && chosen.every((n) => r.relatedCollections.includes(n))) return;
    if (r.relatedCollections.some((n) => !chosen.includes(n))) {
      const ok = await confirmRisky(env.site, {
        title: t("schema.anyOfTitle", { name: key(r) }),
        change: (m) => {
          const entry = m.relations.find((x) => x.collection === r.collection && x.field === r.field);
          if (entry) entry.relatedCollections = chosen;
        },
        affected: holder(r),
      });
      if (!ok) return;
    }
    try {
      await data("PATCH", `/relations/${encodeURIComponent(r.id)}`, { site: env.site, body: { relatedCollections: chosen } });
      flash(t("schema.relationSaved", { name: key(r) }));
      go(siteHash(env.site, "schema", "relations"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  return h("details", {}, h("summary", {}, t("schema.anyOfChange", { name: key(r) })),
    h("form", { onsubmit: save }, h("fieldset", {}, h("legend", {}, t("schema.anyOfOf", { name: key(r) })),
      boxes.map((b) => h("div", { class: "check" }, b.box, h("label", { for: b.id }, b.name)))),
    h("button", { type: "submit" }, t("schema.anyOfSave", { name: key(r) }))));
}

function row(env, r, status, names = []) {
  const id = uid("on-delete");
  const onDelete = select(id, ON_DELETE, r.onDelete);
  const save = async () => {
    if (onDelete.value === r.onDelete) return;
    if (onDelete.value === "cascade") {
      const ok = await confirmRisky(env.site, {
        title: t("schema.cascadeTitle", { name: key(r) }),
        change: (m) => {
          const entry = m.relations.find((x) => x.collection === r.collection && x.field === r.field);
          if (entry) entry.onDelete = "cascade";
        },
        affected: holder(r),
      });
      if (!ok) return;
    }
    try {
      await data("PATCH", `/relations/${encodeURIComponent(r.id)}`, { site: env.site, body: { onDelete: onDelete.value } });
      flash(t("schema.relationSaved", { name: key(r) }));
      go(siteHash(env.site, "schema", "relations"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  const remove = async () => {
    const ok = await confirmRisky(env.site, {
      title: t("schema.deleteRelationTitle", { name: key(r) }),
      change: (m) => { m.relations = m.relations.filter((x) => !(x.collection === r.collection && x.field === r.field)); },
      affected: null,
    });
    if (!ok) return;
    try {
      await call("DELETE", `/relations/${encodeURIComponent(r.id)}`, { site: env.site });
      flash(t("schema.relationDeleted", { name: key(r) }));
      go(siteHash(env.site, "schema", "relations"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  };
  return h("tr", {},
    h("td", {}, r.type), h("td", {}, key(r)),
    h("td", {}, r.relatedCollection || (r.relatedCollections || []).join(", "),
      r.type === "m2a" ? anyOfEditor(env, r, status, names) : null), h("td", {}, r.relatedField || ""), // -- studio42c
    h("td", {}, h("label", { for: id, class: "sr-only" }, t("schema.onDeleteOf", { name: key(r) })), onDelete, " ",
      h("button", { type: "button", onclick: save }, t("schema.saveOnDelete", { name: key(r) }))),
    h("td", {}, h("button", { type: "button", class: "secondary", onclick: remove }, t("schema.deleteRelation", { name: key(r) }))));
}

function createForm(env, collections, status) {
  const ids = Object.fromEntries(["type", "coll", "field", "related", "rfield", "ondelete"].map((k) => [k, uid(`r-${k}`)]));
  const names = collections.map((c) => c.name);
  const type = select(ids.type, TYPES, "m2o", (v) => t(`schema.relType.${v}`));
  const coll = select(ids.coll, names, names[0]);
  const field = h("input", { id: ids.field, type: "text", required: true, autocomplete: "off", "aria-describedby": `${ids.field}-hint` });
  const related = select(ids.related, names, names[1] || names[0]);
  const rfield = h("input", { id: ids.rfield, type: "text", autocomplete: "off", "aria-describedby": `${ids.rfield}-hint` });
  const onDelete = select(ids.ondelete, ["", ...ON_DELETE], "", (v) => v || t("schema.onDeleteDefault"));
  const part = (id, label, input, hint) => h("div", { class: "field" }, h("label", { for: id }, t(label)), input,
    hint ? h("p", { id: `${id}-hint`, class: "muted" }, t(hint)) : null);
  // -- studio42: an m2a names its related collections (1 to 50), a check box each, in place of
  // the one related collection and the related field.
  const anyBoxes = names.map((n) => {
    const id = uid("r-any");
    return { name: n, box: h("input", { id, type: "checkbox", value: n }), id };
  });
  const anyOf = h("fieldset", { class: "field", hidden: true }, h("legend", {}, t("schema.relRelatedMany")),
    anyBoxes.map((b) => h("div", { class: "check" }, b.box, h("label", { for: b.id }, b.name))));
  const single = [part(ids.related, "schema.relRelated", related), part(ids.rfield, "schema.relRelatedField", rfield, "schema.relRelatedFieldHint")];
  const shape = () => {
    const many = type.value === "m2a";
    anyOf.hidden = !many;
    for (const el of single) el.hidden = many;
  };
  type.addEventListener("change", shape);
  // -- end studio42
  return h("form", { class: "schema-form", "aria-labelledby": `${ids.type}-h`, onsubmit: async (event) => {
    event.preventDefault();
    const body = { type: type.value, collection: coll.value, field: field.value.trim(), relatedCollection: related.value };
    if (rfield.value.trim()) body.relatedField = rfield.value.trim();
    if (type.value === "m2a") { // -- studio42
      delete body.relatedCollection;
      delete body.relatedField;
      body.relatedCollections = anyBoxes.filter((b) => b.box.checked).map((b) => b.name);
    }
    if (onDelete.value) body.onDelete = onDelete.value;
    try {
      await data("POST", "/relations", { site: env.site, body });
      flash(t("schema.relationCreated", { name: `${body.collection}.${body.field}` }));
      go(siteHash(env.site, "schema", "relations"));
    } catch (err) {
      replace(status, apiProblem(err));
    }
  } },
  h("h2", { id: `${ids.type}-h` }, t("schema.newRelation")),
  part(ids.type, "schema.relType", type), part(ids.coll, "schema.relCollection", coll),
  part(ids.field, "schema.relField", field, "schema.relFieldHint"), single, anyOf, // -- studio42: anyOf
  part(ids.ondelete, "schema.onDelete", onDelete),
  h("div", { class: "tools" }, h("button", { type: "submit" }, t("schema.createRelation"))));
}

export async function renderRelations(env) {
  const [relations, collections] = await Promise.all([
    data("GET", "/relations", { site: env.site }),
    data("GET", "/collections", { site: env.site }),
  ]);
  relations.sort((a, b) => key(a).localeCompare(key(b)));
  const status = h("p", { role: "status" }, takeFlash());
  document.title = `${t("schema.relations")} · ${env.shell.title}`;
  replace(env.shell.main,
    h("p", {}, h("a", { href: siteHash(env.site, "schema") }, t("schema.back"))),
    h("h1", {}, t("schema.relations")), status,
    relations.length ? h("table", {}, h("caption", {}, t("schema.relationsCaption")),
      h("thead", {}, h("tr", {}, ["schema.relType", "schema.relHolder", "schema.relRelated", "schema.relRelatedField", "schema.onDelete", "schema.actions"]
        .map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, relations.map((r) => row(env, r, status, collections.map((c) => c.name))))) : h("p", { class: "muted" }, t("schema.noRelations")),
    createForm(env, collections, status));
}
// -- end schema
