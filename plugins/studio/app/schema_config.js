// -- schema: the config manifest (svc.config@v1, docs/decisions/schema-manifest.md). Export:
// GET /config/export?scope=..., shown as JSON and downloadable. Import: a manifest pasted or read
// from a file is first dry-run (POST /config/import?dryRun=true&mode=...), and its diff (counts,
// risk, changes, destructive ones) or its errors are shown; only then can it be applied, the
// destructive changes only when the admin ticks "allow destructive changes".

import { ApiError, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { siteHash } from "./router.js";
import { diffView, errorList } from "./schema_risk.js";
import { apiProblem } from "./schema_status.js";
import { settle, track } from "./work.js"; // -- progress

const SCOPES = ["schema", "all", "settings", "webhooks"];
const MODES = ["merge", "replace-managed", "replace-all"];
const RESOURCES = ["collections", "fields", "relations", "settings", "webhooks"];

function download(name, text) {
  const link = h("a", { href: URL.createObjectURL(new Blob([text], { type: "application/json" })), download: name, hidden: true });
  document.body.append(link);
  link.click();
  setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 0);
}

function exportPart(env) {
  const ids = { scope: uid("x-scope"), out: uid("x-out") };
  const scope = h("select", { id: ids.scope }, SCOPES.map((s) => h("option", { value: s }, t(`schema.scope.${s}`))));
  const out = h("textarea", { id: ids.out, rows: "8", readonly: true, class: "code" });
  const save = h("button", { type: "button", class: "secondary", disabled: true,
    onclick: () => download(`svc-config-${env.site}-${scope.value}.json`, out.value) }, t("schema.download"));
  const status = h("p", { role: "status" });
  return h("section", { "aria-labelledby": `${ids.scope}-h` },
    h("h2", { id: `${ids.scope}-h` }, t("schema.exportHeading")),
    h("form", { class: "inline", onsubmit: async (event) => {
      event.preventDefault();
      try {
        const manifest = await data("GET", "/config/export", { site: env.site, params: { scope: scope.value } });
        out.value = JSON.stringify(manifest, null, 2);
        save.disabled = false;
        replace(status, t("schema.exported", { collections: manifest.collections.length, fields: manifest.fields.length,
          relations: manifest.relations.length }));
      } catch (err) {
        replace(status, apiProblem(err));
      }
    } }, h("label", { for: ids.scope }, t("schema.scope")), scope, h("button", { type: "submit" }, t("schema.export")), save),
    status,
    h("div", { class: "field" }, h("label", { for: ids.out }, t("schema.exportedManifest")), out));
}

function countsTable(diff) {
  return h("table", { class: "counts" }, h("caption", {}, t("schema.diffCaption")),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("schema.resource")),
      ["create", "update", "delete", "unchanged"].map((k) => h("th", { scope: "col" }, t(`schema.count.${k}`))))),
    h("tbody", {}, RESOURCES.map((r) => h("tr", {}, h("th", { scope: "row" }, t(`schema.resource.${r}`)),
      ["create", "update", "delete", "unchanged"].map((k) => h("td", {}, String(diff[r][k])))))));
}

function importPart(env) {
  const ids = { text: uid("i-text"), file: uid("i-file"), mode: uid("i-mode"), allow: uid("i-allow") };
  const text = h("textarea", { id: ids.text, rows: "8", class: "code" });
  const file = h("input", { id: ids.file, type: "file", accept: "application/json,.json", onchange: async () => {
    if (file.files[0]) text.value = await file.files[0].text();
    invalidate();
  } });
  const mode = h("select", { id: ids.mode }, MODES.map((m) => h("option", { value: m }, t(`schema.mode.${m.replace(/-(\w)/g, (_, c) => c.toUpperCase())}`))));
  const allow = h("input", { id: ids.allow, type: "checkbox" });
  const allowWrap = h("div", { class: "field check", hidden: true }, h("label", { for: ids.allow }, t("schema.allowDestructive")), allow);
  const result = h("div", { class: "diff-result", "aria-live": "polite" });
  const status = h("p", { role: "status" });
  let previewed = null; // the manifest text and mode whose diff is shown: only that can be applied
  const apply = h("button", { type: "button", disabled: true, onclick: async () => {
    if (!previewed) return;
    // -- progress: one transaction, so a bar that says it runs; listed in the work in progress (work.js)
    const key = `${env.site}:configImport`;
    replace(status, h("progress", { "aria-label": t("work.applyingImport") }), " ", t("work.applyingImport"));
    track(env.site, key, { kind: "configImport", name: t("schema.config"), href: siteHash(env.site, "schema", "config"), done: null, total: null });
    try {
      const answer = await data("POST", "/config/import", { site: env.site, body: previewed.manifest,
        params: { mode: previewed.mode, allowDestructive: allow.checked ? "true" : "" } });
      const a = answer.applied || {};
      settle(key);
      replace(status, t("schema.applied", { created: a.created || 0, updated: a.updated || 0, deleted: a.deleted || 0 }));
      invalidate(true);
      await env.onChanged();
    } catch (err) {
      settle(key, err.message || String(err));
      replace(status, apiProblem(err));
    }
  } }, t("schema.applyImport"));
  const invalidate = (keepStatus = false) => {
    previewed = null;
    apply.disabled = true;
    allowWrap.hidden = true;
    allow.checked = false;
    replace(result);
    if (!keepStatus) replace(status);
  };
  text.addEventListener("input", () => invalidate());
  mode.addEventListener("change", () => invalidate());
  const preview = async (event) => {
    event.preventDefault();
    invalidate();
    let manifest;
    try {
      manifest = JSON.parse(text.value);
    } catch (err) {
      return replace(status, h("span", { class: "error" }, t("schema.badJson", { message: err.message })));
    }
    try {
      const answer = await data("POST", "/config/import", { site: env.site, body: manifest, params: { dryRun: "true", mode: mode.value } });
      if (!answer.valid) {
        replace(result, h("h3", {}, t("schema.invalidManifest")), errorList(answer.errors));
        return;
      }
      replace(result, h("h3", {}, t("schema.diffHeading")), countsTable(answer.diff), diffView(answer.diff));
      previewed = { manifest, mode: mode.value };
      apply.disabled = false;
      allowWrap.hidden = !answer.diff.destructive.length;
    } catch (err) {
      replace(status, err instanceof ApiError ? apiProblem(err) : err.message);
    }
  };
  return h("section", { "aria-labelledby": `${ids.text}-h` },
    h("h2", { id: `${ids.text}-h` }, t("schema.importHeading")),
    h("form", { class: "schema-form", onsubmit: preview },
      h("div", { class: "field" }, h("label", { for: ids.text }, t("schema.manifestToImport")), text),
      h("div", { class: "field" }, h("label", { for: ids.file }, t("schema.manifestFile")), file),
      h("div", { class: "field" }, h("label", { for: ids.mode }, t("schema.mode")), mode),
      h("div", { class: "tools" }, h("button", { type: "submit" }, t("schema.previewImport")))),
    result, allowWrap, h("div", { class: "tools" }, apply), status);
}

export async function renderConfig(env) {
  document.title = `${t("schema.config")} · ${env.shell.title}`;
  replace(env.shell.main,
    h("p", {}, h("a", { href: siteHash(env.site, "schema") }, t("schema.back"))),
    h("h1", {}, t("schema.config")), exportPart(env), importPart(env));
}
// -- end schema
