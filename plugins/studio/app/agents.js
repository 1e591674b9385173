// -- ai_ui: the agents screen (docs/agents.md), for site admins when the agents plugin is on.
//   #/s/<site>/agents   the kill switch (freeze the site, lift a freeze: its effect shown at once),
//                       the staged changes with their diff (veto, or apply a suggestion), the goals
//                       with their status and budget (create one), the constitution's versions
//                       (draft, compile, activate)
// -- govern43: a freeze of one part as well as the whole site (a goal's run, a role, an intent: the
// kill switch's scopes; the API has no per-collection freeze); each goal's steps, role, intent and
// its role's autonomy level; the roles (autonomy lowered here, raised only by a decided promotion)
// and the intents (pause, resume)

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
  const rolesEl = h("div"); // -- govern43
  let state = {};

  const load = async () => {
    const [freezes, stagings, goals, versions, roles, intents] = await Promise.all([
      data("GET", "/agent/kill-switch", { site }), data("GET", "/agent/staged", { site }),
      data("GET", "/agent/goals", { site, params: { limit: 50 } }), data("GET", "/agent/constitution", { site }),
      data("GET", "/agent/roles", { site }), data("GET", "/agent/intents", { site })]); // -- govern43
    state = { freezes, stagings, goals, versions, roles, intents };
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
          h("td", {}, h("button", { type: "button", "aria-label": t("agents.liftOf", { scope: `${t(`agents.scope.${f.scope}`)}${f.target ? ` ${targetName(f)}` : ""}` }),
            onclick: () => act(() => data("POST", "/agent/kill-switch/lift", { site, body: { id: f.id } }), t("agents.lifted")) }, t("agents.lift"))))))
        : null,
      siteFrozen ? null : h("form", { "aria-label": t("agents.freeze"), onsubmit: (event) => {
        event.preventDefault();
        const body = { scope: "site", ...(reason.value.trim() ? { reason: reason.value.trim() } : {}) };
        act(() => data("POST", "/agent/kill-switch", { site, body }), t("agents.frozenNote"));
      } }, labelled(t("agents.reason"), reason), h("button", { type: "submit" }, t("agents.freeze"))),
      siteFrozen ? null : partForm()));
  };

  // -- govern43: what a freeze's target names, in words (a goal's title, an intent's title)
  const targetName = (f) => {
    if (f.scope === "run") return (state.goals.find((g) => g.id === f.target) || {}).title || f.target;
    if (f.scope === "intent") return (state.intents.find((i) => i.id === f.target) || {}).title || f.target;
    return f.target;
  };
  // -- govern43: freeze one part: a goal (its run), a role, an intent
  const partForm = () => {
    const choices = {
      run: state.goals.map((g) => [g.id, g.title]),
      role: state.roles.map((r) => [r.name, r.name]),
      intent: state.intents.map((i) => [i.id, i.title]),
    };
    const target = h("select", { required: true });
    const scope = h("select", { onchange: () => fill() }, ["run", "role", "intent"].map((s) => h("option", { value: s }, t(`agents.scope.${s}`))));
    const fill = () => replace(target, choices[scope.value].map(([value, label]) => h("option", { value }, label)));
    fill();
    const why = h("input", { type: "text", maxlength: "500" });
    return h("form", { "aria-label": t("agents.freezePart"), onsubmit: (event) => {
      event.preventDefault();
      if (!target.value) return replace(alert, t("agents.nothingToFreeze"));
      const body = { scope: scope.value, target: target.value, ...(why.value.trim() ? { reason: why.value.trim() } : {}) };
      const name = target.options[target.selectedIndex].textContent;
      act(() => data("POST", "/agent/kill-switch", { site, body }), t("agents.partFrozen", { scope: t(`agents.scope.${scope.value}`), name }));
    } }, h("h3", {}, t("agents.freezePart")), labelled(t("agents.freezeScope"), scope), labelled(t("agents.freezeTarget"), target),
    labelled(t("agents.freezeReason"), why), h("button", { type: "submit" }, t("agents.freezePartButton")));
  };

  // -- govern43: the roles (autonomy, collections, budget; a lower autonomy saved here) and the
  // intents (their trigger and state; pause, resume)
  const drawRoles = () => {
    const roleRows = state.roles.map((r) => {
      const level = h("select", { "aria-label": t("agents.autonomyOf", { role: r.name }) },
        ["suggest", "stage", "act"].map((l) => h("option", { value: l, selected: l === r.autonomy }, t(`agents.autonomy.${l}`))));
      return h("tr", {}, h("th", { scope: "row" }, r.name, r.description ? h("span", { class: "muted" }, ` ${r.description}`) : null),
        h("td", {}, level, " ", h("button", { type: "button", "aria-label": t("agents.saveAutonomyOf", { role: r.name }), onclick: () =>
          act(() => data("PATCH", `/agent/roles/${encodeURIComponent(r.name)}`, { site, body: { autonomy: level.value } }),
            t("agents.autonomySaved", { role: r.name, level: t(`agents.autonomy.${level.value}`) })) }, t("agents.saveAutonomy"))),
        h("td", {}, (r.collections || []).join(", ")), h("td", {}, counts(r.budget)));
    });
    const intentRows = state.intents.map((i) => {
      const trigger = i.trigger || {};
      const paused = i.status === "paused";
      return h("tr", {}, h("th", { scope: "row" }, i.title, " ", h("code", {}, i.key)), h("td", {}, i.role || ""),
        h("td", {}, trigger.type === "schedule" ? t("agents.everySeconds", { n: trigger.everySeconds }) : t("agents.onEvents", { collection: trigger.collection || "", events: (trigger.events || []).join(", ") })),
        h("td", {}, t(paused ? "agents.intentPaused" : "agents.intentActive")), h("td", {}, when(i.nextRunAt)),
        h("td", {}, h("button", { type: "button", "aria-label": t(paused ? "agents.resumeOf" : "agents.pauseOf", { title: i.title }), onclick: () =>
          act(() => data("POST", `/agent/intents/${encodeURIComponent(i.id)}/${paused ? "resume" : "pause"}`, { site }),
            t(paused ? "agents.intentResumed" : "agents.intentPausedNote", { title: i.title })) }, t(paused ? "agents.resume" : "agents.pause"))));
    });
    replace(rolesEl, section(t("agents.rolesHeading"), h("p", { class: "muted" }, t("agents.rolesHint")),
      state.roles.length ? table(t("agents.rolesCaption"), [t("agents.role"), t("agents.autonomy"), t("agents.collections"), t("agents.budget")], roleRows)
        : h("p", {}, t("agents.noRoles")),
      h("h3", {}, t("agents.intents")),
      state.intents.length ? table(t("agents.intentsCaption"), [t("agents.intent"), t("agents.role"), t("agents.trigger"), t("agents.statusLabel"), t("agents.nextRun"), ""], intentRows)
        : h("p", {}, t("agents.noIntents"))));
  };
  // -- govern43: a goal's steps, each its skill and outcome
  const stepsOf = (g) => (g.steps && g.steps.length ? h("details", {}, h("summary", {}, t("agents.stepsOf", { title: g.title, count: g.steps.length })),
    h("ol", {}, g.steps.map((s) => h("li", {}, h("code", {}, s.skill || ""), " ", t(`agents.outcome.${s.outcome}`) === `agents.outcome.${s.outcome}` ? s.outcome : t(`agents.outcome.${s.outcome}`),
      s.code ? ` (${s.code})` : "")))) : h("span", { class: "muted" }, t("agents.noSteps")));

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
      [t("agents.goal"), t("agents.statusLabel"), t("agents.role"), t("agents.autonomy"), t("agents.intent"), t("agents.steps"), t("agents.used"), t("agents.updated")],
      state.goals.map((g) => {
        const role = state.roles.find((r) => r.name === g.role); // -- govern43: its level, intent and steps
        const intent = state.intents.find((i) => i.id === g.intentId);
        return h("tr", {}, h("th", { scope: "row" }, g.title),
          h("td", {}, t(`agents.status.${g.status}`), g.error ? ` (${g.error.code})` : ""),
          h("td", {}, g.role || ""), h("td", {}, role ? t(`agents.autonomy.${role.autonomy}`) : ""), h("td", {}, intent ? intent.title : ""),
          h("td", {}, stepsOf(g)), h("td", {}, counts(g.used)), h("td", {}, when(g.updatedAt)));
      }))
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
    drawRoles(); // -- govern43
  };
  await load();
  drawAll();
  replace(shell.main, h("h1", {}, t("agents.heading")), alert, flash, kill, staged, goalsEl, rolesEl, rulesEl);
}

