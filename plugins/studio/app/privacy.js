// -- emailpriv: privacy and regulated content (docs/privacy.md, docs/regulated-content.md), for
// site admins when the privacy or regulated plugin is on. One screen, four parts by URL:
//   #/s/<site>/privacy           consents (the admin's own, as on their page) and erasure requests:
//                                file one, confirm it as the second admin under dual control, execute it
//   #/s/<site>/privacy/export    a subject access export (POST /admin/sar/export), downloaded as JSON
//   #/s/<site>/privacy/keys      the site's keys, rotation and the rewrap of data keys, envelope mode
//                                and its migration, each batch by batch with its progress
//   #/s/<site>/privacy/log       the field-access log (who read which sensitive field of which item)
//   #/s/<site>/privacy/retention -- govern43: each retention target's horizon in the site, the
//                                site's overrides (the setting `retention`), a prune now with its counts
// A rewrap or migration runs in batches while its page is open; the server keeps where it is, so
// a page left and opened again shows the progress so far and carries on from there (RUNNING).

import { call, data, session } from "./api.js";
import { ask, h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { pagedHash, pager } from "./email.js";
import { keepFocus, labelled, said, section } from "./releases.js";
import { go, siteHash } from "./router.js";
import { optional } from "./site.js";
import { settle, track } from "./work.js"; // -- progress

const BATCH = 50; // items or data keys per batch call (the server bounds it by SVC_REGULATED_BATCH)
const LOG_PAGE = 50;
const RUNNING = new Map(); // "<site>:rewrap" | "<site>:migrate" -> { progress } of a loop under way in this tab
const CONSENTS = ["marketing", "analytics", "personalization", "functional", "sale_share"];

const when = (iso) => (iso ? new Date(iso).toLocaleString(document.documentElement.lang) : "");

function tabs(shell, current) {
  const site = shell.site;
  const all = [];
  if (shell.ctx.privacy) all.push(["", t("privacy.erasureTab")]);
  if (shell.ctx.privacy) all.push(["retention", t("privacy.retentionTab")]); // -- govern43
  if (shell.ctx.regulated) all.push(["export", t("privacy.exportTab")], ["keys", t("privacy.keysTab")], ["log", t("privacy.logTab")]);
  return h("nav", { "aria-label": t("privacy.tabs") }, h("ul", { class: "privacy-tabs" }, all.map(([tab, label]) =>
    h("li", {}, h("a", { href: tab ? siteHash(site, "privacy", tab) : siteHash(site, "privacy"), "aria-current": tab === current ? "page" : null }, label)))));
}

export async function renderPrivacy(shell, tab, query) {
  const screens = { "": shell.ctx.privacy && erasures, export: shell.ctx.regulated && sarExport,
    keys: shell.ctx.regulated && keys, log: shell.ctx.regulated && accessLog,
    retention: shell.ctx.privacy && retention }; // -- govern43
  const screen = screens[tab] || (tab === "" && keys);
  if (!screen) return go(siteHash(shell.site, "privacy"));
  document.title = `${t("privacy.heading")} · ${shell.title}`;
  const parts = await screen(shell, query);
  replace(shell.main, h("h1", {}, t("privacy.heading")), tabs(shell, screen === keys && tab === "" ? "keys" : tab), ...parts);
}

// ------------------------------------------------------------------ consents and erasure

async function consentsOverview(site) {
  const rows = await optional(data("GET", "/me/consents", { site }), []);
  const byType = new Map(rows.map((c) => [c.consentType, c]));
  return section(t("privacy.consents"), h("p", { class: "muted" }, t("privacy.consentsHint")),
    h("table", { class: "files-table" }, h("caption", {}, t("privacy.consentsCaption")),
      h("thead", {}, h("tr", {}, [t("privacy.consentType"), t("privacy.granted"), t("privacy.since"), t("privacy.source")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, CONSENTS.map((type) => {
        const c = byType.get(type) || {};
        return h("tr", {}, h("th", { scope: "row" }, t(`me.consent.${type}`)), h("td", {}, c.granted ? t("privacy.yes") : t("privacy.no")),
          h("td", {}, when(c.granted ? c.grantedAt : c.withdrawnAt)), h("td", {}, c.source || ""));
      }))),
    h("p", {}, h("a", { href: siteHash(site, "me") }, t("privacy.changeOnMe"))));
}

/** The controls naming a subject: a collection and a filter typed as JSON. `read()` answers
 * `{ collection, filter }`, or throws a SyntaxError naming what is wrong with the JSON. */
function subjectControls(collections, placeholder) {
  const collection = h("select", { required: true }, collections.map((c) => h("option", { value: c.name }, c.name)));
  const filter = h("textarea", { rows: "3", class: "code", spellcheck: "false", required: true, placeholder });
  const read = () => {
    try {
      return { collection: collection.value, filter: JSON.parse(filter.value) };
    } catch (err) {
      throw new SyntaxError(t("privacy.filterInvalid", { message: err.message }));
    }
  };
  return { collection, filter, read };
}

async function erasures(shell) {
  const site = shell.site;
  const [requests, dual, collections] = await Promise.all([
    data("GET", "/admin/erasure", { site, params: { limit: 100 } }),
    optional(data("GET", "/settings/erasureDualControl", { site }), null),
    data("GET", "/collections", { site })]);
  const me = session.user && session.user.id;
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const list = h("div");
  const act = async (req, verb) => {
    replace(alert);
    try {
      const done = await data("POST", `/admin/erasure/${encodeURIComponent(req.id)}/${verb}`, { site });
      requests.splice(requests.indexOf(req), 1, done);
      keepFocus(list, draw);
      replace(flash, verb === "confirm" ? t("privacy.confirmed") : t("privacy.executed", { count: done.recordCount }));
    } catch (err) {
      replace(alert, said(err));
    }
  };
  const actions = (req) => {
    if (req.status === "awaiting_confirmation") {
      return req.requestedBy === me ? t("privacy.awaitingOther")
        : h("button", { type: "button", onclick: () => act(req, "confirm") }, t("privacy.confirm"));
    }
    if (req.status === "confirmed") return h("button", { type: "button", class: "danger", onclick: () => act(req, "execute") }, t("privacy.execute"));
    return t("privacy.erasedCount", { count: req.recordCount });
  };
  const draw = () => replace(list, requests.length ? h("table", { class: "files-table" }, h("caption", {}, t("privacy.requestsCaption")),
    h("thead", {}, h("tr", {}, [t("privacy.filed"), t("privacy.collection"), t("privacy.fields"), t("privacy.reason"),
      t("privacy.matched"), t("privacy.status"), t("privacy.action")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, requests.map((r) => h("tr", {},
      h("th", { scope: "row" }, when(r.createdAt)), h("td", {}, r.collection), h("td", {}, r.filterFields.join(", ")),
      h("td", {}, r.reason || ""), h("td", {}, String(r.matched)),
      h("td", {}, t(`privacy.status.${r.status}`), r.dualControl ? ` (${t("privacy.dual")})` : ""), h("td", {}, actions(r))))))
    : h("p", {}, t("privacy.noRequests")));
  draw();

  const { collection, filter, read } = subjectControls(collections, '{"email": {"_eq": "ann@example.com"}}');
  const reason = h("input", { type: "text", maxlength: "500" });
  const form = h("form", { "aria-label": t("privacy.newRequest"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      const body = read();
      if (reason.value.trim()) body.reason = reason.value.trim();
      const made = await data("POST", "/admin/erasure", { site, body });
      requests.unshift(made);
      draw();
      filter.value = "";
      replace(flash, made.status === "awaiting_confirmation" ? t("privacy.filedAwaiting", { matched: made.matched }) : t("privacy.filedConfirmed", { matched: made.matched }));
    } catch (err) {
      replace(alert, said(err));
    }
  } }, labelled(t("privacy.collection"), collection), labelled(t("privacy.filter"), filter, t("privacy.filterHint")),
  labelled(t("privacy.reason"), reason, t("privacy.reasonHint")), h("button", { type: "submit" }, t("privacy.file")));

  const dualBox = h("input", { type: "checkbox", checked: Boolean(dual && dual.value), onchange: async () => {
    replace(alert);
    try {
      await data("PUT", "/settings/erasureDualControl", { site, body: { value: dualBox.checked } });
      replace(flash, dualBox.checked ? t("privacy.dualOn") : t("privacy.dualOff"));
    } catch (err) {
      dualBox.checked = !dualBox.checked;
      replace(alert, said(err));
    }
  } });
  dualBox.id = uid("privacy-dual");
  return [await consentsOverview(site),
    section(t("privacy.erasure"), h("p", { class: "me-check" }, dualBox, h("label", { for: dualBox.id }, t("privacy.dualLabel"))),
      h("p", { class: "muted" }, t("privacy.dualHint")), flash, alert, list, section(t("privacy.newRequest"), form))];
}

// ------------------------------------------------------------------ subject access export

async function sarExport(shell) {
  const site = shell.site;
  const collections = await data("GET", "/collections", { site });
  const { collection, filter, read } = subjectControls(collections, '{"ssn": {"_eq": "123-45-6789"}}');
  const result = h("div", { role: "status" });
  const form = h("form", { "aria-label": t("privacy.export"), onsubmit: async (event) => {
    event.preventDefault();
    try {
      const got = await data("POST", "/admin/sar/export", { site, body: read() });
      const url = URL.createObjectURL(new Blob([JSON.stringify(got, null, 2)], { type: "application/json" }));
      replace(result, h("p", {}, t("privacy.exported", { count: got.recordCount })), " ",
        h("a", { href: url, download: `subject-access-${site}-${got.collection}.json` }, t("privacy.download")),
        got.records.length ? h("ul", { "aria-label": t("privacy.exportedItems") }, got.records.map((r) =>
          h("li", {}, h("a", { href: siteHash(site, "c", got.collection, "i", String(r.id)) }, `${got.collection} / ${r.id}`),
            ` (${t("privacy.revisions", { count: (got.provenance[r.id] || []).length })})`))) : null);
    } catch (err) {
      replace(result, h("span", { class: "error" }, said(err)));
    }
  } }, labelled(t("privacy.collection"), collection), labelled(t("privacy.filter"), filter, t("privacy.sarHint")),
  h("button", { type: "submit" }, t("privacy.exportButton")), result);
  return [section(t("privacy.export"), h("p", { class: "muted" }, t("privacy.exportHint")), form)];
}

// ------------------------------------------------------------------ keys and envelope mode

/** A loop of batch calls with a progress bar, kept in RUNNING so a page opened again finds it;
 * `work` ({ site, kind, counts(progress) -> { done, total } }) lists it in the work in progress (work.js). */
function batches(name, step, draw, work) {
  const running = RUNNING.get(name);
  if (running) {
    running.draw = draw;
    draw(running.progress);
    return running.promise;
  }
  const entry = { progress: null, draw };
  const note = (fields) => track(work.site, name, { kind: work.kind, name: t("privacy.keysTab"),
    href: siteHash(work.site, "privacy", "keys"), ...fields });
  note({ done: null, total: null });
  entry.promise = (async () => {
    try {
      for (;;) {
        entry.progress = await step();
        entry.draw(entry.progress);
        note(work.counts(entry.progress));
        if (entry.progress.done) {
          settle(name);
          return entry.progress;
        }
      }
    } catch (err) {
      settle(name, said(err) || String(err));
      throw err;
    } finally {
      RUNNING.delete(name);
    }
  })();
  RUNNING.set(name, entry);
  return entry.promise;
}

async function keys(shell) {
  const site = shell.site;
  let [list, envelope] = await Promise.all([data("GET", "/admin/encryption/keys", { site }), data("GET", "/admin/encryption/envelope", { site })]);
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const keyTable = h("div");
  const rewrapBox = h("div");
  const envBox = h("div");
  const drawKeys = () => replace(keyTable, h("table", { class: "files-table" }, h("caption", {}, t("privacy.keysCaption")),
    h("thead", {}, h("tr", {}, [t("privacy.keyId"), t("privacy.keyStatus"), t("privacy.keySource"), t("privacy.created"), t("privacy.retired")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, list.map((k) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, k.id)), h("td", {}, t(`privacy.key.${k.status}`)),
      h("td", {}, k.source || ""), h("td", {}, when(k.created)), h("td", {}, when(k.retired)))))));
  drawKeys();

  // Rewrap: data keys wrapped by an older loaded key, wrapped again by the active one.
  const rewrapProgress = (p) => {
    const total = (p.rewrappedSoFar || 0) + p.remaining;
    replace(rewrapBox, h("p", {}, h("progress", { max: String(total || 1), value: String(p.done ? total || 1 : p.rewrappedSoFar || 0), "aria-label": t("privacy.rewrapProgress") }), " ",
      p.done ? t("privacy.rewrapDone", { count: p.rewrappedSoFar || 0, unavailable: p.unavailable || 0 })
        : t("privacy.rewrapping", { done: p.rewrappedSoFar || 0, total })));
  };
  const rewrap = async () => {
    let sofar = 0;
    await batches(`${site}:rewrap`, async () => {
      const got = await data("POST", "/admin/encryption/keys/rewrap", { site, body: { limit: BATCH } });
      sofar += got.rewrapped;
      return { ...got, rewrappedSoFar: sofar };
    }, rewrapProgress, { site, kind: "rewrap", counts: (p) => ({ done: p.rewrappedSoFar || 0, total: (p.rewrappedSoFar || 0) + p.remaining }) });
    list = await data("GET", "/admin/encryption/keys", { site });
    drawKeys();
  };
  const candidates = list.filter((k) => k.status === "provisioned" || k.status === "retired");
  const keyPick = h("select", { required: true }, candidates.map((k) => h("option", { value: k.id }, k.id)));
  const rotateForm = candidates.length ? h("form", { "aria-label": t("privacy.rotate"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      const got = await data("POST", "/admin/encryption/keys/rotate", { site, body: { keyId: keyPick.value } });
      list = await data("GET", "/admin/encryption/keys", { site });
      drawKeys();
      replace(flash, t("privacy.rotated", { key: got.activeKeyId, previous: got.previousKeyId || "", remaining: got.remaining }));
      replace(keyPick, list.filter((k) => k.status === "provisioned" || k.status === "retired").map((k) => h("option", { value: k.id }, k.id)));
      migrateProgress(await data("GET", "/admin/encryption/envelope", { site }));
      if (got.remaining) await rewrap();
    } catch (err) {
      replace(alert, said(err));
    }
  } }, labelled(t("privacy.newKey"), keyPick, t("privacy.rotateHint")), h("button", { type: "submit" }, t("privacy.rotate")))
    : h("p", { class: "muted" }, t("privacy.noOtherKey"));
  const rewrapButton = h("button", { type: "button", class: "quiet", onclick: () => rewrap().catch((err) => replace(alert, said(err))) }, t("privacy.rewrap"));

  // Envelope mode: on or off with the admin's password again, then the migration in batches.
  const migrateProgress = (p) => {
    envelope = p;
    replace(envBox, h("dl", { class: "release-facts" },
      h("dt", {}, t("privacy.envelope")), h("dd", {}, envelope.enabled ? t("privacy.on") : t("privacy.off")),
      h("dt", {}, t("privacy.activeKey")), h("dd", {}, envelope.activeKeyId || ""),
      h("dt", {}, t("privacy.migration")), h("dd", {}, t(`privacy.migration.${envelope.migration.state}`))),
    h("p", {}, envelope.migration.done
      ? t("privacy.migrated", { count: envelope.migration.migrated })
      : [h("progress", { "aria-label": t("privacy.migrationProgress") }), " ", t("privacy.migrating", { count: envelope.migration.migrated })]));
  };
  const migrate = () => batches(`${site}:migrate`, () => data("POST", "/admin/encryption/envelope/migrate", { site, body: { limit: BATCH } }), migrateProgress,
    { site, kind: "migration", counts: (p) => ({ done: p.migration.migrated, total: null }) });
  const password = h("input", { type: "password", required: true, autocomplete: "current-password" });
  const envForm = h("form", { "aria-label": t("privacy.envelopeChange"), onsubmit: async (event) => {
    event.preventDefault();
    replace(alert);
    try {
      envelope = await data("POST", "/admin/encryption/envelope", { site, body: { enabled: !envelope.enabled, password: password.value } });
      password.value = "";
      envToggle.textContent = envelope.enabled ? t("privacy.envelopeOff") : t("privacy.envelopeOn");
      migrateProgress(envelope);
      replace(flash, envelope.enabled ? t("privacy.envelopeNowOn") : t("privacy.envelopeNowOff"));
      if (!envelope.done) await migrate();
    } catch (err) {
      replace(alert, said(err));
    }
  } });
  const envToggle = h("button", { type: "submit" }, envelope.enabled ? t("privacy.envelopeOff") : t("privacy.envelopeOn"));
  envForm.append(labelled(t("privacy.password"), password, t("privacy.passwordHint")), envToggle);
  migrateProgress(envelope);
  // A migration or rewrap this tab was running, or one left unfinished: carry on showing it.
  if (RUNNING.has(`${site}:rewrap`)) rewrap().catch((err) => replace(alert, said(err)));
  if (RUNNING.has(`${site}:migrate`) || !envelope.done) migrate().catch((err) => replace(alert, said(err)));
  return [flash, alert,
    section(t("privacy.keys"), keyTable, rotateForm, h("p", {}, rewrapButton), rewrapBox),
    section(t("privacy.envelopeHeading"), h("p", { class: "muted" }, t("privacy.envelopeHint")), envBox, envForm)];
}

// ------------------------------------------------------------------ retention (-- govern43)

async function retention(shell) {
  const site = shell.site;
  const status = h("div", { role: "status" });
  const result = h("div");
  const body = h("div");
  const draw = async () => {
    const rows = await data("GET", "/retention", { site });
    const inputs = rows.map((r) => ({ r, input: h("input", { type: "number", min: "1", max: "36500", required: true, value: String(r.days),
      "aria-label": t("privacy.retentionDaysOf", { target: r.target }) }) }));
    const form = h("form", { "aria-label": t("privacy.retentionForm"), onsubmit: async (event) => {
      event.preventDefault();
      // Only the horizons that differ from their default are the site's own.
      const value = Object.fromEntries(inputs.filter(({ r, input }) => Number(input.value) !== r.default)
        .map(({ r, input }) => [r.target, Number(input.value)]));
      try {
        await data("PUT", "/settings/retention", { site, body: { value } });
        await draw();
        replace(status, t("privacy.retentionSaved"));
      } catch (err) {
        replace(status, h("span", { class: "error" }, said(err)));
      }
    } },
    h("table", { class: "files-table" }, h("caption", {}, t("privacy.retentionCaption", { site })),
      h("thead", {}, h("tr", {}, [t("privacy.retentionTarget"), t("privacy.retentionDays"), t("privacy.retentionDefault"),
        t("privacy.retentionSource"), t("privacy.retentionBefore"), t("privacy.retentionWhat")].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, inputs.map(({ r, input }) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, r.target)), h("td", {}, input),
        h("td", {}, String(r.default)), h("td", {}, t(`privacy.retentionFrom.${r.source}`)), h("td", {}, when(r.before)), h("td", {}, r.description || ""))))),
    h("button", { type: "submit" }, t("privacy.retentionSave")));
    replace(body, form);
  };
  const run = h("button", { type: "button", onclick: async () => {
    const yes = await ask({ title: t("privacy.retentionRunConfirm", { site }), body: h("p", {}, t("privacy.retentionRunHint")),
      choices: [[t("privacy.retentionRun"), true], [t("ext.cancel"), false, { class: "quiet" }]] });
    if (!yes) return;
    replace(result, h("p", { role: "status" }, t("privacy.retentionRunning")));
    try {
      const ran = await data("POST", "/retention/run", { site });
      replace(result, h("p", { role: "status" }, t("privacy.retentionRan", { total: ran.total, at: when(ran.ranAt) })),
        h("table", { class: "files-table" }, h("caption", {}, t("privacy.retentionDeleted")),
          h("tbody", {}, Object.entries(ran.deleted).map(([target, n]) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, target)), h("td", {}, String(n)))))));
    } catch (err) {
      replace(result, h("p", { role: "alert" }, said(err)));
    }
  } }, t("privacy.retentionRun"));
  await draw();
  return [section(t("privacy.retentionHeading"), h("p", { class: "muted" }, t("privacy.retentionHint")), body, status),
    section(t("privacy.retentionRunHeading"), h("p", { class: "muted" }, t("privacy.retentionRunHint")), h("p", {}, run), result)];
}

// ------------------------------------------------------------------ the field-access log

async function accessLog(shell, query) {
  const site = shell.site;
  const filters = { collection: query.get("collection") || "", itemId: query.get("itemId") || "", actorId: query.get("actorId") || "" };
  const page = Math.max(1, Number(query.get("page")) || 1);
  const { body } = await call("GET", "/admin/field-access-log", { site, params: { ...filters, limit: LOG_PAGE, offset: (page - 1) * LOG_PAGE } });
  const hashFor = (changes) => pagedHash(siteHash(site, "privacy", "log"), { ...filters, page: String(page), ...changes });
  const inputs = Object.fromEntries(Object.entries(filters).map(([k, v]) => [k, h("input", { type: "text", value: v, autocomplete: "off", maxlength: "64" })]));
  const form = h("form", { role: "search", "aria-label": t("privacy.logFilter"), onsubmit: (event) => {
    event.preventDefault();
    go(hashFor({ ...Object.fromEntries(Object.entries(inputs).map(([k, el]) => [k, el.value.trim()])), page: "1" }));
  } }, labelled(t("privacy.collection"), inputs.collection), labelled(t("privacy.itemId"), inputs.itemId),
  labelled(t("privacy.actorId"), inputs.actorId), h("button", { type: "submit" }, t("privacy.filterLog")));
  const rows = body.data;
  const total = body.meta.total;
  const table = rows.length ? h("table", { class: "files-table" }, h("caption", {}, t("privacy.logCaption", { total })),
    h("thead", {}, h("tr", {}, [t("privacy.when"), t("privacy.actor"), t("privacy.item"), t("privacy.field"), t("privacy.purpose")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((e) => h("tr", {}, h("th", { scope: "row" }, when(e.createdAt)),
      h("td", {}, `${e.actorId || ""} (${e.actorKind})`),
      h("td", {}, h("a", { href: siteHash(site, "c", e.collection, "i", e.itemId) }, `${e.collection} / ${e.itemId}`)),
      h("td", {}, e.field), h("td", {}, t(`privacy.purpose.${e.purpose}`))))))
    : h("p", {}, t("privacy.noLog"));
  return [section(t("privacy.log"), h("p", { class: "muted" }, t("privacy.logHint")), form, table, pager(page, total, LOG_PAGE, hashFor))];
}
// -- end emailpriv
