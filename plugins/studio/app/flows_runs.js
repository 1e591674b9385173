// -- flows editor: runs of a flow (docs/flows.md "Runs"), for site admins.
//   manualRunPanel()  on the editor of a manual flow: an input (JSON) and Run now; the run is
//                     followed until it ends, with its outcome and a link to it
//   #/s/<site>/flows/<id>/runs           the history, newest first, a page at a time
//   #/s/<site>/flows/<id>/runs/<run>     one run: its input, each step's input and output (as the
//                                        API stores them: redacted), errors; read again while running

import { ApiError, data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { labelled, said, section } from "./releases.js";
import { siteHash } from "./router.js";
import { settle, track } from "./work.js"; // -- progress

const FOLLOW_MS = 1000; // a running run is read again this often
const PAGE = 25;

/** A JSON value as a scrollable, focusable block named `label`. */
function json(value, label) {
  return h("pre", { class: "flow-json", tabindex: "0", role: "region", "aria-label": label },
    value === undefined ? "" : JSON.stringify(value, null, 2));
}

function outcome(status) {
  return t(`flows.run.${status}`);
}

export function manualRunPanel(shell, flow, { unsaved }) {
  if (flow.trigger !== "manual") return null;
  const site = shell.site;
  if (flow.status !== "active") return section(t("flows.runNow"), h("p", { class: "muted" }, t("flows.runNeedsActive")));
  const input = h("textarea", { rows: "4", class: "code", spellcheck: "false" }, "{}");
  const state = h("div", { role: "status" });
  const problem = h("p", { class: "field-error", role: "alert" });
  const form = h("form", { "aria-label": t("flows.runNow"), onsubmit: async (event) => {
    event.preventDefault();
    replace(problem);
    if (unsaved()) return replace(problem, t("flows.runUnsaved"));
    let body;
    try {
      body = input.value.trim() ? JSON.parse(input.value) : null;
    } catch {
      input.setAttribute("aria-invalid", "true");
      input.focus();
      return replace(problem, t("flows.notJson"));
    }
    input.removeAttribute("aria-invalid");
    try {
      const started = await data("POST", `/flows/${encodeURIComponent(flow.id)}/run`, { site, body });
      replace(state, h("progress", { "aria-label": t("flows.running") }), " ", t("flows.running"));
      // -- progress: the run in the work in progress list (work.js), which follows it too
      track(site, `${site}:flowRun:${started.runId}`, { kind: "flowRun", name: flow.name, flow: flow.id, run: started.runId,
        href: siteHash(site, "flows", flow.id, "runs", started.runId), done: null, total: null });
      follow(started.runId);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      replace(problem, said(err));
    }
  } }, labelled(t("flows.runInput"), input, t("flows.runInputHint")), h("button", { type: "submit" }, t("flows.runButton")), problem, state);
  const follow = async (runId) => {
    if (!form.isConnected) return;
    const run = await data("GET", `/flows/${encodeURIComponent(flow.id)}/runs/${encodeURIComponent(runId)}`, { site });
    if (run.status === "running") return void setTimeout(() => follow(runId), FOLLOW_MS);
    settle(`${site}:flowRun:${runId}`, run.error ? `${run.error.code}: ${run.error.message}` : ""); // -- progress
    const link = h("a", { href: siteHash(site, "flows", flow.id, "runs", runId) }, t("flows.openRun"));
    replace(state, h("p", {}, t("flows.runEnded", { status: outcome(run.status) }),
      run.error ? ` ${run.error.code}: ${run.error.message}` : "", " ", link));
  };
  return section(t("flows.runNow"), form);
}

export async function renderRuns(shell, id, query) {
  const site = shell.site;
  const page = Math.max(1, Number(query.get("page")) || 1);
  const [flow, answer] = await Promise.all([
    data("GET", `/flows/${encodeURIComponent(id)}`, { site }),
    data("GET", `/flows/${encodeURIComponent(id)}/runs`, { site, params: { limit: PAGE, offset: (page - 1) * PAGE } }),
  ]);
  document.title = `${t("flows.historyOf", { name: flow.name })} · ${shell.title}`;
  const pageLink = (n, label) => h("a", { href: `${siteHash(site, "flows", id, "runs")}?page=${n}` }, label);
  const table = answer.length ? h("table", { class: "files-table" }, h("caption", {}, t("flows.runsCaption")),
    h("thead", {}, h("tr", {}, [t("flows.started"), t("flows.triggerLabel"), t("flows.statusLabel"), t("flows.duration")]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, answer.map((r) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "flows", id, "runs", r.runId) }, r.startedAt)),
      h("td", {}, t(`flows.trigger.${r.trigger}`)), h("td", {}, outcome(r.status)),
      h("td", {}, r.durationMs === null || r.durationMs === undefined ? "" : t("flows.ms", { ms: r.durationMs }))))))
    : h("p", {}, t("flows.noRuns"));
  const pager = h("p", {}, page > 1 ? pageLink(page - 1, t("flows.newer")) : null, " ",
    answer.length === PAGE ? pageLink(page + 1, t("flows.older")) : null);
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "flows", id) }, t("flows.backTo", { name: flow.name }))),
    h("h1", {}, t("flows.historyOf", { name: flow.name })), h("p", { class: "muted" }, t("flows.redactedHint")), table, pager);
}

export async function renderRun(shell, id, runId) {
  const site = shell.site;
  const path = `/flows/${encodeURIComponent(id)}/runs/${encodeURIComponent(runId)}`;
  const flow = await data("GET", `/flows/${encodeURIComponent(id)}`, { site });
  const body = h("div");
  const draw = (run) => {
    document.title = `${t("flows.runOf", { name: flow.name })} · ${shell.title}`;
    const facts = h("dl", { class: "release-facts" },
      h("dt", {}, t("flows.statusLabel")), h("dd", {}, outcome(run.status)),
      h("dt", {}, t("flows.triggerLabel")), h("dd", {}, t(`flows.trigger.${run.trigger}`)),
      h("dt", {}, t("flows.started")), h("dd", {}, run.startedAt),
      run.finishedAt ? [h("dt", {}, t("flows.finished")), h("dd", {}, run.finishedAt)] : null,
      run.durationMs !== null && run.durationMs !== undefined ? [h("dt", {}, t("flows.duration")), h("dd", {}, t("flows.ms", { ms: run.durationMs }))] : null,
      run.error ? [h("dt", {}, t("flows.error")), h("dd", {}, `${run.error.code}: ${run.error.message}${run.error.nodeId ? ` (${t("flows.atStep", { id: run.error.nodeId })})` : ""}`)] : null);
    const steps = run.steps.length ? h("ol", { class: "flow-run-steps", "aria-label": t("flows.runSteps") }, run.steps.map((step) => {
      const headingId = uid("flow-run-step");
      return h("li", {}, h("section", { "aria-labelledby": headingId, class: step.status === "failed" ? "flow-step failed" : "flow-step" },
        h("h3", { id: headingId }, t("flows.runStepTitle", { id: step.nodeId, operation: step.operation, status: outcome(step.status) })),
        h("p", { class: "muted" }, t("flows.stepFacts", { attempts: step.attempts, ms: step.durationMs })),
        step.error ? h("p", { class: "error" }, `${step.error.code}: ${step.error.message}`) : null,
        h("h4", {}, t("flows.stepInput")), json(step.input, t("flows.stepInputOf", { id: step.nodeId })),
        h("h4", {}, t("flows.stepOutput")), json(step.output, t("flows.stepOutputOf", { id: step.nodeId }))));
    })) : h("p", {}, t("flows.noSteps"));
    replace(body, facts, section(t("flows.runInput"), json(run.input, t("flows.runInputValue"))), section(t("flows.runSteps"), steps));
  };
  const reread = async () => {
    if (!body.isConnected) return;
    const run = await data("GET", path, { site });
    draw(run);
    if (run.status === "running") setTimeout(reread, FOLLOW_MS);
  };
  const run = await data("GET", path, { site });
  draw(run);
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "flows", id, "runs") }, t("flows.backToHistory")), " · ",
    h("a", { href: siteHash(site, "flows", id) }, t("flows.backTo", { name: flow.name }))),
  h("h1", {}, t("flows.runOf", { name: flow.name })), h("p", { class: "muted" }, t("flows.redactedHint")), body);
  if (run.status === "running") setTimeout(reread, FOLLOW_MS);
}
// -- end flows editor
