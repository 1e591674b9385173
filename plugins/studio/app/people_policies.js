// -- people: policies (/policies), what they are attached to (/policies/:id/attach, /detach) and
// their permission rules (/policies/:id/permissions), with the rule editor: a collection, an
// action (the site's actions, from the admin's GET /permissions/me), a field mask (all fields or
// some) and conditions built with the list's filter builder (filters.js). A rule cannot be
// edited through the API: the editor adds one, and a rule is deleted.

import { call, data } from "./api.js";
import { h, replace } from "./dom.js";
import { filterBuilder } from "./filters.js";
import { t } from "./i18n.js";
import { field, section } from "./me.js";
import { choose, loadRoles, memberNames, readAll, screen, scroll } from "./people_common.js"; // -- studio42: readAll; -- studio42c: memberNames
import { memberPicker } from "./people_pick.js"; // -- studio42c
import { go, siteHash } from "./router.js";

/** The actions a rule may name: the admin's /permissions/me lists every one under "*". */
export function actionsOf(ctx) {
  const all = ctx.permissions.permissions && ctx.permissions.permissions["*"];
  return all ? Object.keys(all) : ["create", "read", "update", "delete"];
}

/** Who a policy is attached to, in words: "role Editor", "team Night", "user a@b.c". */
export function attachedTo(policy, roles, users, teams) {
  return (policy.attachments || []).map((a) => (a.roleId ? t("people.viaRole", { name: roles.name(a.roleId) })
    : a.teamId ? t("people.viaTeam", { name: (teams.get(a.teamId) || { name: a.teamId }).name })
      : t("people.viaUser", { name: users.name(a.userId) })));
}

// -- studio42c: the members the policies are attached to, by name (those only)
async function attachedNames(site, policies) {
  const users = memberNames(site);
  await users.load(policies.flatMap((p) => (p.attachments || []).map((a) => a.userId).filter(Boolean)));
  return users;
}

export async function loadTeams(site) {
  const teams = await readAll(site, "/teams");
  return new Map(teams.map((team) => [team.id, team]));
}

export async function renderPolicies(shell) {
  const site = shell.site;
  const [policies, roles, teams] = await Promise.all([readAll(site, "/policies"), loadRoles(site), loadTeams(site)]);
  const users = await attachedNames(site, policies);
  const s = screen(shell, t("people.policies"));
  const name = field(t("people.name"), h("input", { type: "text", required: true, maxlength: 100 }));
  const admin = h("input", { type: "checkbox", id: `${name.control.id}-admin` });
  const create = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/policies", { site, body: { name: name.control.value.trim(), adminAccess: admin.checked } });
      go(siteHash(site, "people", "policies", made.id));
    } catch (err) { s.fail(err); }
  } }, name.wrap, h("p", { class: "me-check" }, admin, h("label", { for: admin.id }, t("people.adminAccess"))),
  h("button", { type: "submit" }, t("people.createPolicy")));
  s.add(scroll(h("table", {}, h("caption", {}, t("people.policiesCaption")),
    h("thead", {}, h("tr", {}, ["people.name", "people.adminAccess", "people.attachedTo"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, policies.map((p) => h("tr", {},
      h("th", { scope: "row" }, h("a", { href: siteHash(site, "people", "policies", p.id) }, p.name)),
      h("td", {}, p.adminAccess ? t("people.yes") : t("people.no")),
      h("td", {}, attachedTo(p, roles, users, teams).join(", ") || t("people.nobody"))))))),
  section(t("people.newPolicy"), create));
}

export async function renderPolicy(shell, id, message = "") {
  const site = shell.site;
  const path = `/policies/${encodeURIComponent(id)}`;
  const [policy, rules, roles, teams] = await Promise.all([data("GET", path, { site }),
    readAll(site, `${path}/permissions`), loadRoles(site), loadTeams(site)]);
  const users = await attachedNames(site, [policy]);
  const s = screen(shell, t("people.policyTitle", { name: policy.name }));
  s.say(message);
  const again = (text) => renderPolicy(shell, id, text);
  const act = (work, text) => async () => {
    try {
      await work();
      await again(text);
    } catch (err) { s.fail(err); }
  };
  // What the policy is attached to, and attaching it to one more role, team or member.
  const names = attachedTo(policy, roles, users, teams);
  const attached = h("ul", { "aria-label": t("people.attachedTo") }, (policy.attachments || []).map((a, i) => h("li", {}, names[i], " ",
    h("button", { type: "button", class: "quiet", onclick: act(() => call("POST", `${path}/detach`, { site, body: a.roleId ? { roleId: a.roleId }
      : a.teamId ? { teamId: a.teamId } : { userId: a.userId } }), t("people.detached", { name: names[i] })) }, t("people.detach", { name: names[i] })))));
  const targets = [
    ...roles.roles.map((r) => [`roleId:${r.id}`, t("people.viaRole", { name: r.name })]),
    ...[...teams.values()].map((team) => [`teamId:${team.id}`, t("people.viaTeam", { name: team.name })]),
  ];
  const target = choose(t("people.attachTo"), targets);
  const attach = h("form", { class: "inline", onsubmit: (event) => {
    event.preventDefault();
    const [kind, value] = target.control.value.split(/:(.*)/s);
    const text = target.control.selectedOptions[0].textContent;
    act(() => data("POST", `${path}/attach`, { site, body: { [kind]: value } }), t("people.attached", { name: text }))();
  } }, target.wrap, h("button", { type: "submit" }, t("people.attach")));
  // -- studio42c: a member is searched with the member picker (one at a time), not listed
  const member = memberPicker(site, t("people.attachMember"), [], { single: true });
  member.start();
  const attachMember = h("form", { class: "me-form", onsubmit: (event) => {
    event.preventDefault();
    const [chosen] = member.named();
    if (!chosen) return s.say(t("people.pickFirst"));
    const [userId, email] = chosen;
    const text = t("people.viaUser", { name: email });
    act(() => data("POST", `${path}/attach`, { site, body: { userId } }), t("people.attached", { name: text }))();
  } }, member.el, h("button", { type: "submit" }, t("people.attachToMember")));
  // The rules, each deleted on its own (the API has no rule update).
  const ruleRows = rules.map((rule) => {
    const label = `${rule.action} ${rule.collection}`;
    return h("tr", {}, h("td", {}, rule.collection), h("td", {}, rule.action),
      h("td", {}, rule.fields.join(", ")), h("td", {}, rule.conditions ? h("code", {}, JSON.stringify(rule.conditions)) : t("people.everyRow")),
      h("td", {}, h("button", { type: "button", class: "quiet", onclick: act(() => call("DELETE", `${path}/permissions/${encodeURIComponent(rule.id)}`, { site }),
        t("people.ruleDeleted", { name: label })) }, t("people.deleteRule", { name: label }))));
  });
  s.add(section(t("people.attachedTo"), names.length ? attached : h("p", {}, t("people.nobody")), attach, attachMember),
    section(t("people.rules"), rules.length ? scroll(h("table", {}, h("caption", {}, t("people.rulesCaption", { name: policy.name })),
      h("thead", {}, h("tr", {}, ["people.collection", "people.action", "people.fields", "people.conditions", "me.action"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, ruleRows))) : h("p", {}, t("people.noRules"))),
    section(t("people.newRule"), await ruleEditor(shell, s, (body) => act(() => data("POST", `${path}/permissions`, { site, body }),
      t("people.ruleAdded", { name: `${body.action} ${body.collection}` }))())));
}

/** The rule editor: collection, action, field mask and conditions; `onAdd(body)` sends the rule. */
async function ruleEditor(shell, s, onAdd) {
  const collections = shell.ctx.collections.map((c) => [c.name, c.name]);
  const collection = choose(t("people.collection"), [["*", t("people.everyCollection")], ...collections], { value: (collections[0] || ["*"])[0] });
  const action = choose(t("people.action"), actionsOf(shell.ctx).map((a) => [a, a]), { value: "read" });
  const maskArea = h("div");
  const condArea = h("div");
  const shown = h("p", { class: "muted", role: "status" });
  let conditions = null;
  let boxes = [];
  const all = h("input", { type: "checkbox", id: `${collection.control.id}-all`, checked: true,
    onchange: () => boxes.forEach((b) => { b.disabled = all.checked; }) });
  const sayConditions = () => replace(shown, conditions ? t("people.conditionsAre", { json: JSON.stringify(conditions) }) : t("people.everyRow"));
  const drawFields = async () => {
    const name = collection.control.value;
    const fields = name === "*" ? [] : await data("GET", `/fields/${encodeURIComponent(name)}`, { site: shell.site });
    conditions = null;
    sayConditions();
    boxes = fields.map((f) => h("input", { type: "checkbox", value: f.field, id: `${all.id}-${f.field}`, disabled: all.checked }));
    replace(maskArea, h("fieldset", {}, h("legend", {}, t("people.fieldMask")),
      h("p", { class: "me-check" }, all, h("label", { for: all.id }, t("people.allFields"))),
      fields.map((f, i) => h("p", { class: "me-check" }, boxes[i], h("label", { for: boxes[i].id }, f.field)))));
    // Conditions: the list's filter builder over the collection's fields ("Apply filter" sets them).
    replace(condArea, fields.length ? filterBuilder({ fields, filter: null, onApply: (filter) => { conditions = filter; sayConditions(); } })
      : h("p", { class: "muted" }, t("people.noConditions")));
  };
  collection.control.addEventListener("change", () => drawFields().catch((err) => s.fail(err)));
  await drawFields();
  return h("form", { class: "rule-editor", onsubmit: (event) => {
    event.preventDefault();
    const fields = all.checked ? ["*"] : boxes.filter((b) => b.checked).map((b) => b.value);
    onAdd({ collection: collection.control.value, action: action.control.value, fields, conditions });
  } }, collection.wrap, action.wrap, maskArea, condArea, shown, h("button", { type: "submit" }, t("people.addRule")));
}
