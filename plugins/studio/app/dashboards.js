// -- dashboards: the dashboards plugin's screens (docs/dashboards.md), for the members it serves
// (rule `read` on svc_dashboards; ctx.dashboards, probed when the site opens). main.js loads this
// module on demand, so the charting library (vendor/uPlot.esm.js) is fetched only here.
//   #/s/<site>/dashboards                        the dashboards, and a form to create one
//   #/s/<site>/dashboards/<id>                   one dashboard: its panels on a 12-column grid,
//                                                each run and drawn (charts.js); a time series'
//                                                bucket and range changed in place (a preview,
//                                                kept as the panel's own on request); arrange
//                                                mode moves and resizes panels; rename, delete;
//                                                panels run again live when their collection changes
//   #/s/<site>/dashboards/<id>/panels/new|<pid>  a panel's editor (dashboard_panel.js)
// What a caller may change follows its rules on svc_dashboards (create, update, delete); the API
// decides, the screens only leave out what would be refused.

import { SessionEnded, call, data } from "./api.js";
import { drawPanel } from "./charts.js";
import { COLUMNS, INTERVALS, may, renderPanelEditor } from "./dashboard_panel.js";
import { ask, dragging, h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { liveScreen, subscribe } from "./live.js";
import { keepFocus, labelled, said, section } from "./releases.js";
import { go, siteHash } from "./router.js";

const ROW_PX = 56; // a grid unit's height: a panel of h units draws a chart of about h * ROW_PX pixels

export async function renderDashboards(shell) {
  const site = shell.site;
  document.title = `${t("dash.heading")} · ${shell.title}`;
  const boards = await data("GET", "/dashboards", { site, params: { limit: 200 } });
  const table = boards.length ? h("table", { class: "files-table" }, h("caption", {}, t("dash.caption")),
    h("thead", {}, h("tr", {}, [t("dash.name"), t("dash.panels"), t("dash.note")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, boards.map((b) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "dashboards", b.id) }, b.name)),
      h("td", {}, String(b.panelCount)), h("td", {}, b.note || "")))))
    : h("p", {}, t("dash.none"));
  let create = null;
  if (may(shell.ctx, "create")) {
    const name = h("input", { type: "text", required: true, maxlength: "200" });
    const note = h("textarea", { maxlength: "5000", rows: "2" });
    const status = h("p", { role: "status" });
    create = section(t("dash.create"), h("form", { "aria-label": t("dash.create"), onsubmit: async (event) => {
      event.preventDefault();
      try {
        const body = { name: name.value.trim() };
        if (note.value.trim()) body.note = note.value.trim();
        const made = await data("POST", "/dashboards", { site, body });
        go(siteHash(site, "dashboards", made.id));
      } catch (err) {
        replace(status, said(err));
        name.focus();
      }
    } }, labelled(t("dash.name"), name), labelled(t("dash.note"), note), h("button", { type: "submit" }, t("dash.create")), status));
  }
  replace(shell.main, h("h1", {}, t("dash.heading")), table, create);
}

/** Panels in reading order: by row, then column (the grid draws them in this order too). */
const inOrder = (panels) => [...panels].sort((a, b) => a.position.y - b.position.y || a.position.x - b.position.x);

/** Place a panel's element on the grid (CSSOM, which the CSP allows; no style attribute). */
function place(el, position) {
  el.style.gridColumn = `${Math.min(position.x, COLUMNS - 1) + 1} / span ${Math.min(position.w, COLUMNS - Math.min(position.x, COLUMNS - 1))}`;
  el.style.gridRow = `span ${Math.max(1, Math.min(position.h, 12))}`;
}

export async function renderDashboard(shell, id, rest) {
  if (rest[0] === "panels" && rest[1]) return renderPanelEditor(shell, id, rest[1] === "new" ? null : rest[1]);
  const site = shell.site;
  const path = `/dashboards/${encodeURIComponent(id)}`;
  let board = await data("GET", path, { site });
  const mayUpdate = may(shell.ctx, "update");
  let arranging = false;
  const alert = h("div", { role: "alert" });
  const flash = h("p", { role: "status" });
  const grid = h("div", { class: "dash-grid", role: "group", "aria-label": t("dash.gridOf", { name: board.name }) }); // -- more43
  const cards = new Map(); // panel id -> its card: { panel, el, head, range, body, meta, tools, runs }

  const panelPath = (p) => `${path}/panels/${encodeURIComponent(p.id)}`;
  // -- more43: this tab's own writes of panels, counted: a live re-read of the dashboard that
  // overlaps one is dropped and done again once it ended (it could draw the state before it).
  const local = { writes: 0, inFlight: 0, missed: false };
  const writing = async (write) => {
    local.writes += 1;
    local.inFlight += 1;
    try {
      return await write();
    } finally {
      local.inFlight -= 1;
      if (!local.inFlight && local.missed) { local.missed = false; refresh(); } // refresh: below
    }
  };
  const run = async (card, query) => {
    const { panel, body, meta } = card;
    if (panel.type === "label") return;
    card.runs = (card.runs || 0) + 1;
    card.shown = query || null; // what a live redraw runs again (a preview the user has not kept stays)
    const mine = card.runs; // only the latest run draws (controls changed quickly overtake each other)
    replace(meta, t("app.loading"));
    try {
      let rows;
      if (query) {
        rows = await data("POST", `${path}/panels/preview`, { site, body: query });
        if (mine !== card.runs) return;
        replace(meta, t("dash.previewed", { count: rows.length }));
      } else {
        const answer = (await call("POST", `${panelPath(panel)}/data`, { site })).body;
        if (mine !== card.runs) return;
        rows = answer.data;
        replace(meta, t("dash.computed", { at: new Date(answer.meta.executedAt).toLocaleString(document.documentElement.lang),
          count: answer.meta.rowCount }));
      }
      drawPanel(body, query ? { ...panel, query } : panel, rows, { height: Math.max(2, panel.position.h) * ROW_PX - 40 });
    } catch (err) {
      if (err instanceof SessionEnded) throw err; // main.js shows the login page (an unhandled rejection)
      if (mine !== card.runs) return;
      replace(meta);
      replace(body, h("p", { class: "error" }, said(err)));
    }
  };

  // -- in place: a time series' bucket and range, run as a preview (never stored) until kept
  const rangeControls = (card) => {
    const { panel } = card;
    const range = panel.query && panel.query.dateRange;
    if (!range) return null;
    const stored = { interval: range.interval, from: (range.from || "").slice(0, 10), to: (range.to || "").slice(0, 10) };
    const interval = h("select", {}, INTERVALS.map((i) => h("option", { value: i, selected: i === range.interval }, t(`dash.interval.${i}`))));
    const from = h("input", { type: "date", value: stored.from });
    const to = h("input", { type: "date", value: stored.to });
    const keep = h("button", { type: "button", class: "quiet", hidden: true }, t("dash.keepRange")); // shown once changed
    const chosen = () => {
      const next = { ...range, interval: interval.value };
      delete next.from;
      delete next.to;
      if (from.value) next.from = from.value;
      if (to.value) next.to = to.value;
      return { ...panel.query, dateRange: next };
    };
    const changed = () => {
      const differs = interval.value !== stored.interval || from.value !== stored.from || to.value !== stored.to;
      keep.hidden = !(differs && mayUpdate);
      run(card, differs ? chosen() : null);
    };
    keep.addEventListener("click", async () => {
      replace(alert);
      try {
        Object.assign(card.panel, await writing(() => data("PATCH", panelPath(panel), { site, body: { query: chosen() } })));
        Object.assign(stored, { interval: interval.value, from: from.value, to: to.value });
        keep.hidden = true;
        replace(flash, t("dash.rangeKept", { name: panel.name }));
        run(card, null);
      } catch (err) {
        replace(alert, said(err));
      }
    });
    for (const control of [interval, from, to]) control.addEventListener("change", changed);
    return h("form", { class: "dash-range", "aria-label": t("dash.rangeOf", { name: panel.name }), onsubmit: (e) => e.preventDefault() },
      labelled(t("dash.interval"), interval), labelled(t("dash.from"), from), labelled(t("dash.to"), to), mayUpdate ? keep : null);
  };

  // -- arrange: move and resize with buttons (keyboard and pointer alike), each change a PATCH
  const neighbour = (panel, step) => {
    const order = inOrder(board.panels);
    return order[order.findIndex((p) => p.id === panel.id) + step] || null;
  };
  const move = async (panel, label, change) => {
    replace(alert);
    const writes = change(panel);
    try {
      for (const [target, position] of writes) {
        Object.assign(target, await writing(() => data("PATCH", panelPath(target), { site, body: { position } })));
      }
      keepFocus(grid, drawGrid);
      replace(flash, t("dash.moved", { name: panel.name, how: label }));
    } catch (err) {
      replace(alert, said(err));
    }
  };
  // Each move as [key, enabled, change]: the buttons, the arrow keys on the drag handle and the
  // drags (onto another panel: swap places; the corner: resize) all end in move().
  const moves = (panel) => {
    const p = panel.position;
    const swap = (step) => (me) => {
      const other = neighbour(me, step);
      return [[other, { ...other.position, x: me.position.x, y: me.position.y }], [me, { ...me.position, x: other.position.x, y: other.position.y }]];
    };
    const set = (changes) => (me) => [[me, { ...me.position, ...changes }]];
    return [["earlier", Boolean(neighbour(panel, -1)), swap(-1)], ["later", Boolean(neighbour(panel, 1)), swap(1)],
      ["left", p.x > 0, set({ x: p.x - 1 })], ["right", p.x + p.w < COLUMNS, set({ x: p.x + 1 })],
      ["narrower", p.w > 1, set({ w: p.w - 1 })], ["wider", p.x + p.w < COLUMNS, set({ w: p.w + 1 })],
      ["shorter", p.h > 2, set({ h: p.h - 1 })], ["taller", p.h < 12, set({ h: p.h + 1 })]];
  };
  const KEYS = { ArrowUp: "earlier", ArrowDown: "later", ArrowLeft: "left", ArrowRight: "right" };
  const SHIFT_KEYS = { ArrowUp: "shorter", ArrowDown: "taller", ArrowLeft: "narrower", ArrowRight: "wider" };
  const arrangeTools = (panel) => {
    const all = moves(panel);
    const run = (key) => {
      const [, enabled, change] = all.find(([k]) => k === key);
      if (enabled) move(panel, t(`dash.arrange.${key}.done`), change);
    };
    const tool = ([key, enabled]) => h("button", { type: "button", class: "quiet", disabled: !enabled,
      "aria-label": t(`dash.arrange.${key}`, { name: panel.name }), onclick: () => run(key) }, t(`dash.arrange.${key}.short`));
    // -- flows43: drag the handle onto another panel to swap places (its arrow keys move, with
    // Shift resize); drag the corner to resize.
    const handle = h("button", { type: "button", class: "quiet dash-handle", "aria-label": t("dash.dragHandle", { name: panel.name }),
      "aria-keyshortcuts": "ArrowUp ArrowDown ArrowLeft ArrowRight Shift+ArrowLeft Shift+ArrowRight Shift+ArrowUp Shift+ArrowDown",
      title: t("dash.dragHint"), onkeydown: (event) => {
        const key = (event.shiftKey ? SHIFT_KEYS : KEYS)[event.key];
        if (!key) return;
        event.preventDefault();
        run(key);
      } }, "⠿ ", t("dash.drag"));
    const target = (e) => {
      const el = document.elementsFromPoint(e.clientX, e.clientY).map((x) => x.closest("[data-panel]")).find(Boolean);
      const other = el && board.panels.find((x) => x.id === el.dataset.panel);
      return other && other.id !== panel.id ? other : null;
    };
    let over = null;
    dragging(handle, {
      move: (dx, dy, e) => {
        const other = target(e);
        const el = other ? cards.get(other.id).el : null;
        if (over !== el) { if (over) over.classList.remove("drop-target"); over = el; if (el) el.classList.add("drop-target"); }
      },
      drop: (dx, dy, e) => {
        if (over) over.classList.remove("drop-target");
        over = null;
        const other = target(e);
        if (!other) return;
        move(panel, t("dash.swapped", { other: other.name }), (me) => [[other, { ...other.position, x: me.position.x, y: me.position.y }],
          [me, { ...me.position, x: other.position.x, y: other.position.y }]]);
      },
    });
    // -- more43: the corner is a button too (its arrow keys resize, as Shift and the handle's do)
    const corner = h("button", { type: "button", class: "quiet dash-resize", title: t("dash.resizeHint"),
      "aria-label": t("dash.resizeCorner", { name: panel.name }), "aria-keyshortcuts": "ArrowUp ArrowDown ArrowLeft ArrowRight",
      onkeydown: (event) => {
        const key = SHIFT_KEYS[event.key];
        if (!key) return;
        event.preventDefault();
        run(key);
      } }, h("span", { "aria-hidden": "true" }, "⤡"));
    dragging(corner, {
      move: () => {},
      drop: (dx, dy) => {
        const p = panel.position;
        const column = grid.clientWidth / COLUMNS;
        const w = Math.max(1, Math.min(COLUMNS - p.x, p.w + Math.round(dx / column)));
        const h2 = Math.max(2, Math.min(12, p.h + Math.round(dy / ROW_PX)));
        if (w !== p.w || h2 !== p.h) move(panel, t("dash.resized", { w, h: h2 }), (me) => [[me, { ...me.position, w, h: h2 }]]);
      },
    });
    return h("div", { role: "group", class: "dash-arrange", "aria-label": t("dash.arrangeOf", { name: panel.name }) },
      handle, all.map(tool), corner);
  };

  const card = (panel) => {
    const known = cards.get(panel.id);
    if (known) return known;
    const headingId = `dash-panel-${panel.id}`;
    const made = { panel, body: h("div", { class: "dash-body" }), meta: h("p", { class: "muted dash-meta" }) };
    made.el = h("section", { class: `dash-panel dash-type-${panel.type}`, "aria-labelledby": headingId, "data-panel": panel.id });
    made.head = h("h2", { id: headingId }, panel.name);
    made.range = rangeControls(made);
    made.tools = h("div");
    cards.set(panel.id, made);
    run(made, null);
    return made;
  };
  const drawGrid = () => {
    const order = inOrder(board.panels);
    replace(grid, order.map((panel) => {
      const c = card(panel);
      place(c.el, c.panel.position);
      replace(c.tools, arranging ? arrangeTools(c.panel) : null);
      const edit = mayUpdate ? h("a", { href: siteHash(site, "dashboards", id, "panels", panel.id), class: "dash-edit",
        "aria-label": t("dash.editPanel", { name: panel.name }) }, t("dash.edit")) : null;
      replace(c.el, h("div", { class: "dash-panel-head" }, c.head, edit), c.range, c.body, c.meta, c.tools);
      return c.el;
    }));
    if (!order.length) replace(grid, h("p", {}, t("dash.noPanels")));
  };

  const arrange = h("button", { type: "button", "aria-pressed": "false", onclick: () => {
    arranging = !arranging;
    arrange.setAttribute("aria-pressed", String(arranging));
    drawGrid();
    replace(flash, arranging ? t("dash.arrangeOn") : t("dash.arrangeOff"));
  } }, t("dash.arrange"));
  const tools = mayUpdate ? h("p", { class: "dash-tools" },
    h("a", { href: siteHash(site, "dashboards", id, "panels", "new"), class: "button" }, t("dash.addPanel")), " ",
    board.panels.length ? arrange : null) : null;

  const settings = () => {
    const parts = [];
    if (mayUpdate) {
      const name = h("input", { type: "text", required: true, maxlength: "200", value: board.name });
      const note = h("textarea", { maxlength: "5000", rows: "2" }, board.note || "");
      parts.push(h("form", { "aria-label": t("dash.rename"), onsubmit: async (event) => {
        event.preventDefault();
        replace(alert);
        try {
          board = { ...board, ...(await data("PATCH", path, { site, body: { name: name.value.trim(), note: note.value.trim() || null } })) };
          replace(heading, board.name);
          document.title = `${board.name} · ${t("dash.heading")} · ${shell.title}`;
          replace(flash, t("dash.saved"));
        } catch (err) {
          replace(alert, said(err));
        }
      } }, labelled(t("dash.name"), name), labelled(t("dash.note"), note), h("button", { type: "submit" }, t("dash.save"))));
    }
    if (may(shell.ctx, "delete")) {
      parts.push(h("p", {}, h("button", { type: "button", class: "danger", onclick: async () => {
        const sure = await ask({ title: t("dash.confirmDelete", { name: board.name }),
          choices: [[t("dash.delete"), true, { class: "danger" }], [t("dash.cancel"), false, { class: "quiet" }]] });
        if (!sure) return;
        try {
          await call("DELETE", path, { site });
          go(siteHash(site, "dashboards"));
        } catch (err) {
          replace(alert, said(err));
        }
      } }, t("dash.delete"))));
    }
    return parts.length ? section(t("dash.settings"), parts) : null;
  };

  document.title = `${board.name} · ${t("dash.heading")} · ${shell.title}`;
  const heading = h("h1", {}, board.name);
  drawGrid();
  // Live: a write to a collection a panel reads runs that panel again (its data only: the range
  // controls, a preview not kept and the forms keep what the user typed).
  const readable = new Set(shell.ctx.collections.map((c) => c.name)); // a subscription the ticket refuses would turn live off
  const watched = () => new Set(board.panels.map((p) => p.query && p.query.collection).filter((c) => c && readable.has(c)));
  for (const collection of watched()) subscribe(collection);
  // -- more43: the dashboard itself changed elsewhere (a panel added, changed, moved or removed;
  // its name): read it again; a panel only moved keeps its card (and its unsaved bucket or range),
  // a changed one is drawn anew, a removed one goes. The settings form keeps what was typed.
  subscribe("svc_dashboards"); // the ticket covers it: this user reads dashboards
  let boardChanged = false;
  const unplaced = (p) => JSON.stringify({ ...p, position: null, updatedAt: null });
  const refresh = async () => {
    if (local.inFlight) { local.missed = true; return; }
    const writes = local.writes;
    let fresh;
    try {
      fresh = await data("GET", path, { site });
    } catch (err) {
      if (err instanceof SessionEnded) throw err;
      replace(alert, err.status === 404 ? t("dash.goneElsewhere") : said(err));
      return;
    }
    if (local.inFlight) { local.missed = true; return; }
    if (local.writes !== writes) return refresh();
    // What the grid shows; unchanged (this tab's own writes come back as signals too), the grid is
    // not redrawn, so a drag or a focused control in it is left alone.
    const drawn = (b) => JSON.stringify([b.name, b.panels.map((p) => [unplaced(p), p.position])]);
    if (drawn(fresh) === drawn(board)) return;
    for (const [pid, c] of cards) {
      const now = fresh.panels.find((p) => p.id === pid);
      if (now && unplaced(now) === unplaced(c.panel)) Object.assign(c.panel, now);
      else cards.delete(pid);
    }
    board = { ...fresh, panels: fresh.panels.map((p) => (cards.has(p.id) ? cards.get(p.id).panel : p)) };
    replace(heading, board.name);
    document.title = `${board.name} · ${t("dash.heading")} · ${shell.title}`;
    keepFocus(grid, drawGrid);
    for (const collection of watched()) subscribe(collection);
  };
  const ofBoard = (frame) => frame.type === "event" && frame.collection === "svc_dashboards" && frame.itemId === id;
  liveScreen("dashboard", (frame) => {
    if (ofBoard(frame)) boardChanged = true;
    return ofBoard(frame) || (frame.type === "event" && watched().has(frame.collection));
  }, async () => {
    if (boardChanged) {
      boardChanged = false;
      await refresh();
    }
    await Promise.all([...cards.values()].filter((c) => c.el.isConnected).map((c) => run(c, c.shown)));
  });
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "dashboards") }, t("dash.back"))),
    heading, board.note ? h("p", { class: "muted" }, board.note) : null, tools, flash, alert, grid, settings());
}
