// -- ai_ui: the agents screen (docs/agents.md), for site admins when the agents plugin is on.
//   #/s/<site>/agents   the kill switch (freeze the site, lift a freeze: its effect shown at once),
//                       the staged changes with their diff (veto, or apply a suggestion), the goals
//                       with their status and budget (create one), the constitution's versions
//                       (draft, compile, activate)

import { data } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { keepFocus, labelled, said, section } from "./releases.js";

const when = (iso) => (iso ? new Date(iso).toLocaleString(document.documentElement.lang) : "");
const counts = (c) => (c ? Object.entries(c).map(([k, v]) => `${k}: ${v}`).join(", ") : "");

function table(caption, heads, rows) {
  return h("table", { class: "files-table" }, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, heads.map((c) => h("th", { scope: "col" }, c)))), h("tbody", {}, rows));
}

export async function renderAgents(shell) {
  const site = shell.site;
  document.title = `${t("agents.heading")} · ${shell.title}`;
  const alert = h("div", { role: "alert" });
  const flash = h("div", { role: "status" });
  const kill = h("div");
  const staged = h("div");
  const goalsEl = h("div");
  const rulesEl = h("div");
  let state = {};

  const load = async () => {
    const [freezes, stagings, goals, versions] = await Promise.all([
      data("GET", "/agent/kill-switch", { site }), data("GET", "/agent/staged", { site }),
      data("GET", "/agent/goals", { site, params: { limit: 50 } }), data("GET", "/agent/constitution", { site })]);
    state = { freezes, stagings, goals, versions };
  };
  const act = async (doing, note) => {
    replace(alert);
    try {
      await doing();
      await load();
      keepFocus(shell.main, drawAll);
      replace(flash, note);
    } catch (err) {
      replace(alert, said(err));
    }
  };

  // -- the kill switch: one button freezes every agent of the site; the banner says so at once
  const drawKill = () => {
    const reason = h("input", { type: "text", maxlength: "500" });
    const siteFrozen = state.freezes.find((f) => f.scope === "site");
    replace(kill, section(t("agents.kill"),
      h("p", { class: siteFrozen ? "note frozen" : "muted", role: "note" },
        siteFrozen ? t("agents.frozen", { when: when(siteFrozen.createdAt) }) : t("agents.running")),
      state.freezes.length ? table(t("agents.freezes"), [t("agents.scope"), t("agents.target"), t("agents.reason"), t("agents.since"), ""],
        state.freezes.map((f) => h("tr", {}, h("td", {}, t(`agents.scope.${f.scope}`)), h("td", {}, f.target || ""),
          h("td", {}, f.reason || ""), h("td", {}, when(f.createdAt)),
          h("td", {}, h("button", { type: "button", "aria-label": t("agents.liftOf", { scope: t(`agents.scope.${f.scope}`) }),
            onclick: () => act(() => data("POST", "/agent/kill-switch/lift", { site, body: { id: f.id } }), t("agents.lifted")) }, t("agents.lift"))))))
        : null,
      siteFrozen ? null : h("form", { "aria-label": t("agents.freeze"), onsubmit: (event) => {
        event.preventDefault();
        const body = { scope: "site", ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) };
        act(() => data("POST", "/agent/kill-switch", { site, body }), t("agents.frozenNote"));
      } }, labelled(t("agents.reason"), reason), h("button", { type: "submit" }, t("agents.freeze")))));
  };

  // -- staged changes: the diff of each, veto (with a reason) or apply (a suggestion)
  const drawStaged = () => {
    const pending = state.stagings.filter((s) => s.status === "pending");
    replace(staged, section(t("agents.staged"), pending.length ? table(t("agents.stagedCaption"),
      [t("agents.change"), t("agents.diff"), t("agents.applyAt"), t("agents.review")],
      pending.map((s) => {
        const name = `${s.operation} ${s.collection}${s.itemId ? " / " + s.itemId : ""}`;
        const reason = h("input", { type: "text", maxlength: "500", "aria-label": t("agents.vetoReasonOf", { name }) });
        const diff = s.diff || {};
        const fields = [...new Set([...Object.keys(diff.before || {}), ...Object.keys(diff.after || {})])];
        return h("tr", {}, h("th", { scope: "row" }, name, h("br"), h("span", { class: "muted" }, t(`agents.level.${s.level}`))),
          h("td", {}, h("dl", { class: "release-facts" }, fields.map((f) => [h("dt", {}, f),
            h("dd", {}, h("del", {}, JSON.stringify((diff.before || {})[f] ?? null)), " → ", h("ins", {}, JSON.stringify((diff.after || {})[f] ?? null)))]))),
          h("td", {}, s.level === "suggest" ? t("agents.byHand") : when(s.applyAt)),
          h("td", {}, reason, " ",
            h("button", { type: "button", "aria-label": t("agents.vetoOf", { name }), onclick: () =>
              act(() => data("POST", `/agent/staged/${encodeURIComponent(s.id)}/veto`, { site, body: reason.value.trim() ? { reason: reason.value.trim() } : {} }),
                t("agents.vetoed", { name })) }, t("agents.veto")),
            s.level === "suggest" ? [" ", h("button", { type: "button", "aria-label": t("agents.applyOf", { name }), onclick: () =>
              act(() => data("POST", `/agent/staged/${encodeURIComponent(s.id)}/apply`, { site }), t("agents.applied", { name })) }, t("agents.apply"))] : null));
      })) : h("p", {}, t("agents.noStaged"))));
  };

  // -- goals: their status, steps and budget; a new goal
  const drawGoals = () => {
    const title = h("input", { type: "text", required: true, maxlength: "200" });
    const description = h("textarea", { rows: "3", required: true });
    const execution = h("select", {}, ["async", "sync", "none"].map((e) => h("option", { value: e }, t(`agents.execution.${e}`))));
    replace(goalsEl, section(t("agents.goals"), state.goals.length ? table(t("agents.goalsCaption"),
      [t("agents.goal"), t("agents.statusLabel"), t("agents.role"), t("agents.used"), t("agents.updated")],
      state.goals.map((g) => h("tr", {}, h("th", { scope: "row" }, g.title),
        h("td", {}, t(`agents.status.${g.status}`), g.error ? ` (${g.error.code})` : ""),
        h("td", {}, g.role || ""), h("td", {}, counts(g.used)), h("td", {}, when(g.updatedAt)))))
      : h("p", {}, t("agents.noGoals")),
    h("form", { "aria-label": t("agents.newGoal"), onsubmit: (event) => {
      event.preventDefault();
      const body = { title: title.value.trim(), description: description.value, execution: execution.value };
      act(() => data("POST", "/agent/goals", { site, body }), t("agents.goalCreated", { title: body.title }));
    } }, h("h3", {}, t("agents.newGoal")), labelled(t("agents.goalTitle"), title), labelled(t("agents.description"), description, t("agents.descriptionHint")),
    labelled(t("agents.executionLabel"), execution), h("button", { type: "submit" }, t("agents.createGoal")))));
  };

  // -- the constitution: versions (draft, compiled, active), a new draft from JSON rules
  const drawRules = () => {
    const rules = h("textarea", { rows: "5", spellcheck: "false" });
    const active = state.versions.find((v) => v.status === "active");
    rules.value = JSON.stringify(active ? active.rules : [{ rule: "deny_operation", operation: "delete" }], null, 1);
    const note = h("input", { type: "text", maxlength: "500" });
    replace(rulesEl, section(t("agents.constitution"), state.versions.length ? table(t("agents.versions"),
      [t("agents.version"), t("agents.statusLabel"), t("agents.rules"), ""],
      state.versions.map((v) => h("tr", {}, h("th", { scope: "row" }, t("agents.versionN", { n: v.version }), v.note ? ` (${v.note})` : ""),
        h("td", {}, t(`agents.vstatus.${v.status}`)), h("td", {}, h("code", {}, JSON.stringify(v.rules))),
        h("td", {}, v.status === "draft" ? h("button", { type: "button", "aria-label": t("agents.compileOf", { n: v.version }), onclick: () =>
          act(() => data("POST", `/agent/constitution/${encodeURIComponent(v.id)}/compile`, { site }), t("agents.compiled", { n: v.version })) }, t("agents.compile"))
          : v.status === "compiled" ? h("button", { type: "button", "aria-label": t("agents.activateOf", { n: v.version }), onclick: () =>
            act(() => data("POST", `/agent/constitution/${encodeURIComponent(v.id)}/activate`, { site }), t("agents.activated", { n: v.version })) }, t("agents.activate"))
            : null))))
      : h("p", {}, t("agents.noRules")),
    h("form", { "aria-label": t("agents.draft"), onsubmit: (event) => {
      event.preventDefault();
      let parsed;
      try {
        parsed = JSON.parse(rules.value);
      } catch {
        return replace(alert, t("agents.badJson"));
      }
      act(() => data("POST", "/agent/constitution", { site, body: { rules: parsed, ...(note.value.trim() ? { note: note.value.trim() } : {}) } }), t("agents.drafted"));
    } }, labelled(t("agents.rules"), rules, t("agents.rulesHint")), labelled(t("agents.note"), note), h("button", { type: "submit" }, t("agents.draft")))));
  };

  const drawAll = () => {
    drawKill();
    drawStaged();
    drawGoals();
    drawRules();
  };
  await load();
  drawAll();
  replace(shell.main, h("h1", {}, t("agents.heading")), alert, flash, kill, staged, goalsEl, rulesEl);
}

