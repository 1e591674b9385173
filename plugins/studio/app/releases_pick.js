// -- releases: "Add to release" on a list's selection: the chosen items go into a release that is
// not published yet (PATCH /releases/:id addItems), with a target status and, when asked, each
// item's latest committed revision pinned (GET /items/:c/:id/revisions?limit=1).

import { ApiError, data } from "./api.js";
import { said } from "./releases.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { siteHash } from "./router.js";

const TARGETS = ["published", "draft", "archived"];

async function latestRevision(site, collection, id) {
  const page = await data("GET", `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}/revisions`,
    { site, params: { limit: 1, staged: "false" } });
  return page.length ? page[0].id : null;
}

/** The picker's button (enabled with a selection) and the form it opens. */
export function releasePicker({ shell, collection, status, selected }) {
  const site = shell.site;
  const area = h("div", { class: "confirm" });
  const targets = status ? status.values.map((v) => v.value) : TARGETS;
  const open = async () => {
    const ids = selected();
    const releases = (await data("GET", "/releases", { site, params: { limit: 200 } })).filter((r) => r.status !== "published");
    if (!releases.length) {
      replace(area, h("p", { role: "status" }, t("releases.pickNone"), " ", h("a", { href: siteHash(site, "releases") }, t("releases.heading"))));
      return;
    }
    const ids_ = { release: uid("rel"), target: uid("rel"), pin: uid("rel") };
    const release = h("select", { id: ids_.release }, releases.map((r) => h("option", { value: r.id }, r.name)));
    const target = h("select", { id: ids_.target }, targets.map((v) => h("option", { value: String(v) }, String(v))));
    const pin = h("input", { id: ids_.pin, type: "checkbox", checked: true });
    const note = h("p", { role: "status" });
    const add = h("button", { type: "button", onclick: async () => {
      add.disabled = true;
      replace(note, t("bulk.working"));
      try {
        const addItems = [];
        for (const itemId of ids) {
          const entry = { collection, itemId, targetStatus: target.value };
          if (pin.checked) {
            const revisionId = await latestRevision(site, collection, itemId);
            if (revisionId) entry.revisionId = revisionId;
          }
          addItems.push(entry);
        }
        const done = await data("PATCH", `/releases/${encodeURIComponent(release.value)}`, { site, body: { addItems } });
        replace(note, t("releases.added", { count: ids.length, name: done.name }), " ",
          h("a", { href: siteHash(site, "releases", done.id) }, t("releases.open", { name: done.name })));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        replace(note, said(err));
        add.disabled = false;
      }
    } }, t("releases.addSelected", { count: ids.length }));
    replace(area, h("div", { role: "group", "aria-label": t("releases.addTo") },
      h("label", { for: ids_.release }, t("releases.release")), release,
      h("label", { for: ids_.target }, t("releases.target")), target,
      h("span", {}, pin, h("label", { for: ids_.pin }, t("releases.pin"))), add, note));
    release.focus();
  };
  const button = h("button", { type: "button", disabled: true, onclick: open }, t("releases.addTo"));
  return { button, el: h("span", { class: "add-release" }, button, area), reset: () => replace(area) };
}
// -- end releases
