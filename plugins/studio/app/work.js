// -- progress: long work under way, found again after its page is left (docs/studio.md, "Work in progress").
//   #/s/<site>/work   the site's work in progress: each with a labelled progress bar that follows it
//                     while the screen is open, and a link back to the page where it started
// Two sources: work this tab started (a release's publish or rollback, a key rewrap, an envelope
// migration, a change-feed replay, a flow's manual run: the screens register it with track() and
// settle()), and work the server knows is unfinished whoever started it (an envelope migration
// left half done). A replay is followed by reading its subscription's lag again, a flow run by
// reading the run; the others report their own steps while their loop or call goes on.
// -- govern43: for site admins, also everyone's work in the site as the server records it
// (GET /work: publishing, envelope migrations, key rewraps, store-sync backfills, config imports), whoever started
// it and in whichever browser, read again every second while the screen is open.

import { ApiError, SessionEnded, data } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { siteHash } from "./router.js";

const FOLLOW_MS = 1000; // the screen reads followed work (replays, flow runs, the migration) again this often
const KEPT = "svc.studio.work"; // sessionStorage: the work this screen can follow, kept across a reload of the tab
const FOLLOWED = new Set(["replay", "flowRun"]); // the kinds read again from the API here
const WORK = new Map(); // key -> { site, key, kind, name, href, done, total, state, error, subscription?, flow?, run? }
const listeners = new Set();

for (const w of JSON.parse(sessionStorage.getItem(KEPT) || "[]")) WORK.set(w.key, w);

const changed = () => {
  sessionStorage.setItem(KEPT, JSON.stringify([...WORK.values()].filter((w) => FOLLOWED.has(w.kind) && w.state === "running")));
  for (const fn of [...listeners]) fn();
};

/** Start or update a piece of work of `site` under `key`: { kind, name, href, done?, total?, subscription?, flow?, run? }. */
export function track(site, key, fields) {
  const entry = WORK.get(key) || { site, key, state: "running", done: null, total: null, error: "" };
  WORK.set(key, Object.assign(entry, fields, { state: fields.state || "running" }));
  changed();
}

/** The work under `key` has ended: "done", or "failed" with the API's message. */
export function settle(key, error = "") {
  const entry = WORK.get(key);
  if (!entry) return;
  entry.state = error ? "failed" : "done";
  entry.error = error;
  changed();
}

/** Calls `fn` on every change; returns the function that stops it. */
export function onWork(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

const running = (site) => [...WORK.values()].filter((w) => w.site === site && w.state === "running");

/** The header's link to the work screen, its text saying how much is running (kept up to date). */
export function workLink(site) {
  const link = h("a", { href: siteHash(site, "work"), class: "work-link" });
  const draw = () => {
    if (!link.isConnected && link.dataset.drawn) return off();
    link.dataset.drawn = "1";
    const count = running(site).length;
    replace(link, count ? t("work.linkCount", { count }) : t("work.link"));
  };
  const off = onWork(draw);
  draw();
  return link;
}

function bar(w) {
  const label = t("work.progressOf", { name: w.name });
  const known = w.total !== null && w.total !== undefined;
  if (w.state !== "running") return h("progress", { max: "1", value: "1", "aria-label": label });
  return known ? h("progress", { max: String(w.total || 1), value: String(w.done || 0), "aria-label": label })
    : h("progress", { "aria-label": label });
}

function said(w) {
  if (w.state === "failed") return t("work.failed", { error: w.error });
  if (w.state === "done") return w.total !== null && w.total !== undefined ? t("work.doneOf", { total: w.total }) : t("work.done");
  if (w.total !== null && w.total !== undefined) return t("work.runningOf", { done: w.done || 0, total: w.total });
  return w.done !== null && w.done !== undefined ? t("work.runningCount", { done: w.done }) : t("work.running");
}

/** The envelope migration the server holds unfinished (started here or elsewhere), as work. */
async function serverWork(shell) {
  const site = shell.site;
  if (!shell.ctx.regulated) return; // the regulated plugin off, or not a site admin: no migration to show
  const key = `${site}:migrate`;
  const envelope = await data("GET", "/admin/encryption/envelope", { site });
  const known = WORK.get(key);
  if (envelope.migration.done) {
    if (known && known.state === "running") settle(key);
    return;
  }
  track(site, key, { kind: "migration", name: t("privacy.keysTab"), href: siteHash(site, "privacy", "keys"),
    done: envelope.migration.migrated, total: null });
}

/** A replay's catching up, read again from its subscription's lag. */
async function followReplay(w) {
  const sub = await data("GET", `/cdc/subscriptions/${encodeURIComponent(w.subscription)}`, { site: w.site });
  const behind = (sub.lag && sub.lag.events) || 0;
  w.done = Math.max(0, w.total - behind);
  if (!behind) settle(w.key);
}

/** A flow's manual run, read again until it has ended (its steps so far are its count). */
async function followRun(w) {
  const run = await data("GET", `/flows/${encodeURIComponent(w.flow)}/runs/${encodeURIComponent(w.run)}`, { site: w.site });
  w.done = run.steps.length;
  if (run.status !== "running") settle(w.key, run.error ? `${run.error.code}: ${run.error.message}` : "");
}

/** -- govern43: where a server record's work can be seen (its target's page), or null. */
function targetHref(site, w) {
  const target = w.target || {};
  if (target.type === "release") return siteHash(site, "releases", target.id);
  if (w.kind === "migration" || w.kind === "rewrap") return siteHash(site, "privacy", "keys");
  if (w.kind === "import") return siteHash(site, "schema", "config");
  return null;
}

/** -- govern43: everyone's work in the site, as GET /work answers it. */
function drawServer(site, records) {
  if (!records.length) return h("p", {}, t("work.noneServer"));
  const when = (iso) => (iso ? new Date(iso).toLocaleString(document.documentElement.lang) : "");
  return h("ul", { class: "work-list", "aria-label": t("work.serverHeading") }, records.map((r) => {
    // The site's own work (a migration, a rewrap) is named by its page; the rest by its label.
    const name = r.kind === "migration" || r.kind === "rewrap" ? t("privacy.keysTab") : r.label;
    const w = { name, state: r.status, done: r.done, total: r.total, error: r.error || "" };
    const href = targetHref(site, r);
    return h("li", { class: `work ${r.status}` },
      h("p", {}, h("strong", {}, `${t(`work.kind.${r.kind}`)}: `), href ? h("a", { href }, name) : name),
      h("p", {}, bar(w), " ", said(w)),
      h("p", { class: "muted" }, t("work.startedBy", { who: (r.startedBy && r.startedBy.email) || t("work.someone"), at: when(r.startedAt) }),
        r.status === "running" ? ` ${t("work.lastMoved", { at: when(r.updatedAt) })}` : ""));
  }));
}

export async function renderWork(shell) {
  const site = shell.site;
  document.title = `${t("work.heading")} · ${shell.title}`;
  const list = h("div");
  const alert = h("div", { role: "alert" });
  // -- govern43: the server's records, for site admins (members get 403: no section)
  const everyone = shell.ctx.permissions.admin ? h("div") : null;
  const readServer = async () => {
    if (everyone) replace(everyone, drawServer(site, await data("GET", "/work", { site, params: { limit: 50 } })));
  };
  await readServer();
  const draw = () => {
    const all = [...WORK.values()].filter((w) => w.site === site);
    replace(list, all.length ? h("ul", { class: "work-list", "aria-label": t("work.heading") }, all.map((w) => h("li", { class: `work ${w.state}` },
      h("p", {}, h("strong", {}, `${t(`work.kind.${w.kind}`)}: `), h("a", { href: w.href }, w.name)),
      h("p", {}, bar(w), " ", said(w)))))
      : h("p", {}, t("work.none")));
  };
  await serverWork(shell);
  draw();
  replace(shell.main, h("h1", {}, t("work.heading")), h("p", { class: "muted" }, t("work.hint")), alert, list,
    everyone ? h("section", { "aria-labelledby": "work-server" }, h("h2", { id: "work-server" }, t("work.serverHeading")),
      h("p", { class: "muted" }, t("work.serverHint")), everyone) : null);
  const off = onWork(() => (list.isConnected ? draw() : off())); // steps reported by their own loops
  // Follow what reports no steps of its own, until the screen is left.
  const follow = async () => {
    if (!list.isConnected) return;
    try {
      await serverWork(shell);
      await readServer(); // -- govern43
      for (const w of running(site)) {
        // A subscription or flow deleted meanwhile ends its work with the API's answer.
        const read = w.kind === "replay" ? followReplay : w.kind === "flowRun" ? followRun : null;
        if (read) await read(w).catch((err) => { if (err instanceof ApiError) settle(w.key, err.message); else throw err; });
      }
      draw();
    } catch (err) {
      if (err instanceof SessionEnded) throw err;
      replace(alert, err.message || String(err));
    }
    setTimeout(follow, FOLLOW_MS);
  };
  setTimeout(follow, FOLLOW_MS);
}
// -- end progress
