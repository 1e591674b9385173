// -- ext_ui: extensions (docs/extensions.md), for the instance admin working in a site.
//   #/s/<site>/extensions        the installed extensions with their state in this site, and the
//                                upload of a signed bundle with its verification result (signer,
//                                digest, signature state, capabilities) or the API's errors
//   #/s/<site>/extensions/<id>   one extension: the capabilities it asks for, shown and confirmed
//                                before they are granted in this site and it is enabled; disable,
//                                change the grants, uninstall
// The API decides who may do this: the instance admin uploads, offers an extension to the site with
// the most it may be granted, and uninstalls; a site admin (-- govern43) sees what was offered to
// the site (or runs there) and enables, disables and grants it within that maximum.
// UI panels that extensions declare load in ext_panel.js.

import { ApiError, callRaw, data } from "./api.js";
import { ask, h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { labelled, section } from "./releases.js";
import { go, siteHash } from "./router.js";

/** What a capability lets the extension do, in words (the code itself is shown beside it). */
export function capabilityText(cap) {
  const [kind, arg] = cap.split(/:(.*)/s);
  const key = `ext.cap.${kind}`;
  const text = t(key, { value: arg || "" });
  return text === key ? t("ext.cap.unknown") : text;
}

/** A list of capabilities, each its code and what it lets the extension do. */
export function capabilityList(caps, label) {
  if (!caps.length) return h("p", {}, t("ext.noCapabilities"));
  return h("ul", { class: "ext-caps", "aria-label": label }, caps.map((c) =>
    h("li", {}, h("code", {}, c), " ", capabilityText(c))));
}

/** The API's refusal as the envelope says it: every error's code, message and the part it names. */
export function refusal(err, title) {
  if (!(err instanceof ApiError)) throw err;
  const errors = err.errors.length ? err.errors : [{ code: err.code || `HTTP ${err.status}`, message: err.message }];
  return h("div", { role: "alert", class: "ext-refusal" }, h("p", {}, h("strong", {}, title), ` (HTTP ${err.status})`),
    h("ul", {}, errors.map((e) => h("li", {}, h("code", {}, e.code), " ", e.message,
      e.path && e.path.length ? h("span", { class: "muted" }, " ", t("ext.errorAt", { path: e.path.join(" › ") })) : null))));
}

/** The facts of an extension record: who signed it, what it is, what it asks for. */
function facts(ext) {
  const sig = ext.signature || {};
  return [h("dl", { class: "release-facts" },
    h("dt", {}, t("ext.version")), h("dd", {}, ext.version),
    h("dt", {}, t("ext.signer")), h("dd", {}, ext.publisher),
    h("dt", {}, t("ext.signature")), h("dd", {}, t(`ext.sig.${sig.state}`), ext.statusReason ? ` (${ext.statusReason})` : ""),
    h("dt", {}, t("ext.official")), h("dd", {}, ext.isOfficial ? t("ext.yes") : t("ext.no")),
    h("dt", {}, t("ext.digest")), h("dd", {}, h("code", { class: "ext-digest" }, sig.sha256 || "")),
    h("dt", {}, t("ext.statusLabel")), h("dd", {}, t(`ext.status.${ext.status}`)),
    ext.description ? [h("dt", {}, t("ext.description")), h("dd", {}, ext.description)] : null),
  h("h3", {}, t("ext.asks")), capabilityList(ext.requestedCapabilities || [], t("ext.asks"))];
}

function siteState(ext) {
  const s = ext.site || {};
  if (s.enabled) return t("ext.enabledHere");
  return s.disabledReason ? t("ext.disabledBecause", { reason: s.disabledReason }) : t("ext.notEnabled");
}

export async function renderExtensions(shell) {
  const site = shell.site;
  const instance = shell.ctx.instanceAdmin; // -- govern43: the upload is the instance admin's
  document.title = `${t("ext.heading")} · ${shell.title}`;
  const list = h("div");
  const drawList = async () => {
    const all = await data("GET", "/extensions", { site });
    replace(list, all.length ? h("table", { class: "files-table" }, h("caption", {}, t("ext.caption", { site })),
      h("thead", {}, h("tr", {}, [t("ext.name"), t("ext.version"), t("ext.signer"), t("ext.signature"), t("ext.inSite")]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, all.map((e) => h("tr", {},
        h("th", { scope: "row" }, h("a", { href: siteHash(site, "extensions", e.id) }, e.name)),
        h("td", {}, e.version), h("td", {}, e.publisher), h("td", {}, t(`ext.sig.${e.signature.state}`)),
        h("td", {}, e.status === "blocked" ? t("ext.status.blocked") : siteState(e))))))
      : h("p", {}, t(instance ? "ext.none" : "ext.noneOffered")));
  };
  await drawList();

  const bundle = h("input", { type: "file", accept: ".zip,application/zip", required: true });
  const signature = h("input", { type: "file", accept: ".sig,text/plain", required: true });
  const upgrade = h("input", { type: "checkbox", id: uid("ext-replace") });
  const result = h("div", { role: "region", "aria-label": t("ext.result"), tabindex: "-1" });
  const submit = h("button", { type: "submit" }, t("ext.upload"));
  const form = h("form", { "aria-label": t("ext.uploadHeading"), onsubmit: async (event) => {
    event.preventDefault();
    const body = new FormData();
    body.append("bundle", bundle.files[0]);
    body.append("signature", (await signature.files[0].text()).trim());
    submit.disabled = true;
    replace(result, h("p", { role: "status" }, t("ext.verifying")));
    try {
      const path = upgrade.checked ? "/extensions/upload?replace=true" : "/extensions/upload";
      const resp = await callRaw("POST", path, { body, site: "" });
      const ext = (await resp.json()).data;
      replace(result, h("h3", {}, t(resp.status === 201 ? "ext.installed" : "ext.upgraded", { name: ext.name, version: ext.version })),
        ...facts(ext), h("p", {}, h("a", { href: siteHash(site, "extensions", ext.id) }, t("ext.openToEnable", { name: ext.name }))));
      form.reset();
      await drawList();
    } catch (err) {
      replace(result, refusal(err, t("ext.refused")));
    } finally {
      submit.disabled = false;
      result.focus();
    }
  } }, labelled(t("ext.bundle"), bundle, t("ext.bundleHint")), labelled(t("ext.signatureFile"), signature, t("ext.signatureHint")),
  h("p", {}, upgrade, " ", h("label", { for: upgrade.id }, t("ext.replace"))), submit);
  replace(shell.main, h("h1", {}, t("ext.heading")), h("p", { class: "muted" }, t(instance ? "ext.intro" : "ext.introSiteAdmin", { site })), list,
    instance ? section(t("ext.uploadHeading"), form, result) : null);
}

/** `onChanged()`: an enable, disable, grant or uninstall happened (the navigator's panels change). */
export async function renderExtension(shell, id, { onChanged = () => {} } = {}) {
  const site = shell.site;
  const path = `/extensions/${encodeURIComponent(id)}`;
  let ext = await data("GET", path, { site });
  const flash = h("div", { role: "status" });
  const alert = h("div");
  const body = h("div");

  const act = async (doing, note) => {
    replace(alert);
    try {
      ext = await doing();
      onChanged();
      draw();
      replace(flash, note);
    } catch (err) {
      replace(alert, refusal(err, t("ext.refusedAction")));
    }
  };

  const draw = () => {
    document.title = `${ext.name} · ${t("ext.heading")} · ${shell.title}`;
    const state = ext.site || { enabled: false, grantedCapabilities: [] };
    const instance = shell.ctx.instanceAdmin; // -- govern43: a site admin grants within the maximum
    const asked = ext.requestedCapabilities || [];
    const requested = instance ? asked : asked.filter((c) => (state.maxCapabilities || []).includes(c));
    const beyond = asked.filter((c) => !requested.includes(c));
    const fresh = !state.enabled && !state.grantedCapabilities.length;
    const boxes = requested.map((cap) => {
      const box = h("input", { type: "checkbox", id: uid("ext-cap"), value: cap, checked: fresh || state.grantedCapabilities.includes(cap) });
      return { cap, box, row: h("li", {}, box, " ", h("label", { for: box.id }, h("code", {}, cap), " ", capabilityText(cap))) };
    });
    const chosen = () => boxes.filter((b) => b.box.checked).map((b) => b.cap);
    // Nothing is granted or enabled before the admin has seen, in one dialog, exactly what will be.
    const confirm = async (enable) => {
      const grant = chosen();
      const left = requested.filter((c) => !grant.includes(c));
      const yes = await ask({
        title: t(enable ? "ext.confirmEnable" : "ext.confirmGrants", { name: ext.name, site }),
        body: h("div", {}, h("p", {}, t("ext.willGrant")), capabilityList(grant, t("ext.willGrant")),
          left.length ? [h("p", {}, t("ext.wontGrant")), capabilityList(left, t("ext.wontGrant"))] : null),
        choices: [[t(enable ? "ext.grantAndEnable" : "ext.saveGrants"), true], [t("ext.cancel"), false, { class: "quiet" }]],
      });
      if (!yes) return;
      await act(async () => {
        const granted = await data("POST", `${path}/capabilities`, { site, body: { capabilities: grant } });
        return enable ? data("POST", `${path}/enable`, { site }) : granted;
      }, t(enable ? "ext.nowEnabled" : "ext.grantsSaved", { name: ext.name, site }));
    };
    const grants = h("form", { "aria-label": t("ext.grantsHeading", { site }), onsubmit: (event) => { event.preventDefault(); confirm(!state.enabled); } },
      h("fieldset", {}, h("legend", {}, t("ext.grantsLegend", { site })), requested.length ? h("ul", { class: "ext-caps" }, boxes.map((b) => b.row)) : h("p", {}, t("ext.noCapabilities"))),
      beyond.length ? [h("p", {}, t("ext.beyondMaximum")), capabilityList(beyond, t("ext.beyondMaximum"))] : null,
      ext.status === "blocked" ? null : h("button", { type: "submit" }, state.enabled ? t("ext.reviewGrants") : t("ext.reviewEnable")),
      state.enabled ? h("button", { type: "button", class: "quiet", onclick: () =>
        act(() => data("POST", `${path}/disable`, { site }), t("ext.nowDisabled", { name: ext.name, site })) }, t("ext.disable")) : null);
    const uninstall = h("button", { type: "button", class: "quiet", onclick: async () => {
      const yes = await ask({ title: t("ext.confirmUninstall", { name: ext.name }), body: h("p", {}, t("ext.uninstallHint")),
        choices: [[t("ext.uninstall"), true], [t("ext.cancel"), false, { class: "quiet" }]] });
      if (!yes) return;
      try {
        await data("DELETE", path, { site });
        onChanged();
        go(siteHash(site, "extensions"));
      } catch (err) {
        replace(alert, refusal(err, t("ext.refusedAction")));
      }
    } }, t("ext.uninstall"));
    // -- govern43: a site admin changes only what the instance admin made available to the site
    const mine = instance || state.available;
    replace(body, section(t("ext.verification"), ...facts(ext)),
      section(t("ext.inSiteHeading", { site }), h("p", {}, siteState(ext)),
        state.failures ? h("p", {}, t("ext.failures", { count: state.failures })) : null,
        mine ? grants : h("p", {}, t("ext.notOffered"))),
      instance ? availability(ext, state, site, path, act) : null,
      instance ? section(t("ext.instance"), h("p", { class: "muted" }, t("ext.uninstallHint")), h("p", {}, uninstall)) : null);
  };
  draw();
  replace(shell.main, h("p", {}, h("a", { href: siteHash(site, "extensions") }, t("ext.back"))),
    h("h1", {}, ext.name), flash, alert, body);
}

/** -- govern43: the instance admin's offer of the extension to this site: available to its site
 * admins or not, and the most they may grant (each capability the manifest asks for). */
function availability(ext, state, site, path, act) {
  const offered = h("input", { type: "checkbox", id: uid("ext-offer"), checked: Boolean(state.available) });
  const boxes = (ext.requestedCapabilities || []).map((cap) => {
    const box = h("input", { type: "checkbox", id: uid("ext-max"), value: cap, checked: (state.maxCapabilities || []).includes(cap) });
    return h("li", {}, box, " ", h("label", { for: box.id }, h("code", {}, cap), " ", capabilityText(cap)));
  });
  const form = h("form", { "aria-label": t("ext.offerHeading", { site }), onsubmit: (event) => {
    event.preventDefault();
    const most = [...form.querySelectorAll("fieldset input:checked")].map((b) => b.value);
    act(() => data("PUT", `${path}/availability`, { site, body: { available: offered.checked, maxCapabilities: most } }),
      t(offered.checked ? "ext.offerSaved" : "ext.offerWithdrawn", { name: ext.name, site }));
  } },
  h("p", {}, offered, " ", h("label", { for: offered.id }, t("ext.offerToggle", { site }))),
  h("fieldset", {}, h("legend", {}, t("ext.offerLegend")), boxes.length ? h("ul", { class: "ext-caps" }, boxes) : h("p", {}, t("ext.noCapabilities"))),
  h("button", { type: "submit" }, t("ext.offerSave")));
  return section(t("ext.offerHeading", { site }), h("p", { class: "muted" }, t("ext.offerHint")), form);
}
// -- end ext_ui
