// -- releases: content releases (docs/releases-and-editorial.md), for the site's members that the
// releases API serves (not the front-end realm: ctx.releases, probed when the site opens).
//   #/s/<site>/releases        the releases, newest first, and a form to create one
//   #/s/<site>/releases/<id>   one release: its items with their pinned revisions and outcomes,
//                              the schedule in the site's time zone with its maintenance windows,
//                              publish (each item's outcome) and roll back (the blockers named)
// Items are added from a list's selection (releases_pick.js). A publish is one API call: while it
// runs the page shows a progress bar; its outcome is stored by the API, so leaving the page and
// coming back shows it, and a scheduled release's page follows its status until it has run.

import { ApiError, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";
import { optional } from "./site.js";
import { fromZoned, toZoned } from "./zones.js";
import { settle, track } from "./work.js"; // -- progress

const MODES = ["all_or_nothing", "best_effort"];
const DAYS = [0, 1, 2, 3, 4, 5, 6];
const FOLLOW_MS = 2000; // a scheduled release's page reads it again this often while it waits
const RUNNING = new Map(); // release id -> { verb, call }: a publish or rollback under way in this tab

/** The site's time zone for releases (setting releases.timezone), UTC when unset. */
export async function siteZone(site) {
  const setting = await optional(data("GET", "/settings/releases.timezone", { site }), null);
  return (setting && setting.value) || "UTC";
}

// Small helpers of the releases and change feed screens (feed.js and releases_pick.js use them).

/** A labelled control, with a hint as its description when one is given. */
export function labelled(label, control, hint) {
  control.id = control.id || uid("rel");
  const hintEl = hint ? h("p", { id: uid("rel-hint"), class: "muted" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "me-field" }, h("label", { for: control.id }, label), control, hintEl);
}

export function section(title, ...children) {
  const id = uid("rel-h");
  return h("section", { class: "me-section", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}

/** The API's refusal as one line: its message and code. */
export function said(err) {
  return err instanceof ApiError ? `${err.message} (${err.code})` : err.message;
}

/** Run `redraw()`, which replaces what `container` holds, keeping the keyboard focus on the
 * control at the same place among its buttons, inputs and selects (the redrawn one). */
export function keepFocus(container, redraw) {
  const controls = () => [...container.querySelectorAll("button, input, select, a[href]")];
  const at = controls().indexOf(document.activeElement);
  redraw();
  if (at < 0) return;
  const now = controls();
  if (now.length) now[Math.min(at, now.length - 1)].focus();
}

export async function renderReleases(shell) {
  const site = shell.site;
  document.title = `${t("releases.heading")} · ${shell.title}`;
  const releases = await data("GET", "/releases", { site, params: { limit: 200 } });
  const zone = await siteZone(site);
  const name = h("input", { type: "text", required: true, maxlength: "200" });
  const mode = h("select", {}, MODES.map((m) => h("option", { value: m }, t(`releases.mode.${m}`))));
  const status = h("p", { role: "status" });
  const form = h("form", { "aria-label": t("releases.create"), onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/releases", { site, body: { name: name.value.trim(), atomicityMode: mode.value } });
      go(siteHash(site, "releases", made.id));
    } catch (err) {
      replace(status, said(err));
      name.focus();
    }
  } }, labelled(t("releases.name"), name), labelled(t("releases.modeLabel"), mode),
  h("button", { type: "submit" }, t("releases.create")), status);
  const rows = releases.map((r) => h("tr", {},
    h("th", { scope: "row" }, h("a", { href: siteHash(site, "releases", r.id) }, r.name)),
    h("td", {}, t(`releases.status.${r.status}`)), h("td", {}, String(r.itemCount)),
    h("td", {}, r.publishAt ? toZoned(r.publishAt, zone) : "")));
  const table = releases.length ? h("table", { class: "files-table" },
    h("caption", {}, t("releases.caption")),
    h("thead", {}, h("tr", {}, [t("releases.name"), t("releases.statusLabel"), t("releases.items"),
      t("releases.publishAtIn", { zone })].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows)) : h("p", {}, t("releases.none"));
  replace(shell.main, h("h1", {}, t("releases.heading")), h("p", { class: "muted" }, t("releases.addHint")),
    table, section(t("releases.create"), form));
}

export async function renderRelease(shell, id) {
  const site = shell.site;
  const path = `/releases/${encodeURIComponent(id)}`;
  const zone = await siteZone(site);
  let release = await data("GET", path, { site });
  let follow = null;
  const flash = h("div", { role: "status", class: "release-flash" });
  const alert = h("div", { role: "alert" });
  const body = h("div");

  const draw = (note) => {
    document.title = `${release.name} · ${t("releases.heading")} · ${shell.title}`;
    keepFocus(body, () => replace(body, header(), itemsTable(), schedule(), actions()));
    if (note !== undefined) replace(flash, note);
    clearTimeout(follow);
    // -- progress: a scheduled release is published by the scheduler; its page follows it
    if (release.status === "scheduled") follow = setTimeout(reread, FOLLOW_MS);
  };
  const reread = async () => {
    if (!body.isConnected) return;
    const before = release.status;
    release = await data("GET", path, { site });
    draw(before !== release.status ? t("releases.nowStatus", { status: t(`releases.status.${release.status}`) }) : undefined);
  };
  const write = async (changes, note) => {
    replace(alert);
    try {
      release = await data("PATCH", path, { site, body: changes });
      draw(note);
    } catch (err) {
      replace(alert, said(err));
    }
  };

  const header = () => h("dl", { class: "release-facts" },
    h("dt", {}, t("releases.statusLabel")), h("dd", {}, t(`releases.status.${release.status}`)),
    h("dt", {}, t("releases.modeLabel")), h("dd", {}, t(`releases.mode.${release.atomicityMode}`)),
    h("dt", {}, t("releases.zone")), h("dd", {}, zone),
    release.nextRunAt ? [h("dt", {}, t("releases.nextRun")), h("dd", {}, toZoned(release.nextRunAt, zone))] : null,
    release.publishedAt ? [h("dt", {}, t("releases.publishedAt")), h("dd", {}, toZoned(release.publishedAt, zone))] : null,
    release.lastError ? [h("dt", {}, t("releases.lastError")), h("dd", {}, release.lastError)] : null);

  const editable = () => release.status !== "published";
  const itemsTable = () => {
    const items = release.items || [];
    if (!items.length) return h("p", {}, t("releases.empty"));
    return h("table", { class: "files-table" }, h("caption", {}, t("releases.itemsCaption")),
      h("thead", {}, h("tr", {}, [t("releases.item"), t("releases.target"), t("releases.pinned"), t("releases.outcome"), ""]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, items.map((it) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: siteHash(site, "c", it.collection, "i", it.itemId) }, `${it.collection} / ${it.itemId}`)),
        h("td", {}, it.targetStatus),
        h("td", {}, it.revisionId ? t("releases.revision", { id: it.revisionId }) : it.versionKey ? t("releases.version", { key: it.versionKey }) : t("releases.latest")),
        h("td", {}, it.outcome ? `${t(`releases.outcome.${it.outcome}`)}${it.reason ? ` (${it.reason})` : ""}` : ""),
        h("td", {}, editable() ? h("button", { type: "button", class: "quiet",
          "aria-label": t("releases.removeItem", { item: `${it.collection} / ${it.itemId}` }),
          onclick: () => write({ removeItems: [{ collection: it.collection, itemId: it.itemId }] }, t("releases.removed")) },
        t("releases.remove")) : "")))));
  };

  const schedule = () => {
    if (!editable()) return null;
    const at = h("input", { type: "datetime-local", value: release.publishAt ? toZoned(release.publishAt, zone).replace(" ", "T") : "" });
    const windows = ((release.maintenanceWindow && release.maintenanceWindow.windows) || []).map((w) => ({ ...w }));
    const list = h("ul", { class: "release-windows", "aria-label": t("releases.windows") });
    const drawWindows = () => replace(list, windows.map((w, i) => {
      const n = i + 1;
      const day = h("select", { "aria-label": t("releases.windowDay", { n }), onchange: (e) => { w.dow = Number(e.target.value); } },
        DAYS.map((d) => h("option", { value: String(d), selected: d === w.dow }, t(`releases.day.${d}`))));
      const start = h("input", { type: "time", value: w.start, "aria-label": t("releases.windowStart", { n }), onchange: (e) => { w.start = e.target.value; } });
      const end = h("input", { type: "time", value: w.end === "24:00" ? "23:59" : w.end, "aria-label": t("releases.windowEnd", { n }), onchange: (e) => { w.end = e.target.value; } });
      return h("li", {}, day, start, end, h("button", { type: "button", class: "quiet", "aria-label": t("releases.windowRemove", { n }),
        onclick: () => { windows.splice(i, 1); drawWindows(); } }, t("releases.remove")));
    }));
    drawWindows();
    const add = h("button", { type: "button", onclick: () => { windows.push({ dow: 6, start: "01:00", end: "03:00" }); drawWindows(); } }, t("releases.windowAdd"));
    const save = h("button", { type: "submit" }, t("releases.scheduleSave"));
    const clear = release.publishAt ? h("button", { type: "button", class: "quiet", onclick: () => write({ publishAt: null }, t("releases.unscheduled")) }, t("releases.unschedule")) : null;
    const form = h("form", { "aria-label": t("releases.schedule"), onsubmit: (event) => {
      event.preventDefault();
      const changes = { maintenanceWindow: windows.length ? { windows } : null };
      if (at.value) changes.publishAt = fromZoned(at.value, zone);
      write(changes, t("releases.scheduled"));
    } }, labelled(t("releases.publishAtIn", { zone }), at), h("p", { class: "muted" }, t("releases.windowsHint", { zone })), list, add, h("p", {}, save, clear));
    return section(t("releases.schedule"), form);
  };

  const actions = () => {
    const buttons = [];
    const mayPublish = release.status !== "published" && (release.items || []).length > 0;
    if (mayPublish) buttons.push(h("button", { type: "button", onclick: () => run("publish") }, t("releases.publish")));
    if (release.status === "published" || release.status === "partially_failed") {
      buttons.push(h("button", { type: "button", onclick: () => run("rollback") }, t("releases.rollback")));
    }
    if (editable()) buttons.push(h("button", { type: "button", class: "quiet", onclick: remove }, t("releases.delete")));
    return section(t("releases.actions"), h("p", {}, buttons));
  };

  // -- progress: publish and roll back are one call each; the bar shows while it runs, and a
  // page left meanwhile finds the same call running when it comes back (RUNNING)
  const run = async (verb, pending) => {
    replace(alert);
    replace(flash, h("progress", { "aria-label": t(`releases.${verb}ing`) }), " ", t(`releases.${verb}ing`));
    try {
      let call = pending;
      if (!call) {
        call = data("POST", `${path}/${verb}`, { site }).finally(() => RUNNING.delete(id));
        RUNNING.set(id, { verb, call });
        // -- progress: the call in the work in progress list (work.js), settled when it answers
        const key = `${site}:release:${id}`;
        track(site, key, { kind: verb, name: release.name, href: siteHash(site, "releases", id), done: null, total: null });
        call.then(() => settle(key), (err) => settle(key, said(err) || String(err)));
      }
      const answer = await call;
      if (!body.isConnected) return;
      release = await data("GET", path, { site });
      const counts = {};
      for (const o of answer.outcomes || []) counts[o.outcome] = (counts[o.outcome] || 0) + 1;
      const summary = Object.entries(counts).map(([o, n]) => `${n} ${t(`releases.outcome.${o}`)}`).join(", ");
      draw(t(`releases.${verb}Done`, { status: t(`releases.status.${answer.status}`), summary }));
    } catch (err) {
      replace(flash);
      if (!(err instanceof ApiError)) throw err;
      const first = err.errors[0] || {};
      const blockers = (first.extensions && first.extensions.outcomes) || [];
      replace(alert, h("p", {}, said(err)), blockers.length ? h("ul", { "aria-label": t("releases.blockers") },
        blockers.map((b) => h("li", {}, `${b.collection} / ${b.itemId}: ${b.reason}${b.message ? ` (${b.message})` : ""}`))) : null,
      blockers.length ? h("p", { class: "muted" }, t("releases.noForce")) : null);
    }
  };
  const remove = async () => {
    await data("DELETE", path, { site }).catch((err) => { replace(alert, said(err)); throw err; });
    go(siteHash(site, "releases"));
  };

  draw();
  const pending = RUNNING.get(id);
  if (pending) run(pending.verb, pending.call);
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "releases") }, t("releases.back"))),
    h("h1", {}, release.name), flash, alert, body);
}
// -- end releases
