// -- studio42b: a member picker for sites with thousands of members (a team's members): the
// chosen members as checked boxes (unchecking one drops it), a search field and one page of the
// members it finds (GET /users?search=&limit=&offset=, the chosen left out), each a box to check,
// with Previous and More buttons. Nothing draws every member of the site.

import { call } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";

export const PICK_PAGE = 10;

/**
 * A fieldset labelled `label`; `chosen` is [[id, email]]. read() gives the chosen ids, in the
 * order they were chosen; start() reads the first page of members (at once, or when the picker is
 * first shown).
 * -- studio42c: `single` keeps one member at most (a new pick replaces the chosen one); `extra`
 * ([[id, text]]: people who are members of no site, as the audit's instance admin) are offered
 * on the first page of results, when the search matches them.
 */
export function memberPicker(site, label, chosen = [], { single = false, extra = [] } = {}) {
  const picked = new Map(chosen);
  const searchId = uid("pick-search");
  const resultsId = uid("pick-results");
  const pickedList = h("ul", { class: "picked", "aria-label": t("people.pickChosen", { name: label }) });
  const results = h("ul", { id: resultsId, class: "picked", "aria-label": t("people.pickResults", { name: label }) });
  const status = h("p", { role: "status", class: "muted" });
  const count = h("p", { id: uid("pick-count"), class: "muted" });
  const search = h("input", { id: searchId, type: "search", autocomplete: "off", maxlength: "200", "aria-controls": resultsId,
    "aria-describedby": count.id });
  const previous = h("button", { type: "button", class: "secondary", hidden: true }, t("people.pickPrevious"));
  const more = h("button", { type: "button", class: "secondary", hidden: true }, t("people.pickMore"));
  let offset = 0;
  let asked = 0;

  const box = (id, email, checked, onchange) => {
    const boxId = uid("pick");
    return h("li", { class: "me-check" }, h("input", { id: boxId, type: "checkbox", value: id, checked, onchange }),
      h("label", { for: boxId }, email));
  };
  const drawPicked = () => replace(pickedList, picked.size
    ? [...picked].map(([id, email]) => box(id, email, true, () => {
      picked.delete(id);
      replace(status, t("people.pickDropped", { name: email }));
      drawPicked();
      find();
    }))
    : h("li", { class: "muted" }, t("people.pickNone")));

  // One page of the members the search finds; an answer that a newer search overtook is dropped.
  async function find() {
    const mine = ++asked;
    const params = { limit: PICK_PAGE, offset };
    if (search.value.trim()) params.search = search.value.trim();
    let body;
    try {
      ({ body } = await call("GET", "/users", { site, params }));
    } catch (err) {
      if (mine === asked) replace(status, h("span", { class: "error" }, err.message));
      return;
    }
    if (mine !== asked) return;
    const total = (body.meta && body.meta.total) ?? body.data.length;
    const text = search.value.trim().toLowerCase();
    const others = offset ? [] : extra.filter(([id, name]) => !picked.has(id) && `${id} ${name}`.toLowerCase().includes(text))
      .map(([id, email]) => ({ id, email }));
    const rows = [...others, ...body.data.filter((u) => !picked.has(u.id) && !others.some((o) => o.id === u.id))];
    replace(results, rows.length ? rows.map((u) => box(u.id, u.email, false, () => {
      if (single) picked.clear();
      picked.set(u.id, u.email);
      replace(status, t("people.pickAdded", { name: u.email }));
      drawPicked();
      find();
    })) : h("li", { class: "muted" }, t("people.pickNoMatch")));
    previous.hidden = offset === 0;
    more.hidden = offset + PICK_PAGE >= total;
    replace(count, total ? t("people.pickShowing", { from: offset + 1, to: Math.min(offset + PICK_PAGE, total), total }) : "");
  }

  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      offset = 0;
      find();
    }, 200);
  });
  // Enter searches at once, and does not submit the form around the picker.
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    clearTimeout(timer);
    offset = 0;
    find();
  });
  previous.addEventListener("click", () => {
    offset = Math.max(0, offset - PICK_PAGE);
    find();
  });
  more.addEventListener("click", () => {
    offset += PICK_PAGE;
    find();
  });
  drawPicked();
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    find();
  };
  const el = h("fieldset", { class: "member-picker" }, h("legend", {}, label), pickedList,
    h("div", { class: "field" }, h("label", { for: searchId }, t("people.pickSearch")), search), results, count,
    h("div", { class: "tools" }, previous, more), status);
  return { el, start, read: () => [...picked.keys()], named: () => [...picked] }; // -- studio42c: named
}
