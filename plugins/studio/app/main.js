// The studio's entry: the hash router, the login page and the shell (site switcher, navigator).
// Every view's state is in the URL hash, so any screen can be bookmarked and reloaded:
//   #/login                         #/s/<site>                      the site's home
//   #/s/<site>/c/<collection>?sort=-title&page=2&search=x           a list
//   #/s/<site>/c/<collection>/new   #/s/<site>/c/<collection>/i/<id> the editor
//   #/s/<site>/c/<collection>/i/<id>/history                        its revisions and versions (-- history)
//   #/s/<site>/me                                                   the user's own page (-- me)
//   #/s/<site>/releases[/<id>], #/s/<site>/feed[/<id>]              releases, the change feed (-- releases)
//   #/s/<site>/email[/...], #/s/<site>/privacy[/<tab>]              email; privacy and regulated content (-- emailpriv)
//   #/s/<site>/extensions[/<id>], #/s/<site>/ext/<extension>/<panel> extensions, their UI panels (-- ext_ui)
//   #/s/<site>/dashboards[/<id>[/panels/<pid>|new]]                 dashboards (-- dashboards)
//   #/s/<site>/flows[/<id>[/runs[/<run>]]]                          flows, their runs (-- flows editor)
//   #/s/<site>/ai/approvals[/<id>], #/s/<site>/agents                the approval inbox, agents (-- ai_ui)

import { ApiError, SessionEnded, data, login, logout, refresh, session, switchSite } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { renderEditor, singletonOf } from "./editor.js";
import { renderHistory } from "./history.js"; // -- history
import { setLanguage, t } from "./i18n.js";
import { renderList } from "./list.js";
import { go, leaving } from "./router.js";
import { loadSite } from "./site.js";
import { renderReviewPanel } from "./workflow.js"; // -- history
import { renderMe } from "./me.js"; // -- me
// -- live (slive): theming, live updates, notifications, work kept across a session end
import { notificationBell } from "./bell.js";
import { dropDrafts, keepDraft } from "./drafts.js";
import { liveList, liveRedraw, showState, startLive, stopLive } from "./live.js";
import { applyTheme, setAppearance } from "./theme.js";
// -- files: the media library, for site admins
import { renderMedia } from "./media.js";
import { renderMediaFile } from "./media_file.js";
// -- end files
import { actingBanner, peopleLinks, renderPeople } from "./people.js"; // -- people
// -- schema: the schema screens, for site admins
import { renderSchema } from "./schema.js";
const SCHEMA_LINK = "schema:"; // the navigator's key of the schema link
// -- end schema
import { renderSiteSettings } from "./site_settings.js"; // -- studio41: the site's settings, for site admins
import { icon } from "./icons.js"; // -- studio42: collection icons in the navigator
// -- releases: releases and the change feed (feed.js)
import { renderFeed, renderSubscription } from "./feed.js";
import { renderRelease, renderReleases } from "./releases.js";
import { renderWork, workLink } from "./work.js"; // -- progress: the work in progress
const RELEASES_LINK = "releases:";
const FEED_LINK = "feed:";
// -- end releases
// -- emailpriv: email (email.js), privacy and regulated content (privacy.js), for site admins
import { renderEmail, renderLayout, renderSuppressions, renderTemplate } from "./email.js";
import { renderPrivacy } from "./privacy.js";
const EMAIL_LINK = "email:";
const PRIVACY_LINK = "privacy:";
// -- end emailpriv
// -- ext_ui: the extensions screens (instance admin) and the extensions' UI panels (members)
import { renderExtension, renderExtensions } from "./extensions.js";
import { renderPanel } from "./ext_panel.js";
const EXTENSIONS_LINK = "extensions:";
// -- end ext_ui
// -- dashboards: dashboards.js is loaded on its first use (it brings the charting library)
const DASHBOARDS_LINK = "dashboards:";
// -- end dashboards
// -- flows editor: the flows screens, for site admins when the flows plugin is on
import { renderFlow, renderFlows } from "./flows.js";
import { renderRun, renderRuns } from "./flows_runs.js";
const FLOWS_LINK = "flows:";
// -- end flows editor
// -- ai_ui: the copilot's side panel (every page), the approval inbox, the agents screen
import { copilotPanel, renderApprovals } from "./copilot.js";
import { renderAgents } from "./agents.js";
const INBOX_LINK = "ai:approvals";
const AGENTS_LINK = "agents:";
// -- end ai_ui
const LANGUAGE = "svc.studio.language"; // the last preference, for the login page
setLanguage(localStorage.getItem(LANGUAGE) || navigator.language);
function sessionEnded() {
  keepDraft();
  stopLive();
  showLogin({ site: session.site, message: t("login.expired") });
}
// -- end live

const root = document.getElementById("app");
const FILES_LINK = "files:"; // -- files: the navigator's key of the library's link (no collection has ":")
const SETTINGS_LINK = "settings:"; // -- studio41: the key of the site settings' link
let shell = null; // { site, ctx, main, nav } while a site is shown
// -- editor: the hash shown now, put back when the user stays on a screen with unsaved changes
let shownHash = location.hash;
// -- studio42: routes overlap (a shell drawn again after Stop acting while the user opens another
// screen): a route that a newer one overtook while it read the site draws nothing.
let routes = 0;
class Overtaken extends Error {}
// A route draws through this view of the shell: once a newer route has started (the user opened
// another screen while this one still read the API), its `main` is an element of its own that is
// not shown, so a slow screen cannot draw over the one the user went to. Everything else (and
// every property a screen sets) is the shell's own.
function screenOf(turn) {
  const away = h("main", {});
  return new Proxy(shell, { get: (target, key) => (key === "main" && turn !== routes ? away : Reflect.get(target, key)) });
}

function parse() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { parts, query: new URLSearchParams(query) };
}

async function route() {
  // -- editor: ask before leaving unsaved changes
  if (leaving.ask && location.hash !== shownHash) {
    const ask = leaving.ask;
    if (!(await ask())) return history.replaceState(null, "", shownHash || "#/");
  }
  leaving.ask = null;
  shownHash = location.hash;
  const turn = ++routes; // -- studio42
  const { parts, query } = parse();
  try {
    if (parts[0] === "login") return showLogin({ site: query.get("site") || session.site, message: query.get("why") });
    if (!session.token && !(await refresh())) return showLogin({ site: session.site });
    if (parts[0] !== "s" || !parts[1]) return go(`#/s/${encodeURIComponent(await firstSite())}`);
    const site = parts[1];
    if (session.bound && session.bound !== site) {
      // -- studio41: this session's tokens are bound to another site: the session moves to this
      // one (POST /auth/switch-site); only a site the user is not a member of asks for a login.
      stopLive();
      const moved = await switchSite(site).then(() => true, (err) => {
        if (err instanceof ApiError && [401, 403, 404].includes(err.status)) return false;
        throw err;
      });
      if (!moved) return showLogin({ site, message: t("login.again", { site }) });
    }
    await showSite(site, turn);
    const shown = screenOf(turn); // the screen this route draws, while no newer route has started
    // -- files: #/s/<site>/files?folder=&view=, #/s/<site>/files/<id>
    if (parts[2] === "files") {
      shown.nav.mark(FILES_LINK);
      // -- studio42c: awaited, so a file of another site (404) shows "Not found." (the route's catch)
      return await (parts[3] ? renderMediaFile(shown, parts[3]) : renderMedia(shown, query));
    }
    // -- end files
    // -- people: #/s/<site>/people/<screen>[/<id>] (people*.js), for site admins
    if (parts[2] === "people") {
      shown.nav.mark(`people:${parts[3] || "users"}`);
      return await renderPeople(shown, parts.slice(3), query, { restart });
    }
    // -- end people
    // -- schema: #/s/<site>/schema[/c/<name>[/new-field|/f/<field>]|/relations|/config]
    if (parts[2] === "schema") {
      shown.nav.mark(SCHEMA_LINK);
      // A change of the collections drops the shell: the next screen reads the site again.
      return await renderSchema(shown, parts.slice(3), { onChanged: async () => { shell = null; } });
    }
    // -- end schema
    // -- studio41: #/s/<site>/settings
    if (parts[2] === "settings") {
      shown.nav.mark(SETTINGS_LINK);
      return await renderSiteSettings(shown);
    }
    // -- releases: #/s/<site>/releases[/<id>] (members the releases API serves), #/s/<site>/feed[/<id>] (admins, cdc on)
    if (parts[2] === "releases" && shown.ctx.releases) {
      shown.nav.mark(RELEASES_LINK);
      return parts[3] ? await renderRelease(shown, parts[3]) : await renderReleases(shown);
    }
    if (parts[2] === "feed" && shown.ctx.feed) {
      shown.nav.mark(FEED_LINK);
      return parts[3] ? await renderSubscription(shown, parts[3]) : await renderFeed(shown);
    }
    if (parts[2] === "releases" || parts[2] === "feed") return showError(new ApiError(404, []));
    // -- end releases
    // -- emailpriv: #/s/<site>/email[/t/<id>|/l/<id>|/suppressions], #/s/<site>/privacy[/<tab>]
    if (parts[2] === "email" && shown.ctx.email) {
      shown.nav.mark(EMAIL_LINK);
      if (parts[3] === "t" && parts[4]) return await renderTemplate(shown, parts[4]);
      if (parts[3] === "l" && parts[4]) return await renderLayout(shown, parts[4]);
      if (parts[3] === "suppressions") return await renderSuppressions(shown, query);
      return await renderEmail(shown);
    }
    if (parts[2] === "privacy" && (shown.ctx.privacy || shown.ctx.regulated)) {
      shown.nav.mark(PRIVACY_LINK);
      return await renderPrivacy(shown, parts[3] || "", query);
    }
    if (parts[2] === "email" || parts[2] === "privacy") return showError(new ApiError(404, []));
    // -- end emailpriv
    // -- ext_ui: #/s/<site>/extensions[/<id>] (the instance admin), #/s/<site>/ext/<extension>/<panel>
    if (parts[2] === "extensions" && shown.ctx.extensionsAdmin) {
      shown.nav.mark(EXTENSIONS_LINK);
      // A change of what is enabled drops the shell: the next screen reads the site's panels again.
      return parts[3] ? await renderExtension(shown, parts[3], { onChanged: () => { shell = null; } }) : await renderExtensions(shown);
    }
    if (parts[2] === "ext" && parts[4] && shown.ctx.extensions) {
      shown.nav.mark(`ext:${parts[3]}/${parts[4]}`);
      return await renderPanel(shown, parts[3], parts[4]);
    }
    if (parts[2] === "extensions" || parts[2] === "ext") return showError(new ApiError(404, []));
    // -- end ext_ui
    // -- dashboards: #/s/<site>/dashboards[/<id>[/panels/<pid>|new]] (members the dashboards API serves)
    if (parts[2] === "dashboards") {
      if (!shown.ctx.dashboards) return showError(new ApiError(404, []));
      shown.nav.mark(DASHBOARDS_LINK);
      const { renderDashboard, renderDashboards } = await import("./dashboards.js");
      return parts[3] ? await renderDashboard(shown, parts[3], parts.slice(4)) : await renderDashboards(shown);
    }
    // -- end dashboards
    // -- flows editor: #/s/<site>/flows[/<id>[/runs[/<run>]]]
    if (parts[2] === "flows") {
      if (!shown.ctx.flows) return showError(new ApiError(404, []));
      shown.nav.mark(FLOWS_LINK);
      if (!parts[3]) return await renderFlows(shown);
      if (parts[4] === "runs") return parts[5] ? await renderRun(shown, parts[3], parts[5]) : await renderRuns(shown, parts[3], query);
      return await renderFlow(shown, parts[3]);
    }
    // -- end flows editor
    // -- ai_ui: #/s/<site>/ai/approvals[/<id>] (ai on), #/s/<site>/agents (site admins, agents on)
    if (parts[2] === "ai" && parts[3] === "approvals" && shown.ctx.copilot) {
      shown.nav.mark(INBOX_LINK);
      return await renderApprovals(shown, parts[4], query);
    }
    if (parts[2] === "agents" && shown.ctx.agents) {
      shown.nav.mark(AGENTS_LINK);
      return await renderAgents(shown);
    }
    if (parts[2] === "ai" || parts[2] === "agents") return showError(new ApiError(404, []));
    // -- end ai_ui
    // -- progress: #/s/<site>/work, the work in progress (work.js)
    if (parts[2] === "work") {
      shown.nav.mark(null);
      return await renderWork(shown);
    }
    // -- end progress
    // -- me: the user's own page
    if (parts[2] === "me") {
      shown.nav.mark(null);
      return await renderMe(shown, { onLanguage: switchLanguage });
    }
    const collection = parts[2] === "c" ? parts[3] : null;
    shown.nav.mark(collection);
    if (!collection) return showHome();
    if (parts[4] === "new") return await renderEditor(shown, collection, null);
    // -- history: an item's revisions and versions; the review panel under its editor
    if (parts[4] === "i" && parts[5] && parts[6] === "history") return await renderHistory(shown, collection, parts[5]);
    if (parts[4] === "i" && parts[5]) {
      // Awaited inside the try: an item the API answers 404 for shows "Not found." (the catch below).
      await renderEditor(shown, collection, parts[5]);
      return await renderReviewPanel(shown, collection, parts[5]);
    }
    // -- editor: a singleton opens straight in its editor
    if (singletonOf(shown.ctx, collection)) return await renderEditor(shown, collection, null);
    // -- live (slive): the list re-fetches when another session writes
    const list = shown;
    await renderList(list, collection, query);
    // -- studio42: held while the user has unsaved input in the list (live.js, liveRedraw)
    return liveList(collection, () => liveRedraw(list.main, () => renderList(list, collection, query, { live: true })));
  } catch (err) {
    if (err instanceof Overtaken) return; // -- studio42
    if (err instanceof SessionEnded) return sessionEnded(); // live (slive): keeps the editor's work
    if (turn !== routes) return; // a newer route shows its own screen (or its own error)
    showError(err);
  }
}

async function firstSite() {
  const sites = await data("GET", "/me/sites", { site: "" });
  const ids = sites.map((s) => s.id);
  if (session.site && ids.includes(session.site)) return session.site;
  if (session.bound) return session.bound;
  return ids[0] || "";
}

function showError(err) {
  const main = shell ? shell.main : root;
  const message = err instanceof ApiError && err.status === 404 ? t("error.notFound") : t("error.generic", { message: err.message });
  replace(main, h("p", { role: "alert", class: "error" }, message));
  if (!(err instanceof ApiError)) console.error(err);
}

function showLogin({ site = "", message = "" } = {}) {
  shell = null;
  const ids = { email: uid("email"), password: uid("password"), site: uid("site") };
  const status = h("p", { role: "alert", class: message ? "notice" : "" }, message || "");
  const email = h("input", { id: ids.email, type: "email", name: "email", autocomplete: "username", required: true, value: session.email });
  const password = h("input", { id: ids.password, type: "password", name: "password", autocomplete: "current-password", required: true });
  const siteInput = h("input", { id: ids.site, type: "text", name: "site", autocomplete: "off", value: site || "" });
  const form = h("form", { class: "login", "aria-labelledby": "login-heading", onsubmit: async (event) => {
    event.preventDefault();
    replace(status, t("app.loading"));
    try {
      await login(email.value.trim(), password.value, siteInput.value.trim());
      if (siteInput.value.trim()) session.site = siteInput.value.trim();
      password.value = "";
      // Back to the screen that asked for the login (the URL was kept), else the first site.
      const here = location.hash;
      go(!here || here.startsWith("#/login") ? "#/" : here);
    } catch (err) {
      const needSite = err instanceof ApiError && err.code === "VALIDATION_FAILED";
      replace(status, needSite ? t("login.needSite") : t("login.failed"));
      (needSite ? siteInput : password).focus();
    }
  } },
  h("h1", { id: "login-heading" }, t("login.heading")),
  h("label", { for: ids.email }, t("login.email")), email,
  h("label", { for: ids.password }, t("login.password")), password,
  h("label", { for: ids.site }, t("login.site")), siteInput,
  h("button", { type: "submit" }, t("login.submit")),
  status);
  document.title = `${t("login.heading")} · ${t("app.title")}`;
  replace(root, h("main", {}, form));
  (email.value ? password : email).focus();
}

async function showSite(site, turn) {
  if (shell && shell.site === site) return;
  shell = null;
  replace(root, h("main", {}, h("p", { role: "status" }, t("app.loading"))));
  const ctx = await loadSite(site);
  if (turn !== routes) throw new Overtaken(); // -- studio42
  session.site = site;
  setLanguage(ctx.language);
  localStorage.setItem(LANGUAGE, ctx.language); // live (slive)
  applyTheme(ctx.config); // live (slive): theme.js
  setAppearance(ctx.preferences.appearance); // -- me: the user's own appearance, if any
  startLive(site); // live (slive)
  const main = h("main", { id: "content", tabindex: "-1" });
  const nav = navigator_(site, ctx);
  const switcherId = uid("site");
  const switcher = h("select", { id: switcherId, onchange: (event) => go(`#/s/${encodeURIComponent(event.target.value)}`) },
    ctx.sites.map((s) => h("option", { value: s.id, selected: s.id === site }, s.name === s.id ? s.id : `${s.name} (${s.id})`)));
  const title = ctx.config.displayTitle || ctx.config.name || site;
  const logo = ctx.config.branding && ctx.config.branding.logoUrl;
  // -- live (slive): the notifications bell and the channel's state
  const bell = notificationBell(site);
  const liveState = h("p", { class: "live muted", role: "status" });
  showState(liveState, (on) => (on ? t("live.on") : t("live.off")));
  // -- end live
  const copilot = ctx.copilot ? copilotPanel(site) : null; // -- ai_ui
  const header = h("header", { class: "bar" },
    h("p", { class: "brand" }, logo ? h("img", { src: logo, alt: "", class: "logo" }) : null, h("span", {}, title)),
    h("div", { class: "switcher" }, h("label", { for: switcherId }, t("shell.site")), switcher),
    h("p", { class: "who" }, t("shell.signedInAs", { email: (session.user && session.user.email) || session.email })),
    h("a", { href: `#/s/${encodeURIComponent(site)}/me`, class: "me-link" }, t("me.link")), // -- me
    liveState, h("div", { class: "bell-wrap" }, bell.button, bell.panel), bell.announce, // live (slive)
    copilot ? copilot.button : null, // -- ai_ui
    session.realm === "frontend" ? null : workLink(site), // -- progress: the work in progress (work.js)
    actingBanner(restart), // -- people: while acting as someone else
    h("button", { type: "button", onclick: async () => { stopLive(); dropDrafts(); await logout(); go("#/login"); } }, t("shell.signOut")));
  replace(root, header, h("div", { class: "columns" }, nav.el, main, copilot ? copilot.panel : null)); // -- ai_ui: the copilot beside
  shell = { site, ctx, main, nav, title };
}

// The navigator: the site's collections, in their folders (meta.group).
function navigator_(site, ctx) {
  const links = new Map();
  const byGroup = new Map();
  for (const c of ctx.collections) {
    const group = (c.meta && c.meta.group) || "";
    if (!byGroup.has(group)) byGroup.set(group, []);
    byGroup.get(group).push(c);
  }
  const entry = (c) => {
    const label = c.displayName || c.meta.displayName || c.name;
    // -- studio42: the collection's icon (icons.js), decorative: the name is the link's label
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/c/${encodeURIComponent(c.name)}` }, icon(c.icon), label);
    links.set(c.name, link);
    return h("li", {}, link);
  };
  const lists = [];
  for (const [group, members] of [...byGroup.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const items = h("ul", {}, members.map(entry));
    lists.push(group ? h("li", {}, h("details", { open: true }, h("summary", {}, group), items)) : members.map(entry));
  }
  const el = h("nav", { "aria-label": t("nav.label") }, h("h2", {}, t("nav.heading")),
    ctx.collections.length ? h("ul", {}, lists) : h("p", {}, t("nav.empty")));
  // -- files: the site admin's screens (hidden from everyone else)
  if (ctx.permissions.admin) {
    const files = h("a", { href: `#/s/${encodeURIComponent(site)}/files` }, t("files.heading"));
    links.set(FILES_LINK, files);
    // -- studio41: the site's settings
    const settings = h("a", { href: `#/s/${encodeURIComponent(site)}/settings` }, t("set.heading"));
    links.set(SETTINGS_LINK, settings);
    el.append(h("h2", {}, t("files.navHeading")), h("ul", { class: "admin-nav" }, h("li", {}, files), h("li", {}, settings)));
  }
  // -- end files
  if (ctx.permissions.admin) el.append(...peopleLinks(site, links)); // -- people
  // -- schema: the schema link, after the files in the site admin's list
  if (ctx.permissions.admin) {
    const schema = h("a", { href: `#/s/${encodeURIComponent(site)}/schema` }, t("schema.heading"));
    links.set(SCHEMA_LINK, schema);
    el.querySelector("ul.admin-nav").append(h("li", {}, schema));
  }
  // -- end schema
  // -- releases: releases for the members the API serves, the change feed for admins
  const publishing = [];
  if (ctx.releases) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/releases` }, t("releases.heading"));
    links.set(RELEASES_LINK, link);
    publishing.push(h("li", {}, link));
  }
  if (ctx.feed) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/feed` }, t("feed.heading"));
    links.set(FEED_LINK, link);
    publishing.push(h("li", {}, link));
  }
  if (publishing.length) el.append(h("h2", {}, t("releases.navHeading")), h("ul", { class: "admin-nav" }, publishing));
  // -- end releases
  // -- emailpriv: email, and privacy and regulated content, in a list of their own (admins only)
  const governance = [];
  if (ctx.email) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/email` }, t("email.heading"));
    links.set(EMAIL_LINK, link);
    governance.push(h("li", {}, link));
  }
  if (ctx.privacy || ctx.regulated) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/privacy` }, t("privacy.heading"));
    links.set(PRIVACY_LINK, link);
    governance.push(h("li", {}, link));
  }
  if (governance.length) el.append(h("h2", {}, t("email.navHeading")), h("ul", { class: "admin-nav" }, governance));
  // -- end emailpriv
  // -- ext_ui: the extensions' panels for every member, their management for the instance admin
  const extLinks = (ctx.extPanels || []).map((p) => {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/ext/${encodeURIComponent(p.extension)}/${encodeURIComponent(p.id)}` }, p.label);
    links.set(`ext:${p.extension}/${p.id}`, link);
    return h("li", {}, link);
  });
  if (ctx.extensionsAdmin) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/extensions` }, t("ext.manage"));
    links.set(EXTENSIONS_LINK, link);
    extLinks.push(h("li", {}, link));
  }
  if (extLinks.length) el.append(h("h2", {}, t("ext.navHeading")), h("ul", { class: "admin-nav" }, extLinks));
  // -- end ext_ui
  // -- dashboards: for the members the dashboards API serves
  if (ctx.dashboards) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/dashboards` }, t("dash.heading"));
    links.set(DASHBOARDS_LINK, link);
    el.append(h("h2", {}, t("dash.navHeading")), h("ul", { class: "admin-nav" }, h("li", {}, link)));
  }
  // -- end dashboards
  // -- flows editor: the automation list, for site admins (ctx.flows)
  if (ctx.flows) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/flows` }, t("flows.heading"));
    links.set(FLOWS_LINK, link);
    el.append(h("h2", {}, t("flows.navHeading")), h("ul", { class: "admin-nav" }, h("li", {}, link)));
  }
  // -- end flows editor
  // -- ai_ui: the approval inbox (every member the ai plugin serves), agents (site admins)
  const aiLinks = [];
  if (ctx.copilot) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/ai/approvals` }, t("ai.inbox"));
    links.set(INBOX_LINK, link);
    aiLinks.push(h("li", {}, link));
  }
  if (ctx.agents) {
    const link = h("a", { href: `#/s/${encodeURIComponent(site)}/agents` }, t("agents.heading"));
    links.set(AGENTS_LINK, link);
    aiLinks.push(h("li", {}, link));
  }
  if (aiLinks.length) el.append(h("h2", {}, t("ai.navHeading")), h("ul", { class: "admin-nav" }, aiLinks));
  // -- end ai_ui
  return {
    el,
    mark(name) {
      for (const [key, link] of links) {
        if (key === name) link.setAttribute("aria-current", "page");
        else link.removeAttribute("aria-current");
      }
    },
  };
}

// -- me: a language picked on the user's page is stored (PATCH /me/preferences) and the whole
// studio is drawn again in it at once: the shell is rebuilt, the page shown again.
async function switchLanguage(code) {
  await data("PATCH", "/me/preferences", { site: shell.site, body: { language: code } });
  setLanguage(code);
  localStorage.setItem(LANGUAGE, code);
  shell = null;
  go(location.hash);
}

// -- people: the shell drawn again for another principal (an impersonation begun or ended)
function restart(hash) {
  stopLive();
  shell = null;
  go(hash);
}

function showHome() {
  document.title = `${shell.title} · ${t("app.title")}`;
  replace(shell.main, h("h1", {}, t("home.heading", { site: shell.title })), h("p", {}, t("home.pick")));
}

// A session that ends during an action (a save, a page turn) ends where the action's promise
// is rejected: show the login page, keeping the URL, so signing in again returns there.
window.addEventListener("unhandledrejection", (event) => {
  if (!(event.reason instanceof SessionEnded)) return;
  event.preventDefault();
  sessionEnded(); // live (slive): keeps the editor's work
});
window.addEventListener("hashchange", route);
route();
