// -- me: the signed-in person's own page, #/s/<site>/me (docs/studio.md, "Your account").
// Profile (PATCH /auth/me: the name; the email is an admin's to change), password
// (POST /me/change-password: its answer's token carries the session on, every other session
// ends), sessions (/me/sessions), personal API keys (/me/api-keys: the key shown once),
// preferences (/me/preferences: language switches the studio at once), consents
// (/me/consents) and the data export (GET /me/data-export, downloaded as a file).

import { ApiError, adopt, call, callRaw, data, session } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { optional } from "./site.js"; // -- govern43
import { setAppearance } from "./theme.js";

export const LANGUAGES = [["en", "English"], ["de", "Deutsch"]];
const SAVE_ACTIONS = ["stay", "return", "create_new"];
const SAVE_KEYS = ["mod+s", "mod+enter"];

/** A labelled control with a place for the API's error at it (aria-describedby); people*.js use it too. */
export function field(label, control, hint = "") {
  const id = control.id || uid("me");
  control.id = id;
  const errorId = uid("me-err");
  const error = h("p", { id: errorId, class: "field-error" });
  const hintEl = hint ? h("p", { id: uid("me-hint"), class: "muted" }, hint) : null;
  control.setAttribute("aria-describedby", [hintEl && hintEl.id, errorId].filter(Boolean).join(" "));
  const wrap = h("div", { class: "me-field" }, h("label", { for: id }, label), control, hintEl, error);
  return {
    wrap, control,
    fail(message) { control.setAttribute("aria-invalid", "true"); replace(error, message); },
    clear() { control.removeAttribute("aria-invalid"); replace(error); },
  };
}

export function section(title, ...children) {
  const id = uid("me-h");
  return h("section", { class: "me-section", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

export function when(iso) {
  return iso ? new Date(iso).toLocaleString(document.documentElement.lang) : t("me.never");
}

/** Show the API's error: at the field it names, else in the section's status. */
export function showError(err, fields, status) {
  if (err instanceof ApiError) {
    for (const e of err.errors) {
      const name = e.path && e.path[0];
      if (name && fields[name]) {
        fields[name].fail(e.message);
        fields[name].control.focus();
        return;
      }
    }
  }
  replace(status, t("error.generic", { message: err.message }));
}

function profile(user) {
  const status = h("p", { role: "status" });
  const f = {
    firstName: field(t("me.firstName"), h("input", { type: "text", autocomplete: "given-name", value: user.firstName || "" })),
    lastName: field(t("me.lastName"), h("input", { type: "text", autocomplete: "family-name", value: user.lastName || "" })),
    email: field(t("me.email"), h("input", { type: "email", readonly: true, value: user.email }), t("me.emailHint")),
  };
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    Object.values(f).forEach((x) => x.clear());
    try {
      const saved = await data("PATCH", "/auth/me", { site: "", body: { firstName: f.firstName.control.value, lastName: f.lastName.control.value } });
      session.user = saved;
      replace(status, t("me.profileSaved"));
    } catch (err) { showError(err, f, status); }
  } }, f.firstName.wrap, f.lastName.wrap, f.email.wrap, h("button", { type: "submit" }, t("me.saveProfile")), status);
  return section(t("me.profile"), form);
}

function password(onChanged) {
  const status = h("p", { role: "status" });
  const f = {
    currentPassword: field(t("me.currentPassword"), h("input", { type: "password", autocomplete: "current-password", required: true })),
    newPassword: field(t("me.newPassword"), h("input", { type: "password", autocomplete: "new-password", required: true }), t("me.newPasswordHint")),
  };
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    Object.values(f).forEach((x) => x.clear());
    replace(status);
    try {
      const answer = await data("POST", "/me/change-password", { site: "", body: {
        currentPassword: f.currentPassword.control.value, newPassword: f.newPassword.control.value } });
      adopt(answer); // this session goes on with the new token; every other one has ended
      f.currentPassword.control.value = "";
      f.newPassword.control.value = "";
      replace(status, t("me.passwordChanged"));
      onChanged();
    } catch (err) {
      if (err instanceof ApiError && err.code === "INVALID_CREDENTIALS") {
        f.currentPassword.fail(t("me.wrongPassword"));
        f.currentPassword.control.focus();
      } else showError(err, f, status);
    }
  } }, f.currentPassword.wrap, f.newPassword.wrap, h("button", { type: "submit" }, t("me.changePassword")), status);
  return section(t("me.password"), form);
}

function sessions() {
  const status = h("p", { role: "status" });
  const body = h("div");
  const load = async () => {
    const rows = await data("GET", "/me/sessions", { site: "" });
    const others = rows.filter((s) => !s.current);
    const end = async (path, message) => {
      await call("DELETE", path, { site: "" });
      await load();
      replace(status, message);
    };
    replace(body,
      h("table", {},
        h("caption", {}, t("me.sessionsCaption")),
        h("thead", {}, h("tr", {}, [t("me.device"), t("me.started"), t("me.lastUsed"), t("me.action")].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, rows.map((s) => h("tr", {},
          h("td", {}, s.userAgent || t("me.unknownDevice"), s.current ? h("span", { class: "badge badge-current" }, t("me.thisSession")) : null),
          h("td", {}, when(s.createdAt)), h("td", {}, when(s.lastUsedAt)),
          h("td", {}, s.current ? "" : h("button", { type: "button", class: "secondary", "aria-label": t("me.endSessionOf", { when: when(s.createdAt) }),
            onclick: () => end(`/me/sessions/${encodeURIComponent(s.id)}`, t("me.sessionEnded")) }, t("me.endSession"))))))),
      h("button", { type: "button", disabled: others.length === 0, onclick: async () => {
        for (const s of others) await call("DELETE", `/me/sessions/${encodeURIComponent(s.id)}`, { site: "" });
        await load();
        replace(status, t("me.othersEnded"));
      } }, t("me.endOthers")));
  };
  return { el: section(t("me.sessions"), body, status), load };
}

function apiKeys(site) {
  const status = h("p", { role: "status" });
  const list = h("div");
  const shown = h("div", { class: "me-secret" });
  const name = field(t("me.keyName"), h("input", { type: "text", required: true, maxlength: 200 }));
  const load = async () => {
    const keys = await data("GET", "/me/api-keys", { site });
    replace(list, keys.length === 0 ? h("p", {}, t("me.noKeys")) : h("table", {},
      h("caption", {}, t("me.keysCaption")),
      h("thead", {}, h("tr", {}, [t("me.keyName"), t("me.keyPrefix"), t("me.started"), t("me.lastUsed"), t("me.action")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, keys.map((k) => h("tr", {},
        h("td", {}, k.name), h("td", {}, h("code", {}, `svk_${k.prefix}…`)), h("td", {}, when(k.createdAt)), h("td", {}, when(k.lastUsedAt)),
        h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": t("me.revokeKey", { name: k.name }), onclick: async () => {
          await call("DELETE", `/me/api-keys/${encodeURIComponent(k.id)}`, { site });
          replace(shown);
          await load();
          replace(status, t("me.keyRevoked", { name: k.name }));
        } }, t("me.revoke"))))))));
  };
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    name.clear();
    try {
      const created = await data("POST", "/me/api-keys", { site, body: { name: name.control.value.trim() } });
      const secretId = uid("me-key");
      replace(shown, h("label", { for: secretId }, t("me.newKey")),
        h("input", { id: secretId, type: "text", readonly: true, value: created.key, class: "mono" }),
        h("p", { class: "notice" }, t("me.keyOnce")));
      name.control.value = "";
      await load();
      replace(status, t("me.keyCreated", { name: created.name }));
    } catch (err) { showError(err, { name }, status); }
  } }, name.wrap, h("button", { type: "submit" }, t("me.createKey")));
  return { el: section(t("me.apiKeys"), h("p", { class: "muted" }, t("me.keysHint")), form, shown, list, status), load };
}

function preferences(prefs, meta, onLanguage) {
  const status = h("p", { role: "status" });
  const opt = (value, label, current) => h("option", { value, selected: value === current }, label);
  const language = field(t("me.language"), h("select", { onchange: (event) => onLanguage(event.target.value) },
    LANGUAGES.map(([code, label]) => opt(code, label, prefs.language || document.documentElement.lang))));
  const appearance = field(t("me.appearance"), h("select", {},
    opt("", t("me.siteDefault"), prefs.appearance || ""), ["auto", "light", "dark"].map((a) => opt(a, t(`me.appearance.${a}`), prefs.appearance))));
  const keys = (prefs.keybindings && prefs.keybindings.save) || "mod+s";
  const saveKey = field(t("me.saveKey"), h("select", {}, SAVE_KEYS.map((k) => opt(k, t(`me.key.${k}`), keys))));
  const saveAction = field(t("me.saveAction"), h("select", {},
    opt("", t("me.siteDefaultAction", { action: t(`me.action.${meta.saveAction || "stay"}`) }), prefs.saveAction || ""),
    SAVE_ACTIONS.map((a) => opt(a, t(`me.action.${a}`), prefs.saveAction))));
  const fields = { appearance, keybindings: saveKey, saveAction };
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    Object.values(fields).forEach((x) => x.clear());
    try {
      const body = { appearance: appearance.control.value || null, keybindings: { save: saveKey.control.value },
        saveAction: saveAction.control.value || null };
      const saved = await data("PATCH", "/me/preferences", { site: session.site, body });
      Object.assign(prefs, saved);
      setAppearance(saved.appearance);
      replace(status, t("me.preferencesSaved"));
    } catch (err) { showError(err, fields, status); }
  } }, appearance.wrap, saveKey.wrap, saveAction.wrap, h("button", { type: "submit" }, t("me.savePreferences")), status);
  return section(t("me.preferences"), h("div", { class: "me-form" }, language.wrap), form);
}

function consents(site) {
  const status = h("p", { role: "status" });
  const body = h("fieldset", {}, h("legend", {}, t("me.consentsLegend")));
  const load = async () => {
    const rows = await data("GET", "/me/consents", { site });
    replace(body, h("legend", {}, t("me.consentsLegend")), rows.map((c) => {
      const id = uid("consent");
      const box = h("input", { id, type: "checkbox", checked: c.granted, onchange: async () => {
        try {
          const saved = await data("PUT", `/me/consents/${encodeURIComponent(c.consentType)}`, { site,
            body: { granted: box.checked, source: "studio", version: "1" } });
          replace(status, t(saved.granted ? "me.consentGiven" : "me.consentWithdrawn", { type: t(`me.consent.${c.consentType}`) }));
        } catch (err) {
          box.checked = !box.checked;
          replace(status, t("error.generic", { message: err.message }));
        }
      } });
      return h("div", { class: "me-check" }, box, h("label", { for: id }, t(`me.consent.${c.consentType}`)));
    }));
  };
  return { el: section(t("me.consents"), body, status), load };
}

/** -- govern43: restriction of processing (GDPR art. 18), the user's own: GET, PUT /me/restriction.
 * Null when the privacy plugin is off (404). */
async function restriction(site) {
  const current = await optional(data("GET", "/me/restriction", { site }), null);
  if (!current) return null;
  const status = h("p", { role: "status" });
  const box = h("input", { type: "checkbox", id: uid("restrict"), checked: current.restricted });
  const reason = h("textarea", { id: uid("restrict-reason"), rows: "2", maxlength: "500" });
  reason.value = current.reason || "";
  const state = h("p", {}, t(current.restricted ? "me.restricted" : "me.notRestricted"));
  const form = h("form", { "aria-label": t("me.restriction"), onsubmit: async (event) => {
    event.preventDefault();
    const body = { restricted: box.checked };
    if (box.checked && reason.value.trim()) body.reason = reason.value.trim();
    try {
      const saved = await data("PUT", "/me/restriction", { site, body });
      replace(state, t(saved.restricted ? "me.restricted" : "me.notRestricted"));
      replace(status, t(saved.restricted ? "me.restrictionSet" : "me.restrictionLifted"));
    } catch (err) {
      replace(status, t("error.generic", { message: err.message }));
    }
  } },
  h("div", { class: "me-check" }, box, h("label", { for: box.id }, t("me.restrictBox"))),
  h("div", { class: "me-field" }, h("label", { for: reason.id }, t("me.restrictReason")), reason),
  h("button", { type: "submit" }, t("me.restrictSave")), status);
  return section(t("me.restriction"), h("p", { class: "muted" }, t("me.restrictionHint")), state, form);
}

function dataExport(site) {
  const status = h("p", { role: "status" });
  const button = h("button", { type: "button", onclick: async () => {
    replace(status, t("app.loading"));
    try {
      const resp = await callRaw("GET", "/me/data-export", { site });
      const url = URL.createObjectURL(await resp.blob());
      const link = h("a", { href: url, download: `data-export-${site}.json`, class: "visually-hidden" }, t("me.download"));
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 0);
      replace(status, t("me.exported"));
    } catch (err) { replace(status, t("error.generic", { message: err.message })); }
  } }, t("me.download"));
  return section(t("me.export"), h("p", { class: "muted" }, t("me.exportHint")), button, status);
}

/** The page; `onLanguage(code)` stores the language and shows the studio in it. */
export async function renderMe(shell, { onLanguage }) {
  const site = shell.site;
  const [user, prefsAnswer] = await Promise.all([
    data("GET", "/auth/me", { site: "" }),
    call("GET", "/me/preferences", { site }),
  ]);
  const prefs = prefsAnswer.body.data;
  const meta = prefsAnswer.body.meta || {};
  const s = sessions();
  const k = apiKeys(site);
  const c = consents(site);
  const restricted = await restriction(site); // -- govern43
  document.title = `${t("me.heading")} · ${t("app.title")}`;
  replace(shell.main, h("h1", {}, t("me.heading")),
    profile(user), password(() => s.load()), s.el, k.el,
    preferences(prefs, meta, onLanguage), c.el, restricted, dataExport(site));
  await Promise.all([s.load(), k.load(), c.load()]);
}
