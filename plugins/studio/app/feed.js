// -- releases (feed): the change feed's subscriptions (docs/change-feed.md), for site admins.
//   #/s/<site>/feed        the subscriptions with their status and lag; create one (a webhook's
//                          signing secret is made in the browser and shown once, never again)
//   #/s/<site>/feed/<id>   one subscription: its lag (read again while the page is open), pause and
//                          resume, replay from a cursor or a time, the webhook's delivery log,
//                          a new signing secret (shown once)
// A replay's catching up shows as a progress bar (events delivered of those behind when it began);
// the start is kept in the tab (sessionStorage), so a page left and opened again resumes the bar.

import { SessionEnded, data } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { keepFocus, labelled, said, section } from "./releases.js";
import { go, siteHash } from "./router.js";
import { settle, track } from "./work.js"; // -- progress

const FOLLOW_MS = 1000; // the detail page reads the subscription again this often
const REPLAY = "svc.studio.replay."; // sessionStorage: the lag when a replay began, per subscription

/** A new signing secret: 32 random bytes as hex, from the browser's CSPRNG. */
function newSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return "whsec_" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The secret, once: a read-only field to copy from; the page never shows it again. */
function secretOnce(secret) {
  const field = h("input", { type: "text", readonly: true, value: secret, class: "secret" });
  return h("div", { class: "note", role: "region", "aria-label": t("feed.secretShown") },
    h("p", {}, h("strong", {}, t("feed.secretShown"))), labelled(t("feed.secret"), field, t("feed.secretOnce")));
}

function lagText(sub) {
  if (!sub.lag) return "";
  if (!sub.lag.events) return t("feed.caughtUp");
  return t("feed.behind", { count: sub.lag.events, age: Math.round(sub.lag.oldestAgeSeconds || 0) });
}

export async function renderFeed(shell) {
  const site = shell.site;
  document.title = `${t("feed.heading")} · ${shell.title}`;
  const subs = await data("GET", "/cdc/subscriptions", { site });
  const name = h("input", { type: "text", required: true, maxlength: "100" });
  const kind = h("select", {}, ["webhook", "pull"].map((k) => h("option", { value: k }, t(`feed.kind.${k}`))));
  const url = h("input", { type: "url", placeholder: "https://" });
  const collections = h("input", { type: "text" });
  const status = h("div", { role: "status" });
  const form = h("form", { "aria-label": t("feed.create"), onsubmit: async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), kind: kind.value };
    const names = collections.value.split(",").map((c) => c.trim()).filter(Boolean);
    if (names.length) body.collections = names;
    const secret = kind.value === "webhook" ? newSecret() : null;
    if (secret) Object.assign(body, { url: url.value.trim(), secret });
    try {
      const made = await data("POST", "/cdc/subscriptions", { site, body });
      replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "feed") }, t("feed.back"))),
        h("h1", {}, t("feed.created", { name: made.name })),
        secret ? secretOnce(secret) : null,
        h("p", {}, h("a", { href: siteHash(site, "feed", made.id) }, t("feed.open", { name: made.name }))));
    } catch (err) {
      replace(status, said(err));
    }
  } }, labelled(t("feed.name"), name), labelled(t("feed.kindLabel"), kind),
  labelled(t("feed.url"), url, t("feed.urlHint")), labelled(t("feed.collections"), collections, t("feed.collectionsHint")),
  h("button", { type: "submit" }, t("feed.create")), status);
  const table = subs.length ? h("table", { class: "files-table" }, h("caption", {}, t("feed.caption")),
    h("thead", {}, h("tr", {}, [t("feed.name"), t("feed.kindLabel"), t("feed.status"), t("feed.lag")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, subs.map((s) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "feed", s.id) }, s.name)),
      h("td", {}, t(`feed.kind.${s.kind}`)), h("td", {}, t(`feed.status.${s.status}`)), h("td", {}, lagText(s))))))
    : h("p", {}, t("feed.none"));
  replace(shell.main, h("h1", {}, t("feed.heading")), table, section(t("feed.create"), form));
}

export async function renderSubscription(shell, id) {
  const site = shell.site;
  const path = `/cdc/subscriptions/${encodeURIComponent(id)}`;
  let sub = await data("GET", path, { site });
  let timer = null;
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const facts = h("div");
  const progress = h("div");
  const log = h("div");
  const controls = h("div");

  const drawFacts = () => replace(facts, h("dl", { class: "release-facts" },
    h("dt", {}, t("feed.kindLabel")), h("dd", {}, t(`feed.kind.${sub.kind}`)),
    h("dt", {}, t("feed.status")), h("dd", {}, t(`feed.status.${sub.status}`), sub.statusReason ? ` (${sub.statusReason})` : ""),
    sub.url ? [h("dt", {}, t("feed.url")), h("dd", {}, sub.url)] : null,
    h("dt", {}, t("feed.cursor")), h("dd", {}, h("code", {}, sub.cursor || "")),
    h("dt", {}, t("feed.lag")), h("dd", {}, lagText(sub)),
    sub.lastError ? [h("dt", {}, t("feed.lastError")), h("dd", {}, sub.lastError)] : null));

  // -- progress: the replay's catching up, against the lag when it began (kept in the tab)
  const drawProgress = () => {
    const began = Number(sessionStorage.getItem(REPLAY + id) || 0);
    const behind = (sub.lag && sub.lag.events) || 0;
    if (!began) return replace(progress);
    const done = Math.max(0, began - behind);
    if (!behind) sessionStorage.removeItem(REPLAY + id);
    // -- progress: the replay in the work in progress list (work.js)
    track(site, `${site}:replay:${id}`, { kind: "replay", name: sub.name, href: siteHash(site, "feed", id), subscription: id, done, total: began });
    if (!behind) settle(`${site}:replay:${id}`);
    replace(progress, h("p", {},
      h("progress", { max: String(began), value: String(done), "aria-label": t("feed.replayProgress") }), " ",
      behind ? t("feed.replaying", { done, total: began }) : t("feed.replayDone", { total: began })));
  };

  const drawLog = async () => {
    if (sub.kind !== "webhook") return replace(log);
    const rows = await data("GET", `${path}/deliveries`, { site, params: { limit: 20 } });
    replace(log, section(t("feed.deliveries"), rows.length ? h("table", { class: "files-table" }, h("caption", {}, t("feed.deliveriesCaption")),
      h("thead", {}, h("tr", {}, [t("feed.attemptedAt"), t("feed.attempt"), t("feed.answer"), t("feed.events"), t("feed.duration")]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((d) => h("tr", {},
        h("td", {}, new Date(d.attemptedAt).toLocaleString(document.documentElement.lang)), h("td", {}, String(d.attempt)),
        h("td", {}, d.statusCode ? `HTTP ${d.statusCode}` : d.error || ""), h("td", {}, String(d.events)), h("td", {}, `${d.durationMs} ms`)))))
      : h("p", {}, t("feed.noDeliveries"))));
  };

  const act = async (doing, note) => {
    replace(alert);
    try {
      await doing();
      sub = await data("GET", path, { site });
      keepFocus(controls, drawAll);
      replace(flash, note);
    } catch (err) {
      replace(alert, said(err));
    }
  };

  const drawControls = () => {
    const paused = sub.status === "paused";
    const toggle = sub.status === "active" || paused ? h("button", { type: "button", onclick: () =>
      act(() => data("PATCH", path, { site, body: { status: paused ? "active" : "paused" } }), paused ? t("feed.resumed") : t("feed.paused")) },
    paused ? t("feed.resume") : t("feed.pause")) : null;
    const cursor = h("input", { type: "text", value: sub.cursor || "", autocomplete: "off" });
    const replay = h("form", { "aria-label": t("feed.replay"), onsubmit: (event) => {
      event.preventDefault();
      act(async () => {
        await data("POST", `${path}/replay`, { site, body: { cursor: cursor.value.trim() } });
        const fresh = await data("GET", path, { site });
        if (fresh.lag && fresh.lag.events) sessionStorage.setItem(REPLAY + id, String(fresh.lag.events));
      }, t("feed.replayed"));
    } }, labelled(t("feed.replayCursor"), cursor, t("feed.replayHint")), h("button", { type: "submit" }, t("feed.replay")));
    const rotate = sub.kind === "webhook" ? h("button", { type: "button", class: "quiet", onclick: async () => {
      const secret = newSecret();
      await act(() => data("PATCH", path, { site, body: { secret } }), secretOnce(secret));
    } }, t("feed.rotate")) : null;
    const remove = h("button", { type: "button", class: "quiet", onclick: async () => {
      try {
        await data("DELETE", path, { site });
        go(siteHash(site, "feed"));
      } catch (err) {
        replace(alert, said(err));
      }
    } }, t("feed.delete"));
    replace(controls, section(t("feed.actions"), h("p", {}, toggle, rotate, remove)), section(t("feed.replay"), replay));
  };

  const drawAll = () => { drawFacts(); drawProgress(); drawControls(); drawLog().catch(() => {}); };
  const follow = async () => {
    if (!facts.isConnected) return;
    try {
      sub = await data("GET", path, { site });
      drawFacts();
      drawProgress();
      await drawLog();
    } catch (err) {
      if (err instanceof SessionEnded) throw err;
      replace(alert, said(err)); // gone (deleted elsewhere) or unreachable: stop following
      return;
    }
    timer = setTimeout(follow, FOLLOW_MS);
  };
  document.title = `${sub.name} · ${t("feed.heading")} · ${shell.title}`;
  drawFacts();
  drawProgress();
  drawControls();
  await drawLog();
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "feed") }, t("feed.back"))),
    h("h1", {}, sub.name), flash, alert, facts, progress, controls, log);
  clearTimeout(timer);
  timer = setTimeout(follow, FOLLOW_MS);
}
// -- end releases (feed)
