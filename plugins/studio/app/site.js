// What the studio reads about a site when it opens it: the collections, what the user may do
// (GET /permissions/me), the site's look (GET /site), the user's sites and preferences.

import { ApiError, data, session } from "./api.js";

/** The answer of `promise`, or `fallback` when the API says 403 or 404. */
export async function optional(promise, fallback) {
  try {
    return await promise;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) return fallback;
    throw err;
  }
}

export async function loadSite(site) {
  const [collections, permissions, config, sites, preferences, releases] = await Promise.all([
    data("GET", "/collections", { site }),
    data("GET", "/permissions/me", { site }),
    optional(data("GET", "/site", { site }), {}),
    data("GET", "/me/sites", { site: "" }),
    optional(data("GET", "/me/preferences", { site }), {}),
    optional(data("GET", "/releases", { site, params: { limit: 1 } }).then(() => true), false), // -- releases: served to this user?
  ]);
  const ctx = {
    site, config: config || {}, sites, permissions,
    language: (preferences && preferences.language) || "en",
    // -- editor: the user's preferences (saveAction)
    preferences: preferences || {},
    releases, // -- releases: the releases API serves this user (not the front-end realm; the plugin on)
    /** The fields of `collection` the user may use for `action`: ["*"], a list, or []. */
    fields(collection, action) {
      if (permissions.admin) return ["*"];
      const rules = permissions.permissions || {};
      const rule = (rules[collection] && rules[collection][action]) || (rules["*"] && rules["*"][action]);
      return rule && rule.allowed ? rule.fields || [] : [];
    },
    may(collection, action, field) {
      const fields = this.fields(collection, action);
      return field === undefined ? fields.length > 0 : fields.includes("*") || fields.includes(field);
    },
  };
  // -- releases: the change feed's screens, for site admins when the cdc plugin is on (a cheap read)
  ctx.feed = Boolean(permissions.admin) && await optional(data("GET", "/cdc/events", { site, params: { limit: 1 } }).then(() => true), false);
  // What the site's optional screens need, asked at once (each answers false/null when its plugin
  // is off or the user may not use it):
  // -- emailpriv: the email, privacy and regulated screens, for site admins when those plugins are on
  // -- ext_ui: the extensions' UI panels (null: the extensions plugin is off); their management for
  // the instance admin, whose session is bound to no site (the API decides: GET /extensions)
  // -- dashboards: the dashboards API serves this user (the plugin on, rule read on svc_dashboards)
  // -- flows editor: the flows screens, for site admins when the flows plugin is on (a cheap read)
  // -- ai_ui: the copilot and its inbox (the ai plugin serves this user), agents (site admins, plugin on)
  const probe = (path, params) =>
    optional(data("GET", path, { site, params }).then(() => true), false);
  const admin = (path) => (permissions.admin ? probe(path) : false);
  let ui;
  [ctx.email, ctx.privacy, ctx.regulated, ui, ctx.dashboards, ctx.flows, ctx.copilot, ctx.agents] = await Promise.all([
    admin("/email/capabilities"), admin("/retention"), admin("/admin/encryption/keys"),
    optional(data("GET", "/extensions/ui/manifest", { site }), null),
    probe("/dashboards", { limit: 1 }), admin("/flows/operations"),
    probe("/ai/skills"), admin("/agent/kill-switch")]);
  ctx.extensions = ui !== null;
  ctx.extPanels = (ui || []).filter((e) => e.src);
  // -- govern43: site admins manage what the instance admin made available to their site
  ctx.instanceAdmin = !session.bound && session.realm !== "frontend";
  ctx.extensionsAdmin = ctx.extensions && (ctx.instanceAdmin || Boolean(permissions.admin));
  ctx.collections = collections.filter((c) => ctx.may(c.name, "read"));
  if (!sites.some((s) => s.id === site)) ctx.sites = [...sites, { id: site, name: config.name || site }];
  return ctx;
}
