// -- studio41: the site's settings for its admins, #/s/<site>/settings (docs/studio.md, "Site
// settings"; issue 42 point 4). The site's configuration (GET, PATCH /site: name, domain with
// DOMAIN_TAKEN at its field, the allowed origins it makes, language, appearance, save action,
// branding and theme tokens with a live preview), the setting keys plugins declare with an input
// for their type (GET /settings/keys, PUT /settings/:key), and the translation memory (search,
// edit, import: /tm) and glossary (/tm/glossary). Members without admin rights get no link, the
// screen refuses them, and the API refuses their writes.

import { ApiError, call, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { THEME_TOKENS, applyTheme, tokenColour } from "./theme.js";

const PREVIEW_TOKENS = ["primary", "primary-foreground", "background", "foreground", "border"];
const enc = encodeURIComponent;

/** A labelled control with a place for the API's error at it. */
function field(label, control, hint = "") {
  const id = control.id || uid("set");
  control.id = id;
  const error = h("p", { id: uid("set-err"), class: "field-error" });
  const hintEl = hint ? h("p", { id: uid("set-hint"), class: "muted" }, hint) : null;
  control.setAttribute("aria-describedby", [hintEl && hintEl.id, error.id].filter(Boolean).join(" "));
  return {
    wrap: h("div", { class: "me-field" }, h("label", { for: id }, label), control, hintEl, error),
    control,
    fail(message) { control.setAttribute("aria-invalid", "true"); replace(error, message); },
    clear() { control.removeAttribute("aria-invalid"); replace(error); },
  };
}

function section(title, ...children) {
  const id = uid("set-h");
  return h("section", { class: "me-section", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

/** The API's errors at the fields their path names ("branding.brandColor"), else in `status`. */
function showErrors(err, fields, status) {
  if (!(err instanceof ApiError)) throw err;
  let first = null;
  const rest = [];
  for (const e of err.errors) {
    const path = (Array.isArray(e.path) ? e.path : []).filter((p) => p !== "body").join(".");
    const target = fields[path] || fields[path.split(".")[0]];
    if (target) {
      target.fail(e.message);
      first = first || target;
    } else rest.push(e.message);
  }
  if (first) first.control.focus();
  replace(status, rest.length ? t("error.generic", { message: rest.join(" ") }) : "");
}

const text = (value, attrs = {}) => h("input", { type: "text", value: value || "", ...attrs });
const choice = (value, options) => h("select", {}, options.map(([v, label]) => h("option", { value: v, selected: v === (value || "") }, label)));

function origins(config) {
  const list = [];
  try { if (config.siteUrl) list.push(new URL(config.siteUrl).origin); } catch { /* shown as the API keeps it */ }
  if (config.domain) list.push(`https://${config.domain}`);
  return list;
}

function configuration(shell, config) {
  const status = h("p", { role: "status" });
  const branding = config.branding || {};
  const themes = config.themeOverrides || {};
  const f = {
    name: field(t("set.name"), text(config.name, { required: true, maxlength: 200 })),
    displayTitle: field(t("set.displayTitle"), text(config.displayTitle, { maxlength: 200 })),
    siteUrl: field(t("set.siteUrl"), h("input", { type: "url", value: config.siteUrl || "" })),
    domain: field(t("set.domain"), text(config.domain), t("set.domainHint")),
    defaultLanguage: field(t("set.language"), text(config.defaultLanguage, { maxlength: 35 })),
    defaultAppearance: field(t("set.appearance"), choice(config.defaultAppearance, [["", t("set.unset")],
      ["auto", t("me.appearance.auto")], ["light", t("me.appearance.light")], ["dark", t("me.appearance.dark")]])),
    defaultSaveAction: field(t("set.saveAction"), choice(config.defaultSaveAction, [["", t("set.unset")],
      ["stay", t("me.action.stay")], ["return", t("me.action.return")], ["create_new", t("me.action.create_new")]])),
    "branding.brandColor": field(t("set.brandColor"), text(branding.brandColor, { maxlength: 7 }), t("set.brandColorHint")),
    "branding.logoUrl": field(t("set.logoUrl"), h("input", { type: "url", value: branding.logoUrl || "" })),
    // -- studio42: the description, the favicon and the custom style sheet
    descriptor: field(t("set.descriptor"), h("textarea", { rows: "2", maxlength: "1000" }, config.descriptor || "")),
    "branding.faviconUrl": field(t("set.faviconUrl"), h("input", { type: "url", value: branding.faviconUrl || "" })),
    customCss: field(t("set.customCss"), h("textarea", { rows: "6", class: "code", spellcheck: "false" }, config.customCss || ""),
      t("set.customCssHint")),
  };
  const originList = h("ul", { "aria-label": t("set.origins") });
  const drawOrigins = (c) => replace(originList, origins(c).length ? origins(c).map((o) => h("li", {}, h("code", {}, o))) : h("li", {}, t("set.noOrigins")));
  drawOrigins(config);

  // Theme tokens of one mode at a time, with a preview drawn from the typed values at once.
  const modeField = field(t("set.themeMode"), choice("light", [["light", t("me.appearance.light")], ["dark", t("me.appearance.dark")]]));
  const typed = { light: { ...(themes.light || {}) }, dark: { ...(themes.dark || {}) } };
  const preview = h("div", { class: "theme-preview", role: "region", "aria-label": t("set.preview") },
    h("p", {}, t("set.previewText")), h("button", { type: "button", tabindex: "-1" }, t("set.previewButton")));
  const tokenFields = {};
  const paintPreview = () => {
    const values = typed[modeField.control.value];
    for (const token of PREVIEW_TOKENS) {
      const colour = tokenColour(values[token]);
      if (colour) preview.style.setProperty(`--pv-${token}`, colour); // the CSSOM: no inline style text
      else preview.style.removeProperty(`--pv-${token}`);
    }
    const brand = f["branding.brandColor"].control.value;
    if (/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(brand) && !tokenColour(values.primary)) preview.style.setProperty("--pv-primary", brand);
  };
  for (const token of THEME_TOKENS) { // -- studio42: every token the API takes (the preview shows five)
    const input = text("", { placeholder: "210 40% 50%", oninput: (event) => {
      typed[modeField.control.value][token] = event.target.value.trim();
      paintPreview();
    } });
    tokenFields[token] = field(t("set.token", { token }), input);
  }
  const fillTokens = () => {
    for (const token of THEME_TOKENS) tokenFields[token].control.value = typed[modeField.control.value][token] || "";
    paintPreview();
  };
  modeField.control.addEventListener("change", fillTokens);
  f["branding.brandColor"].control.addEventListener("input", paintPreview);
  fillTokens();

  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    Object.values(f).concat(Object.values(tokenFields)).forEach((x) => x.clear());
    const value = (name) => f[name].control.value.trim();
    const theme = {};
    for (const mode of ["light", "dark"]) {
      const kept = Object.fromEntries(Object.entries(typed[mode]).filter(([, v]) => v));
      if (Object.keys(kept).length) theme[mode] = kept;
    }
    const body = {
      name: value("name"), displayTitle: value("displayTitle"), siteUrl: value("siteUrl"), domain: value("domain"),
      defaultLanguage: value("defaultLanguage"), defaultAppearance: value("defaultAppearance"),
      defaultSaveAction: value("defaultSaveAction"),
      branding: { ...branding, brandColor: value("branding.brandColor") || null, logoUrl: value("branding.logoUrl") || null,
        faviconUrl: value("branding.faviconUrl") || null }, // -- studio42
      descriptor: value("descriptor"), customCss: f.customCss.control.value, // -- studio42 ("" clears)
      themeOverrides: Object.keys(theme).length ? theme : null,
    };
    try {
      const saved = await data("PATCH", "/site", { site: shell.site, body });
      Object.assign(shell.ctx.config, saved);
      applyTheme(shell.ctx.config);
      // The top bar and the window's title follow a new name at once.
      shell.title = saved.displayTitle || saved.name || shell.site;
      const brand = document.querySelector("header .brand span");
      if (brand) brand.textContent = shell.title;
      document.title = `${t("set.heading")} · ${shell.title}`;
      drawOrigins(saved);
      replace(status, t("set.saved"));
    } catch (err) {
      // A token's path names its mode: show it at that token's input, in that mode.
      const fields = { ...f };
      for (const e of (err instanceof ApiError ? err.errors : [])) {
        const [top, mode, token] = e.path || [];
        if (top === "themeOverrides" && tokenFields[token] && typed[mode]) {
          modeField.control.value = mode;
          fillTokens();
          fields[`themeOverrides.${mode}.${token}`] = tokenFields[token];
        }
      }
      showErrors(err, fields, status);
    }
  } },
  f.name.wrap, f.displayTitle.wrap, f.descriptor.wrap, f.siteUrl.wrap, f.domain.wrap,
  h("div", { class: "me-field" }, h("p", {}, t("set.origins")), originList, h("p", { class: "muted" }, t("set.originsHint"))),
  f.defaultLanguage.wrap, f.defaultAppearance.wrap, f.defaultSaveAction.wrap,
  h("fieldset", {}, h("legend", {}, t("set.branding")), f["branding.brandColor"].wrap, f["branding.logoUrl"].wrap,
    f["branding.faviconUrl"].wrap),
  h("fieldset", {}, h("legend", {}, t("set.theme")), modeField.wrap, PREVIEW_TOKENS.map((token) => tokenFields[token].wrap), preview,
    // -- studio42: the other fourteen tokens, folded
    h("details", {}, h("summary", {}, t("set.moreTokens")),
      THEME_TOKENS.filter((token) => !PREVIEW_TOKENS.includes(token)).map((token) => tokenFields[token].wrap))),
  f.customCss.wrap,
  h("button", { type: "submit" }, t("set.save")), status);
  return section(t("set.site"), form);
}

/** An input fitting a declared key's type; read() gives the value to PUT (null: unset). */
function keyInput(spec, value) {
  const shown = value === undefined || value === null ? "" : value;
  if (spec.secret) {
    const input = h("input", { type: "password", autocomplete: "off", placeholder: value && value.hasSecret ? t("set.secretSet") : "" });
    return { input, read: () => (input.value ? JSON.parse(input.value) : null) };
  }
  if (spec.type === "boolean") {
    const input = h("input", { type: "checkbox", checked: shown === true });
    return { input, read: () => input.checked };
  }
  if (spec.type === "integer" || spec.type === "number") {
    const input = h("input", { type: "number", step: spec.type === "integer" ? "1" : "any", value: shown === "" ? "" : String(shown) });
    return { input, read: () => (input.value === "" ? null : Number(input.value)) };
  }
  if (spec.type === "string") {
    const input = h("input", { type: "text", value: String(shown) });
    return { input, read: () => (input.value === "" ? null : input.value) };
  }
  const input = h("textarea", { rows: "3", class: "mono" });
  input.value = shown === "" ? "" : JSON.stringify(shown, null, 2);
  return { input, read: () => (input.value.trim() === "" ? null : JSON.parse(input.value)) };
}

async function declaredKeys(shell) {
  const [specs, values] = await Promise.all([
    data("GET", "/settings/keys", { site: shell.site }), data("GET", "/settings", { site: shell.site })]);
  const rows = specs.filter((s) => !s.prefix).map((spec) => {
    const status = h("p", { role: "status" });
    const { input, read } = keyInput(spec, values[spec.key]);
    const f = field(spec.key, input, `${t(`set.type.${spec.type}`)}${spec.description ? ` · ${spec.description}` : ""}`);
    const form = h("form", { class: "setting-key", onsubmit: async (event) => {
      event.preventDefault();
      f.clear();
      let value;
      try { value = read(); } catch (err) { return f.fail(t("set.badJson", { message: err.message })); }
      try {
        await data("PUT", `/settings/${enc(spec.key)}`, { site: shell.site, body: { value } });
        replace(status, t("set.keySaved", { key: spec.key }));
      } catch (err) { showErrors(err, { [spec.key]: f }, status); }
    } }, f.wrap, h("button", { type: "submit", "aria-label": t("set.saveKeyOf", { key: spec.key }) }, t("set.saveKey")), status);
    return form;
  });
  const prefixes = specs.filter((s) => s.prefix);
  return section(t("set.keys"), h("p", { class: "muted" }, t("set.keysHint")), rows,
    prefixes.length ? h("p", { class: "muted" }, t("set.prefixes", { keys: prefixes.map((s) => `${s.key}*`).join(", ") })) : null);
}

function memory(shell) {
  const status = h("p", { role: "status" });
  const results = h("div");
  const q = field(t("set.tmSearch"), h("input", { type: "search" }));
  const search = async () => {
    const params = q.control.value.trim() ? { q: q.control.value.trim(), limit: 50 } : { limit: 50 };
    const entries = await data("GET", "/tm", { site: shell.site, params });
    replace(results, entries.length ? h("table", {}, h("caption", {}, t("set.tmCaption")),
      h("thead", {}, h("tr", {}, [t("set.tmLanguages"), t("set.tmSource"), t("set.tmTarget"), t("me.action")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, entries.map((e) => {
        const target = h("input", { type: "text", value: e.targetText, "aria-label": t("set.tmTargetOf", { source: e.sourceText }) });
        return h("tr", {}, h("td", {}, `${e.sourceLang} → ${e.targetLang}`), h("td", {}, e.sourceText), h("td", {}, target),
          h("td", {}, h("button", { type: "button", "aria-label": t("set.tmSaveOf", { source: e.sourceText }), onclick: async () => {
            try {
              await data("PATCH", `/tm/${enc(e.id)}`, { site: shell.site, body: { targetText: target.value } });
              replace(status, t("set.tmSaved", { source: e.sourceText }));
            } catch (err) {
              if (!(err instanceof ApiError)) throw err;
              replace(status, t("error.generic", { message: err.message }));
            }
          } }, t("set.saveKey"))));
      }))) : h("p", {}, t("set.tmNone")));
  };
  const searchForm = h("form", { role: "search", class: "tools", onsubmit: (event) => { event.preventDefault(); search(); } },
    q.wrap, h("button", { type: "submit" }, t("set.tmSearchButton")));
  // Import: one entry a line, tab separated (as a spreadsheet copies it), each one POST /tm.
  const importForm = lineImport({ label: t("set.tmImport"), hint: t("set.tmImportHint"), button: t("set.tmImportButton"), status,
    send: ([sourceLang, targetLang, sourceText, targetText]) => call("POST", "/tm", { site: shell.site,
      body: { sourceLang, targetLang, sourceText, targetText, source: "import" } }),
    after: search });
  return { el: section(t("set.tm"), searchForm, results, importForm, status), search };
}

// -- studio42c: an import of tab-separated lines (as a spreadsheet copies them), one request each
// (`send(cells)`), a refused line named with the API's message at the field; the memory's and the
// glossary's.
function lineImport({ label, hint, button, status, send, after }) {
  const lines = field(label, h("textarea", { rows: "4", class: "mono" }), hint);
  return h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    lines.clear();
    const rows = lines.control.value.split("\n").map((l) => l.replace(/\r$/, "")).filter((l) => l.trim());
    let done = 0;
    const refused = [];
    for (const [i, line] of rows.entries()) {
      try {
        await send(line.split("\t"));
        done += 1;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        refused.push(t("set.tmLineRefused", { line: i + 1, message: err.message }));
      }
    }
    if (refused.length) lines.fail(refused.join(" "));
    replace(status, t("set.tmImported", { done, refused: refused.length }));
    await after();
  } }, lines.wrap, h("button", { type: "submit" }, button));
}

function glossary(shell) {
  const status = h("p", { role: "status" });
  const list = h("div");
  // -- studio42c: the terms of a language pair (GET /tm/glossary?source=&target=), each
  // translation edited in place (POST /tm/glossary upserts a term of its pair), and an import
  const from = field(t("set.termsFrom"), text("", { maxlength: 35 }));
  const into = field(t("set.termsInto"), text("", { maxlength: 35 }));
  const load = async () => {
    const params = { limit: 200, source: from.control.value.trim() || null, target: into.control.value.trim() || null };
    const { body } = await call("GET", "/tm/glossary", { site: shell.site, params });
    const terms = body.data;
    const total = (body.meta && body.meta.total) ?? terms.length;
    replace(list, terms.length ? [h("p", { class: "muted" }, t("set.termsShown", { shown: terms.length, total })),
      h("ul", { class: "terms", "aria-label": t("set.glossary") }, terms.map((g) => {
        const translation = h("input", { type: "text", value: g.translation, "aria-label": t("set.termTranslationOf", { term: g.term }) });
        return h("li", {}, `${g.term} (${g.sourceLang} → ${g.targetLang}) `, translation, " ",
          h("button", { type: "button", "aria-label": t("set.termSaveOf", { term: g.term }), onclick: async () => {
            try {
              await data("POST", "/tm/glossary", { site: shell.site, body: { sourceLang: g.sourceLang, targetLang: g.targetLang,
                term: g.term, translation: translation.value.trim() } });
              replace(status, t("set.termSaved", { term: g.term }));
            } catch (err) {
              if (!(err instanceof ApiError)) throw err;
              replace(status, t("error.generic", { message: err.message }));
            }
          } }, t("set.saveKey")), " ",
          h("button", { type: "button", class: "secondary", "aria-label": t("set.termDeleteOf", { term: g.term }), onclick: async () => {
            await call("DELETE", `/tm/glossary/${enc(g.id)}`, { site: shell.site });
            replace(status, t("set.termDeleted", { term: g.term }));
            await load();
          } }, t("set.termDelete")));
      }))] : h("p", {}, t("set.termNone")));
  };
  const filter = h("form", { role: "search", "aria-label": t("set.termsFilter"), class: "tools",
    onsubmit: (event) => { event.preventDefault(); load(); } }, from.wrap, into.wrap, h("button", { type: "submit" }, t("set.termsFilterButton")));
  const importForm = lineImport({ label: t("set.termImport"), hint: t("set.termImportHint"), button: t("set.termImportButton"), status,
    send: ([sourceLang, targetLang, term, translation]) => call("POST", "/tm/glossary", { site: shell.site,
      body: { sourceLang, targetLang, term, translation } }),
    after: load });
  const f = {
    sourceLang: field(t("set.sourceLang"), text("en", { required: true, maxlength: 35 })),
    targetLang: field(t("set.targetLang"), text("", { required: true, maxlength: 35 })),
    term: field(t("set.term"), text("", { required: true })),
    translation: field(t("set.translation"), text("", { required: true })),
  };
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    Object.values(f).forEach((x) => x.clear());
    const body = Object.fromEntries(Object.entries(f).map(([k, x]) => [k, x.control.value.trim()]));
    try {
      await data("POST", "/tm/glossary", { site: shell.site, body });
      replace(status, t("set.termSaved", { term: body.term }));
      f.term.control.value = "";
      f.translation.control.value = "";
      await load();
    } catch (err) { showErrors(err, f, status); }
  } }, Object.values(f).map((x) => x.wrap), h("button", { type: "submit" }, t("set.termAdd")));
  return { el: section(t("set.glossary"), filter, list, form, importForm, status), load }; // -- studio42c: filter, import
}

export async function renderSiteSettings(shell) {
  document.title = `${t("set.heading")} · ${shell.title}`;
  if (!shell.ctx.permissions.admin) {
    return replace(shell.main, h("h1", {}, t("set.heading")), h("p", { role: "alert", class: "error" }, t("set.adminsOnly")));
  }
  const config = await data("GET", "/site", { site: shell.site });
  const tm = memory(shell);
  const terms = glossary(shell);
  const keys = await declaredKeys(shell);
  replace(shell.main, h("h1", {}, t("set.heading")), configuration(shell, config), keys, tm.el, terms.el);
  await Promise.all([tm.search(), terms.load()]);
}
// -- end studio41
