// -- people: roles with their parent chain (/roles), teams and their members (/teams), and the
// site's API keys (/api-keys: the key shown once). Screens of people.js, for site admins.

import { call, data } from "./api.js";
import { h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { field, section, when } from "./me.js";
import { choose, loadRoles, memberNames, readAll, screen, scroll } from "./people_common.js"; // -- studio42: readAll; -- studio42c: memberNames
import { memberPicker } from "./people_pick.js"; // -- studio42b

const TEAM_NAMES = 5; // -- studio42c: members named in the teams' table, the rest counted

/** "Editor ← Base ← Everyone": a role and its parents, nearest first (cycle-guarded). */
export function chainOf(roles, id) {
  const names = [];
  const seen = new Set();
  for (let r = roles.byId.get(id); r && !seen.has(r.id); r = roles.byId.get(r.parentId)) {
    seen.add(r.id);
    names.push(r.name);
  }
  return names.join(" ← ");
}

export async function renderRoles(shell, message = "") {
  const site = shell.site;
  const roles = await loadRoles(site);
  const s = screen(shell, t("people.roles"));
  s.say(message);
  const again = (text) => renderRoles(shell, text);
  const options = roles.roles.map((r) => [r.id, r.name]);
  const rows = roles.roles.map((r) => {
    const parent = h("select", { "aria-label": t("people.parentOf", { name: r.name }), disabled: Boolean(r.systemKey), onchange: async () => {
      try {
        await data("PATCH", `/roles/${encodeURIComponent(r.id)}`, { site, body: { parentId: parent.value || null } });
        await again(t("people.parentSaved", { name: r.name }));
      } catch (err) { s.fail(err); }
    } }, h("option", { value: "" }, t("people.none")),
    options.filter(([id]) => id !== r.id).map(([id, name]) => h("option", { value: id, selected: id === r.parentId }, name)));
    return h("tr", {}, h("th", { scope: "row" }, r.name), h("td", {}, chainOf(roles, r.id)), h("td", {}, parent),
      h("td", {}, r.adminAccess ? t("people.yes") : t("people.no")), h("td", {}, r.systemKey ? t("people.builtIn") : ""),
      h("td", {}, r.systemKey ? "" : h("button", { type: "button", class: "quiet", onclick: async () => {
        try {
          await call("DELETE", `/roles/${encodeURIComponent(r.id)}`, { site });
          await again(t("people.deleted", { name: r.name }));
        } catch (err) { s.fail(err); }
      } }, t("people.deleteNamed", { name: r.name }))));
  });
  const name = field(t("people.name"), h("input", { type: "text", required: true, maxlength: 100 }));
  const parent = choose(t("people.parent"), options, { empty: t("people.none") });
  const admin = h("input", { type: "checkbox", id: `${name.control.id}-admin` });
  const create = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    name.clear();
    try {
      await data("POST", "/roles", { site, body: { name: name.control.value.trim(), parentId: parent.control.value || null, adminAccess: admin.checked } });
      await again(t("people.created", { name: name.control.value.trim() }));
    } catch (err) { if (err.errors && err.errors.some((e) => e.path && e.path[0] === "name")) name.fail(err.message); else s.fail(err); }
  } }, name.wrap, parent.wrap, h("p", { class: "me-check" }, admin, h("label", { for: admin.id }, t("people.adminAccess"))),
  h("button", { type: "submit" }, t("people.createRole")));
  s.add(scroll(h("table", {}, h("caption", {}, t("people.rolesCaption")),
    h("thead", {}, h("tr", {}, ["people.name", "people.chain", "people.parent", "people.adminAccess", "people.kind", "me.action"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, rows))), section(t("people.newRole"), create));
}

export async function renderTeams(shell, message = "") {
  const site = shell.site;
  // -- studio42c: the names of the first TEAM_NAMES members of each team only, not every member
  const teams = await readAll(site, "/teams");
  const users = memberNames(site);
  await users.load(teams.flatMap((team) => team.members.slice(0, TEAM_NAMES)));
  const s = screen(shell, t("people.teams"));
  s.say(message);
  const again = (text) => renderTeams(shell, text);
  const name = field(t("people.name"), h("input", { type: "text", required: true, maxlength: 100 }));
  const picker = memberPicker(site, t("people.members")); // -- studio42b: searched, a page at a time
  picker.start();
  const create = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    try {
      await data("POST", "/teams", { site, body: { name: name.control.value.trim(), members: picker.read() } });
      await again(t("people.created", { name: name.control.value.trim() }));
    } catch (err) { s.fail(err); }
  } }, name.wrap,
  picker.el,
  h("button", { type: "submit" }, t("people.createTeam")));
  s.add(teams.length ? h("table", {}, h("caption", {}, t("people.teamsCaption")),
    h("thead", {}, h("tr", {}, ["people.name", "people.members", "me.action"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, teams.map((team) => h("tr", {}, h("th", { scope: "row" }, team.name),
      h("td", {}, team.members.slice(0, TEAM_NAMES).map((id) => users.name(id)).join(", "),
        team.members.length > TEAM_NAMES ? ` ${t("people.andMore", { count: team.members.length - TEAM_NAMES })}` : "",
        memberEditor(site, team, users, s, again)),
      h("td", {}, h("button", { type: "button", class: "quiet", onclick: async () => {
        try {
          await call("DELETE", `/teams/${encodeURIComponent(team.id)}`, { site });
          await again(t("people.deleted", { name: team.name }));
        } catch (err) { s.fail(err); }
      } }, t("people.deleteNamed", { name: team.name }))))))) : h("p", {}, t("people.noTeams")),
  section(t("people.newTeam"), create));
}

/** The members of a team, changed (PATCH /teams/:id { members }: the whole list). */
function memberEditor(site, team, users, s, again) {
  // -- studio42b: the picker reads its first page when the details open; -- studio42c: and is
  // made then, with the names of the team's members read then
  let picker = null;
  const form = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    if (!picker) return;
    try {
      await data("PATCH", `/teams/${encodeURIComponent(team.id)}`, { site, body: { members: picker.read() } });
      await again(t("people.membersSaved", { name: team.name }));
    } catch (err) { s.fail(err); }
  } }, h("button", { type: "submit" }, t("people.saveMembers", { name: team.name })));
  const open = async () => {
    if (picker) return;
    await users.load(team.members);
    picker = memberPicker(site, t("people.membersOf", { name: team.name }), team.members.map((id) => [id, users.name(id)]));
    form.prepend(picker.el);
    picker.start();
  };
  return h("details", { ontoggle: (event) => { if (event.target.open) open().catch((err) => s.fail(err)); } },
    h("summary", {}, t("people.changeMembers", { name: team.name })), form);
}

export async function renderKeys(shell, message = "", secret = null) {
  const site = shell.site;
  const [keys, roles] = await Promise.all([readAll(site, "/api-keys"), loadRoles(site)]);
  const s = screen(shell, t("people.keys"));
  s.say(message);
  const again = (text, shown) => renderKeys(shell, text, shown);
  const name = field(t("people.name"), h("input", { type: "text", required: true, maxlength: 200 }));
  const role = choose(t("people.role"), roles.roles.map((r) => [r.id, r.name]), { empty: t("people.publicRole") });
  const expires = field(t("people.expires"), h("input", { type: "date" }), t("people.expiresHint"));
  const create = h("form", { class: "me-form", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/api-keys", { site, body: { name: name.control.value.trim(),
        ...(role.control.value ? { roleId: role.control.value } : {}),
        ...(expires.control.value ? { expiresAt: `${expires.control.value}T00:00:00Z` } : {}) } });
      await again(t("people.keyCreated", { name: made.name }), made.key);
    } catch (err) { s.fail(err); }
  } }, name.wrap, role.wrap, expires.wrap, h("button", { type: "submit" }, t("people.createKey")));
  // The key is shown once, in the answer to its creation; the next drawing of the page forgets it.
  const shown = secret ? h("div", { class: "me-secret" }, field(t("people.newKey"), h("input", { type: "text", readonly: true, value: secret, class: "mono" }),
    t("people.newKeyHint")).wrap) : null;
  s.add(shown, keys.length ? scroll(h("table", {}, h("caption", {}, t("people.keysCaption")),
    h("thead", {}, h("tr", {}, ["people.name", "people.prefix", "people.role", "me.started", "people.expires", "me.lastUsed", "me.action"].map((k) => h("th", { scope: "col" }, t(k))))),
    h("tbody", {}, keys.map((k) => h("tr", {}, h("th", { scope: "row" }, k.name), h("td", {}, h("code", {}, `svk_${k.prefix}…`)),
      h("td", {}, k.role ? k.role.name : t("people.roleGone")), h("td", {}, when(k.createdAt)),
      h("td", {}, k.expiresAt ? when(k.expiresAt) : t("people.never")), h("td", {}, when(k.lastUsedAt)),
      h("td", {}, h("button", { type: "button", class: "quiet", onclick: async () => {
        try {
          await call("DELETE", `/api-keys/${encodeURIComponent(k.id)}`, { site });
          await again(t("people.keyDeleted", { name: k.name }));
        } catch (err) { s.fail(err); }
      } }, t("people.deleteNamed", { name: k.name })))))))) : h("p", {}, t("people.noKeys")),
  section(t("people.newKeyHeading"), create));
  if (shown) shown.querySelector("input").focus();
}
