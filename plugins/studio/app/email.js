// -- email: the email plugin's screens (docs/email.md), for site admins when the plugin is on.
//   #/s/<site>/email                   how mail leaves (GET /email/capabilities), a test send
//                                      (POST /email/test), the templates and layouts, forms to add one
//   #/s/<site>/email/t/<id>            a template: its source, and a preview of the source as typed,
//                                      saved or not, rendered by the server (POST
//                                      /email/templates/preview) with the variables typed beside it,
//                                      redrawn (debounced) as either changes; a send of the saved
//                                      template to one address (POST /email/send)
//   #/s/<site>/email/l/<id>            a layout: its name and html shell ({{content}})
//   #/s/<site>/email/suppressions      the suppression list: search, add, remove, pages
//   -- govern43: on #/s/<site>/email, the site's own SMTP server (GET, PUT, DELETE /email/smtp):
//   the password write-only (shown as set or not set), the test send going through it once saved;
//   and marketing sends: a template to a list of addresses, now or at a time (POST /email/send with
//   category marketing and sendAt), with each queued batch's progress and outcome (GET /email/batches),
//   read again every two seconds while one is under way and the screen is open
// The preview is the server's rendering (escaped, placed in its layout, sanitised by nh3) shown in
// a sandboxed iframe that runs no script (sandbox without allow-scripts). Its inline styles are
// applied through the CSSOM: the frame shares the studio's CSP, which refuses style attributes.

import { call, data } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { keepFocus, labelled, said, section } from "./releases.js";
import { go, siteHash } from "./router.js";

const PREVIEW_MS = 400; // the preview is asked for again this long after the last keystroke
const PAGE = 50; // suppressions per page
const PV = "data-svc-style"; // the attribute that carries an element's inline style into the frame

// A start tag and, inside it, one attribute at a time (values quoted or bare, as HTML writes them).
const TAG = /<([a-zA-Z][^\s/>]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)(\s*\/?)>/g;
const ATTR = /\s+([^\s"'>/=]+)((?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)/gy;

/** `html` with every `style` attribute renamed (the CSP reports a style attribute as soon as any
 * parser of this page meets one, even DOMParser's inert document). */
function unstyled(html) {
  return html.replace(TAG, (whole, name, attrs, end) => {
    ATTR.lastIndex = 0;
    const out = [];
    for (let m = ATTR.exec(attrs); m; m = ATTR.exec(attrs)) out.push(` ${m[1].toLowerCase() === "style" ? PV : m[1]}${m[2]}`);
    return `<${name}${out.join("")}${end}>`;
  });
}

/** A sandboxed frame (no scripts) showing `html`, its inline styles set through the CSSOM. */
export function previewFrame(title) {
  const frame = h("iframe", { sandbox: "allow-same-origin", title, class: "email-preview", referrerpolicy: "no-referrer" });
  frame.addEventListener("load", () => {
    const doc = frame.contentDocument;
    if (!doc) return;
    for (const el of doc.querySelectorAll(`[${PV}]`)) {
      el.style.cssText = el.getAttribute(PV);
      el.removeAttribute(PV);
    }
  });
  return {
    el: frame,
    show(html) {
      const doc = new DOMParser().parseFromString(unstyled(html || ""), "text/html"); // inert: nothing runs
      for (const el of doc.querySelectorAll("script, iframe, object, embed, form, [style]")) el.remove();
      if (!doc.documentElement.lang) doc.documentElement.lang = document.documentElement.lang;
      if (!doc.title) doc.title = title;
      frame.srcdoc = "<!doctype html>" + doc.documentElement.outerHTML;
    },
  };
}

function parseVariables(text) {
  if (!text.trim()) return {};
  const value = JSON.parse(text);
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new SyntaxError(t("email.variablesObject"));
  return value;
}

/** `base` with the query `values` (empty ones and page 1 left out): a paged screen's URL. */
export function pagedHash(base, values) {
  const q = new URLSearchParams(values);
  for (const [k, v] of [...q.entries()]) if (!v || (k === "page" && v === "1")) q.delete(k);
  const text = q.toString();
  return base + (text ? `?${text}` : "");
}

/** Previous and next links around "Page n of m", or nothing when there is one page. */
export function pager(page, total, size, hashFor) {
  const pages = Math.max(1, Math.ceil(total / size));
  if (pages < 2) return null;
  return h("nav", { "aria-label": t("email.pages") },
    page > 1 ? h("a", { href: hashFor({ page: String(page - 1) }) }, t("email.previous")) : null, " ",
    t("email.pageOf", { page, pages }), " ",
    page < pages ? h("a", { href: hashFor({ page: String(page + 1) }) }, t("email.next")) : null);
}

/** A button deleting `path`, then back to the email screen; a refusal (409) goes to `alert`. */
function deleteButton(site, path, label, alert) {
  return h("button", { type: "button", class: "quiet", onclick: async () => {
    try {
      await call("DELETE", path, { site });
      go(siteHash(site, "email"));
    } catch (err) {
      replace(alert, said(err));
    }
  } }, label);
}

/** A form sending to one address: `send(address)` answers what to say, a refusal is said as the API's. */
function sendTo(label, hint, button, send) {
  const to = h("input", { type: "email", required: true, autocomplete: "off" });
  const status = h("div", { role: "status" });
  return h("form", { "aria-label": label, onsubmit: async (event) => {
    event.preventDefault();
    replace(status, t("email.sendingNow"));
    try {
      replace(status, await send(to.value.trim()));
    } catch (err) {
      replace(status, h("span", { class: "error" }, said(err)));
    }
  } }, labelled(t("email.testTo"), to, hint), h("button", { type: "submit" }, button), status);
}

/** -- govern43: the site's own SMTP server. `redraw()` draws the email screen again (the way out changed). */
function smtpSection(site, current, redraw) {
  const v = current || {};
  const host = h("input", { type: "text", maxlength: "253", value: v.host || "", autocomplete: "off", required: true });
  const port = h("input", { type: "number", min: "1", max: "65535", value: v.port ? String(v.port) : "" });
  const tls = h("select", {}, ["starttls", "tls", "none"].map((x) => h("option", { value: x, selected: (v.tls || "starttls") === x }, t(`email.smtp.tls.${x}`))));
  const username = h("input", { type: "text", maxlength: "320", value: v.username || "", autocomplete: "off" });
  const password = h("input", { type: "password", autocomplete: "new-password" });
  const from = h("input", { type: "text", maxlength: "320", value: v.from || "" });
  const status = h("div", { role: "status" });
  const form = h("form", { "aria-label": t("email.smtp.heading"), onsubmit: async (event) => {
    event.preventDefault();
    const body = { host: host.value.trim(), tls: tls.value };
    if (port.value) body.port = Number(port.value);
    if (username.value.trim()) body.username = username.value.trim();
    if (password.value) body.password = password.value; // left empty: the stored one is kept (same host and user)
    if (from.value.trim()) body.from = from.value.trim();
    replace(status, t("email.smtp.saving"));
    try {
      await data("PUT", "/email/smtp", { site, body });
      await redraw(t("email.smtp.saved"));
    } catch (err) {
      replace(status, h("span", { class: "error" }, said(err)));
    }
  } },
  labelled(t("email.smtp.host"), host), labelled(t("email.smtp.port"), port, t("email.smtp.portHint")),
  labelled(t("email.smtp.tls"), tls), labelled(t("email.smtp.username"), username),
  labelled(t("email.smtp.password"), password, t(v.hasPassword ? "email.smtp.passwordSet" : "email.smtp.passwordNotSet")),
  labelled(t("email.smtp.from"), from, t("email.smtp.fromHint")),
  h("button", { type: "submit" }, t("email.save")),
  current ? h("button", { type: "button", class: "quiet", onclick: async () => {
    try {
      await call("DELETE", "/email/smtp", { site });
      await redraw(t("email.smtp.removed"));
    } catch (err) {
      replace(status, h("span", { class: "error" }, said(err)));
    }
  } }, t("email.smtp.remove")) : null, status);
  const facts = h("p", {}, current ? t("email.smtp.current", { host: v.host, port: v.port, password: t(v.hasPassword ? "email.smtp.set" : "email.smtp.notSet") })
    : t("email.smtp.none"));
  return section(t("email.smtp.heading"), h("p", { class: "muted" }, t("email.smtp.hint")), facts, form);
}

const FOLLOW_BATCHES_MS = 2000; // -- govern43

/** -- govern43: marketing sends: a form, and the batches with their progress. */
function marketingSection(site, templates, batches) {
  const list = h("div");
  const when = (iso) => (iso ? new Date(iso).toLocaleString(document.documentElement.lang) : "");
  const draw = (rows) => replace(list, rows.length ? h("table", { class: "files-table" }, h("caption", {}, t("email.batches.caption")),
    h("thead", {}, h("tr", {}, [t("email.subject"), t("email.batches.status"), t("email.batches.progress"), t("email.batches.sendAt")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((b) => {
      const done = b.total - b.pending;
      return h("tr", {}, h("th", { scope: "row" }, b.subject || b.id),
        h("td", {}, t(`email.batches.${b.status}`), b.status === "scheduled" ? [" ", cancelButton(b)] : null),
        h("td", {}, h("progress", { max: String(b.total || 1), value: String(done), "aria-label": t("email.batches.progressOf", { subject: b.subject || b.id }) }), " ",
          t("email.batches.counts", { sent: b.sent, skipped: b.skipped, failed: b.failed, pending: b.pending, total: b.total })),
        h("td", {}, b.sendAt ? when(b.sendAt) : t("email.batches.now")));
    }))) : h("p", {}, t("email.batches.none")));
  // -- more43: a scheduled send is cancelled before it starts (409 BATCH_STARTED after: shown)
  const cancelButton = (b) => h("button", { type: "button", class: "quiet", "aria-label": t("email.batches.cancelOf", { subject: b.subject || b.id }),
    onclick: async () => {
      try {
        await data("POST", `/email/batches/${encodeURIComponent(b.id)}/cancel`, { site });
        replace(status, t("email.batches.cancelledNote", { subject: b.subject || b.id }));
      } catch (err) {
        replace(status, h("span", { class: "error" }, said(err)));
      }
      await follow();
    } }, t("email.batches.cancel"));
  const going = (rows) => rows.some((b) => b.status !== "done" && b.status !== "cancelled");
  draw(batches);
  const follow = async () => {
    if (!list.isConnected) return;
    const rows = await data("GET", "/email/batches", { site, params: { limit: 20 } });
    draw(rows);
    if (going(rows)) setTimeout(follow, FOLLOW_BATCHES_MS);
  };
  if (going(batches)) setTimeout(follow, FOLLOW_BATCHES_MS);

  const template = h("select", { required: true }, templates.map((tp) => h("option", { value: tp.key }, tp.name)));
  const recipients = h("textarea", { rows: "4", required: true, spellcheck: "false" });
  const at = h("input", { type: "datetime-local" });
  const status = h("div", { role: "status" });
  const form = h("form", { "aria-label": t("email.batches.new"), onsubmit: async (event) => {
    event.preventDefault();
    const to = recipients.value.split(/[\n,;]+/).map((x) => x.trim()).filter(Boolean);
    const body = { to, templateKey: template.value, category: "marketing" };
    if (at.value) body.sendAt = new Date(at.value).toISOString(); // the browser's time zone
    try {
      const sent = await data("POST", "/email/send", { site, body });
      replace(status, t(sent.batchId ? "email.batches.queued" : "email.batches.sentNow", sent));
      form.reset();
      await follow();
    } catch (err) {
      replace(status, h("span", { class: "error" }, said(err)));
    }
  } },
  labelled(t("email.batches.template"), template), labelled(t("email.batches.to"), recipients, t("email.batches.toHint")),
  labelled(t("email.batches.at"), at, t("email.batches.atHint")), h("button", { type: "submit" }, t("email.batches.send")), status);
  return section(t("email.batches.heading"), h("p", { class: "muted" }, t("email.batches.hint")),
    templates.length ? form : h("p", {}, t("email.batches.needTemplate")), list);
}

function head(site, title) {
  return [h("p", {}, h("a", { href: siteHash(site, "email") }, t("email.back"))), h("h1", {}, title)];
}

export async function renderEmail(shell, note = "") {
  const site = shell.site;
  document.title = `${t("email.heading")} · ${shell.title}`;
  const [caps, templates, layouts, smtp, batches] = await Promise.all([
    data("GET", "/email/capabilities", { site }), data("GET", "/email/templates", { site }), data("GET", "/email/layouts", { site }),
    data("GET", "/email/smtp", { site }), data("GET", "/email/batches", { site, params: { limit: 20 } })]); // -- govern43
  const facts = h("dl", { class: "release-facts" },
    h("dt", {}, t("email.sending")), h("dd", {}, caps.configured ? t(caps.siteSmtp ? "email.siteSmtp" : "email.serverSmtp") : t("email.notConfigured")),
    caps.defaultFrom ? [h("dt", {}, t("email.from")), h("dd", {}, caps.defaultFrom)] : null,
    h("dt", {}, t("email.queueThreshold")), h("dd", {}, String(caps.queueThreshold)));

  // A test send: one plain message to one address, through the site's way out.
  const testForm = sendTo(t("email.test"), t("email.testHint"), t("email.testSend"), async (to) => {
    const sent = await data("POST", "/email/test", { site, body: { to } });
    return t("email.testSent", { to, id: sent.messageId || "" });
  });

  const layoutName = new Map(layouts.map((l) => [l.id, l.name]));
  const templateTable = templates.length ? h("table", { class: "files-table" }, h("caption", {}, t("email.templatesCaption")),
    h("thead", {}, h("tr", {}, [t("email.name"), t("email.key"), t("email.subject"), t("email.layout")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, templates.map((tp) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "email", "t", tp.id) }, tp.name)),
      h("td", {}, h("code", {}, tp.key)), h("td", {}, tp.subject), h("td", {}, layoutName.get(tp.layoutId) || t("email.noLayout"))))))
    : h("p", {}, t("email.noTemplates"));
  const layoutTable = layouts.length ? h("table", { class: "files-table" }, h("caption", {}, t("email.layoutsCaption")),
    h("thead", {}, h("tr", {}, [t("email.name"), t("email.usedBy")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, layouts.map((l) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "email", "l", l.id) }, l.name)),
      h("td", {}, String(templates.filter((tp) => tp.layoutId === l.id).length))))))
    : h("p", {}, t("email.noLayouts"));

  // New template: key, name, subject and a first body; the editor opens on it.
  const key = h("input", { type: "text", required: true, maxlength: "100", pattern: "[a-z0-9_.\\-]+", autocomplete: "off" });
  const name = h("input", { type: "text", required: true, maxlength: "200" });
  const subject = h("input", { type: "text", required: true, maxlength: "998" });
  const newStatus = h("div", { role: "status" });
  const newTemplate = h("form", { "aria-label": t("email.newTemplate"), onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/email/templates", { site, body: {
        key: key.value.trim(), name: name.value.trim(), subject: subject.value, html: "<p>{{ name }}</p>" } });
      go(siteHash(site, "email", "t", made.id));
    } catch (err) {
      replace(newStatus, said(err));
    }
  } }, labelled(t("email.key"), key, t("email.keyHint")), labelled(t("email.name"), name), labelled(t("email.subject"), subject),
  h("button", { type: "submit" }, t("email.createTemplate")), newStatus);

  const layoutNew = h("input", { type: "text", required: true, maxlength: "200" });
  const layoutStatus = h("div", { role: "status" });
  const newLayout = h("form", { "aria-label": t("email.newLayout"), onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/email/layouts", { site, body: { name: layoutNew.value.trim(), html: "<div>{{content}}</div>" } });
      go(siteHash(site, "email", "l", made.id));
    } catch (err) {
      replace(layoutStatus, said(err));
    }
  } }, labelled(t("email.name"), layoutNew), h("button", { type: "submit" }, t("email.createLayout")), layoutStatus);

  replace(shell.main, h("h1", {}, t("email.heading")),
    h("p", {}, h("a", { href: siteHash(site, "email", "suppressions") }, t("email.suppressions"))),
    note ? h("p", { role: "status" }, note) : null, // -- govern43: what the SMTP form just did
    section(t("email.delivery"), facts, testForm),
    smtpSection(site, smtp, (said) => renderEmail(shell, said)), // -- govern43
    marketingSection(site, templates, batches), // -- govern43
    section(t("email.templates"), templateTable, h("details", {}, h("summary", {}, t("email.newTemplate")), newTemplate)),
    section(t("email.layouts"), layoutTable, h("details", {}, h("summary", {}, t("email.newLayout")), newLayout)));
}

export async function renderTemplate(shell, id) {
  const site = shell.site;
  const [templates, layouts] = await Promise.all([data("GET", "/email/templates", { site }), data("GET", "/email/layouts", { site })]);
  let tpl = templates.find((x) => x.id === id);
  if (!tpl) return replace(shell.main, ...head(site, t("email.templateGone")));
  document.title = `${tpl.name} · ${t("email.heading")} · ${shell.title}`;
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const name = h("input", { type: "text", required: true, maxlength: "200", value: tpl.name });
  const key = h("input", { type: "text", required: true, maxlength: "100", value: tpl.key, autocomplete: "off" });
  const subject = h("input", { type: "text", required: true, value: tpl.subject });
  const layout = h("select", {}, h("option", { value: "" }, t("email.noLayout")),
    layouts.map((l) => h("option", { value: l.id, selected: l.id === tpl.layoutId }, l.name)));
  const html = h("textarea", { rows: "10", class: "code", spellcheck: "false" });
  html.value = tpl.html || "";
  const text = h("textarea", { rows: "5", class: "code", spellcheck: "false" });
  text.value = tpl.text || "";
  const variables = h("textarea", { rows: "5", class: "code", spellcheck: "false" });
  variables.value = sessionStorage.getItem(`svc.studio.email.vars.${id}`) || '{\n  "name": "Ann"\n}';

  // -- the preview: the server's rendering of the source as typed with these variables
  const frame = previewFrame(t("email.previewFrame"));
  const pvSubject = h("output", {});
  const pvText = h("pre", { class: "email-text", tabindex: "0", "aria-label": t("email.previewText") });
  const pvStatus = h("p", { role: "status", class: "muted" });
  let dirty = false;
  let timer = null;
  let asked = 0;
  const preview = async () => {
    const mine = ++asked;
    let vars;
    try {
      vars = parseVariables(variables.value);
    } catch (err) {
      return replace(pvStatus, t("email.variablesInvalid", { message: err.message }));
    }
    sessionStorage.setItem(`svc.studio.email.vars.${id}`, variables.value);
    try {
      // The source as typed, saved or not (POST /email/templates/preview): nothing is stored.
      const shown = await data("POST", "/email/templates/preview", { site, body: { subject: subject.value,
        html: html.value || null, text: text.value || null, layoutId: layout.value || null, variables: vars } });
      if (mine !== asked) return; // a later keystroke asked again meanwhile
      replace(pvSubject, shown.subject);
      frame.show(shown.html || "");
      replace(pvText, shown.text || "");
      replace(pvStatus, dirty ? t("email.previewUnsaved") : t("email.previewShown"));
    } catch (err) {
      if (mine === asked) replace(pvStatus, said(err));
    }
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(preview, PREVIEW_MS); };
  variables.addEventListener("input", soon);
  for (const el of [name, key, subject, layout, html, text]) el.addEventListener("input", () => { dirty = true; });
  for (const el of [subject, layout, html, text]) el.addEventListener("input", soon);

  const form = h("form", { "aria-label": t("email.templateSource"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      tpl = await data("PATCH", `/email/templates/${encodeURIComponent(id)}`, { site, body: {
        name: name.value.trim(), key: key.value.trim(), subject: subject.value, layoutId: layout.value || null,
        html: html.value || null, text: text.value || null } });
      dirty = false;
      replace(flash, t("email.saved"));
      document.title = `${tpl.name} · ${t("email.heading")} · ${shell.title}`;
      await preview();
    } catch (err) {
      replace(alert, said(err));
    }
  } }, labelled(t("email.name"), name), labelled(t("email.key"), key, t("email.keyHint")),
  labelled(t("email.subject"), subject, t("email.placeholderHint")), labelled(t("email.layout"), layout),
  labelled(t("email.html"), html, t("email.htmlHint")), labelled(t("email.text"), text, t("email.textHint")),
  h("p", {}, h("button", { type: "submit" }, t("email.save")), " ",
    deleteButton(site, `/email/templates/${encodeURIComponent(id)}`, t("email.deleteTemplate"), alert)));

  // -- a send of this template (transactional) to one address, with the preview's variables
  const sendForm = sendTo(t("email.sendTemplate"), t("email.sendHint"), t("email.sendTemplateButton"), async (to) => {
    const sent = await data("POST", "/email/send", { site, body: { to: [to], templateKey: tpl.key, variables: parseVariables(variables.value) } });
    return t("email.templateSent", { to, sent: sent.sent, suppressed: sent.suppressed });
  });

  replace(shell.main, ...head(site, tpl.name), flash, alert,
    h("div", { class: "email-columns" },
      section(t("email.templateSource"), form),
      section(t("email.preview"),
        labelled(t("email.variables"), variables, t("email.variablesHint")), pvStatus,
        h("p", {}, h("strong", {}, t("email.subject")), ": ", pvSubject), frame.el,
        h("h3", {}, t("email.previewText")), pvText,
        section(t("email.sendTemplate"), sendForm))));
  await preview();
}

export async function renderLayout(shell, id) {
  const site = shell.site;
  const layouts = await data("GET", "/email/layouts", { site });
  let layout = layouts.find((x) => x.id === id);
  if (!layout) return replace(shell.main, ...head(site, t("email.layoutGone")));
  document.title = `${layout.name} · ${t("email.heading")} · ${shell.title}`;
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const name = h("input", { type: "text", required: true, maxlength: "200", value: layout.name });
  const html = h("textarea", { rows: "12", class: "code", spellcheck: "false" });
  html.value = layout.html;
  const form = h("form", { "aria-label": t("email.layout"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      layout = await data("PATCH", `/email/layouts/${encodeURIComponent(id)}`, { site, body: { name: name.value.trim(), html: html.value } });
      replace(flash, t("email.saved"));
    } catch (err) {
      replace(alert, said(err));
    }
  } }, labelled(t("email.name"), name), labelled(t("email.html"), html, t("email.layoutHint")),
  h("p", {}, h("button", { type: "submit" }, t("email.save")), " ",
    deleteButton(site, `/email/layouts/${encodeURIComponent(id)}`, t("email.deleteLayout"), alert)));
  replace(shell.main, ...head(site, layout.name), flash, alert, form, h("p", { class: "muted" }, t("email.layoutPreviewHint")));
}

export async function renderSuppressions(shell, query) {
  const site = shell.site;
  document.title = `${t("email.suppressions")} · ${shell.title}`;
  const search = query.get("search") || "";
  const page = Math.max(1, Number(query.get("page")) || 1);
  const { body } = await call("GET", "/email/suppressions", { site, params: { limit: PAGE, offset: (page - 1) * PAGE, search } });
  const rows = body.data;
  const total = body.meta.total;
  const hashFor = (changes) => pagedHash(siteHash(site, "email", "suppressions"), { search, page: String(page), ...changes });
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const list = h("div");
  const draw = () => replace(list, rows.length ? h("table", { class: "files-table" },
    h("caption", {}, t("email.suppressionsCaption", { total })),
    h("thead", {}, h("tr", {}, [t("email.address"), t("email.reason"), t("email.source"), t("email.since"), ""].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((s) => h("tr", {},
      h("th", { scope: "row" }, s.email), h("td", {}, s.reason || ""), h("td", {}, s.source || ""),
      h("td", {}, new Date(s.createdAt).toLocaleString(document.documentElement.lang)),
      h("td", {}, h("button", { type: "button", class: "quiet", "aria-label": t("email.unsuppress", { email: s.email }), onclick: async () => {
        replace(alert);
        try {
          await call("DELETE", `/email/suppressions/${encodeURIComponent(s.email)}`, { site });
          rows.splice(rows.indexOf(s), 1);
          keepFocus(list, draw);
          replace(flash, t("email.unsuppressed", { email: s.email }));
        } catch (err) {
          replace(alert, said(err));
        }
      } }, t("email.remove")))))))
    : h("p", {}, search ? t("email.noMatches") : t("email.noSuppressions")));
  draw();
  const find = h("input", { type: "search", value: search, autocomplete: "off" });
  const searchForm = h("form", { role: "search", "aria-label": t("email.searchSuppressions"), onsubmit: (event) => {
    event.preventDefault();
    go(hashFor({ search: find.value.trim(), page: "1" }));
  } }, labelled(t("email.searchSuppressions"), find), h("button", { type: "submit" }, t("email.search")));
  const address = h("input", { type: "email", required: true, autocomplete: "off" });
  const reason = h("input", { type: "text", maxlength: "200" });
  const addForm = h("form", { "aria-label": t("email.suppress"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      const body = { email: address.value.trim() };
      if (reason.value.trim()) body.reason = reason.value.trim();
      const made = await data("POST", "/email/suppressions", { site, body });
      rows.unshift(made);
      draw();
      replace(flash, t("email.suppressed", { email: made.email }));
      address.value = "";
      reason.value = "";
    } catch (err) {
      replace(alert, said(err));
    }
  } }, labelled(t("email.address"), address), labelled(t("email.reason"), reason), h("button", { type: "submit" }, t("email.suppress")));
  replace(shell.main, ...head(site, t("email.suppressions")), h("p", { class: "muted" }, t("email.suppressionsHint")),
    flash, alert, searchForm, list, pager(page, total, PAGE, hashFor), section(t("email.suppress"), addForm));
}
// -- end email
