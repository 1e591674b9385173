// -- files: one file of the media library (docs/files.md), at #/s/<site>/files/<id>: its metadata
// (title, description, tags, folder), its focal point (a click on the image, or the arrow keys on
// the focused picker; Shift moves five steps), and the transform presets with a live preview of
// the file through each (GET /assets/<id>?preset=<key>), or through parameters typed for a new
// preset, both cropped around the focal point as it is being moved (the `focal` parameter).

import { data } from "./api.js";
import { h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { folderPaths, imageUrl, refusal, size } from "./media.js";
import { siteHash } from "./router.js";

const PICKER_WIDTH = 480;
const STEPS = 50; // an arrow key moves the point 1/50 of the image

function field(label, control) {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

function focalPicker(shell, file, point, onMove) {
  const marker = h("span", { class: "marker", "aria-hidden": "true" });
  // Both sizes from the start: the box keeps the image's shape while its transform loads, so a click
  // meanwhile, or a layout measured then, is not on a box of no height.
  const across = Math.min(PICKER_WIDTH, file.width);
  const img = h("img", { alt: "", width: String(across), height: String(Math.max(1, Math.round((across * file.height) / file.width))) });
  const status = h("p", { role: "status" });
  const button = h("button", { type: "button", class: "focal" }, img, marker);
  const draw = () => {
    const p = point.value;
    button.setAttribute("aria-label", p ? t("files.focalAt", { x: p.x, y: p.y }) : t("files.focalNone"));
    replace(status, p ? t("files.focalAt", { x: p.x, y: p.y }) : t("files.focalNone"));
    marker.hidden = !p;
    if (p) {
      marker.style.setProperty("left", `${(100 * p.x) / file.width}%`);
      marker.style.setProperty("top", `${(100 * p.y) / file.height}%`);
    }
  };
  const set = (x, y) => {
    point.value = { x: Math.max(0, Math.min(file.width, Math.round(x))), y: Math.max(0, Math.min(file.height, Math.round(y))) };
    draw();
    onMove();
  };
  button.addEventListener("click", (event) => {
    const box = img.getBoundingClientRect();
    if (!box.width || event.detail === 0) return; // a keyboard "click" (Enter, Space) does not move it
    set(((event.clientX - box.left) / box.width) * file.width, ((event.clientY - box.top) / box.height) * file.height);
  });
  button.addEventListener("keydown", (event) => {
    const moves = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    if (!moves[event.key]) return;
    event.preventDefault();
    const p = point.value || { x: Math.round(file.width / 2), y: Math.round(file.height / 2) };
    const times = event.shiftKey ? 5 : 1;
    const [dx, dy] = moves[event.key];
    set(p.x + dx * times * Math.max(1, Math.round(file.width / STEPS)), p.y + dy * times * Math.max(1, Math.round(file.height / STEPS)));
  });
  const clear = h("button", { type: "button", class: "secondary", onclick: () => { point.value = null; draw(); onMove(); } },
    t("files.focalClear"));
  imageUrl(shell.site, file.id, `width=${across}&fit=inside&format=png`).then((src) => { img.src = src; });
  draw();
  return h("section", { class: "focal-picker", "aria-labelledby": "focal-h" },
    h("h2", { id: "focal-h" }, t("files.focalHeading")), h("p", { class: "muted" }, t("files.focalHelp")),
    button, status, clear);
}

function presetsPanel(shell, file, point, presets) {
  const ids = { preset: uid("preset"), key: uid("preset-key"), name: uid("preset-name"), dsl: uid("preset-dsl") };
  const select = h("select", { id: ids.preset });
  const preview = h("img", { class: "preview", alt: "" });
  const status = h("p", { role: "status" });
  const key = h("input", { id: ids.key, type: "text", required: true, pattern: "[a-z0-9_\\-]{1,64}" });
  const name = h("input", { id: ids.name, type: "text", required: true });
  const dsl = h("input", { id: ids.dsl, type: "text", required: true, placeholder: "width=300&height=200&fit=cover" });
  let shown = 0;
  let timer = null;
  const fill = (chosen) => replace(select, h("option", { value: "" }, t("files.presetNone")),
    presets.map((p) => h("option", { value: p.key, selected: p.key === chosen }, `${p.name} (${p.dsl})`)));
  const show = async () => {
    const params = dsl.value.trim() ? new URLSearchParams(dsl.value.trim().replace(/^\?/, "")) : new URLSearchParams();
    if (!dsl.value.trim() && select.value) params.set("preset", select.value);
    if (![...params.keys()].length) {
      preview.hidden = true;
      return replace(status, t("files.previewPick"));
    }
    if (point.value && !params.has("focal")) params.set("focal", `${point.value.x},${point.value.y}`);
    const mine = ++shown;
    try {
      const src = await imageUrl(shell.site, file.id, params.toString());
      if (mine !== shown) return;
      preview.src = src;
      preview.hidden = false;
      preview.alt = t("files.previewOf", { name: file.title || file.key });
      replace(status, t("files.previewShown", { params: decodeURIComponent(params.toString()) }));
    } catch (err) {
      if (mine !== shown) return;
      preview.hidden = true;
      replace(status, h("span", { class: "error" }, refusal(err)));
    }
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(show, 250); };
  select.addEventListener("change", () => { dsl.value = ""; show(); });
  dsl.addEventListener("input", soon);
  const form = h("form", { class: "preset-new", onsubmit: async (event) => {
    event.preventDefault();
    try {
      const made = await data("POST", "/transform-presets", { site: shell.site, body: { key: key.value.trim(), name: name.value.trim(), dsl: dsl.value.trim() } });
      presets.push(made);
      fill(made.key);
      key.value = name.value = dsl.value = "";
      await show();
      replace(status, t("files.presetSaved", { name: made.name }));
    } catch (err) {
      replace(status, h("span", { class: "error" }, refusal(err)));
    }
  } }, h("h3", {}, t("files.presetNew")), field(t("files.presetKey"), key), field(t("files.presetName"), name),
  field(t("files.presetDsl"), dsl), h("button", { type: "submit" }, t("files.presetSave")));
  fill("");
  preview.hidden = true;
  return { el: h("section", { class: "presets", "aria-labelledby": "presets-h" }, h("h2", { id: "presets-h" }, t("files.presetsHeading")),
    field(t("files.preset"), select), form, status, preview), refresh: soon };
}

export async function renderMediaFile(shell, id) {
  if (!shell.ctx.permissions.admin) {
    document.title = `${t("files.heading")} · ${shell.title}`;
    return replace(shell.main, h("h1", {}, t("files.heading")), h("p", { role: "alert", class: "error" }, t("files.adminsOnly")));
  }
  const [file, folders, presets] = await Promise.all([
    data("GET", `/files/${encodeURIComponent(id)}`, { site: shell.site }), folderPaths(shell.site),
    data("GET", "/transform-presets", { site: shell.site })]);
  document.title = `${file.title || file.key} · ${shell.title}`;
  const ids = { title: uid("title"), description: uid("description"), tags: uid("tags"), folder: uid("folder") };
  const title = h("input", { id: ids.title, type: "text", maxlength: "255", value: file.title || "" });
  const description = h("textarea", { id: ids.description, rows: "3", maxlength: "4000" });
  description.value = file.description || "";
  const tags = h("input", { id: ids.tags, type: "text", value: file.tags.join(", "), "aria-describedby": `${ids.tags}-hint` });
  const folder = h("select", { id: ids.folder }, h("option", { value: "" }, t("files.noFolder")),
    folders.map((f) => h("option", { value: f.id, selected: f.id === file.folderId }, f.path)));
  const status = h("p", { role: "status" });
  const point = { value: file.focalPoint };
  const image = Boolean(file.width && file.height);
  const panel = image ? presetsPanel(shell, file, point, presets) : null;
  const form = h("form", { class: "meta", "aria-labelledby": "meta-h", onsubmit: async (event) => {
    event.preventDefault();
    const body = { title: title.value.trim() || null, description: description.value.trim() || null,
      tags: tags.value.split(",").map((s) => s.trim()).filter(Boolean), folderId: folder.value || null };
    if (image) body.focalPoint = point.value;
    try {
      const saved = await data("PATCH", `/files/${encodeURIComponent(file.id)}`, { site: shell.site, body });
      Object.assign(file, saved);
      replace(status, t("files.saved"));
    } catch (err) {
      replace(status, h("span", { class: "error" }, refusal(err)));
    }
  } }, h("h2", { id: "meta-h" }, t("files.metaHeading")),
  field(t("files.title"), title), field(t("files.description"), description),
  h("div", { class: "field" }, h("label", { for: ids.tags }, t("files.tags")), tags,
    h("p", { id: `${ids.tags}-hint`, class: "muted" }, t("files.tagsHint"))),
  field(t("files.folder"), folder),
  image ? focalPicker(shell, file, point, () => panel.refresh()) : null,
  h("button", { type: "submit" }, t("files.save")), status);
  const back = siteHash(shell.site, "files") + (file.folderId ? `?folder=${encodeURIComponent(file.folderId)}` : "");
  replace(shell.main, h("p", {}, h("a", { href: back }, t("files.back"))),
    h("h1", {}, file.title || file.key),
    h("p", { class: "muted" }, `${file.key} · ${file.type} · ${size(file.filesize)}${image ? ` · ${file.width} × ${file.height}` : ""}`),
    h("div", { class: "file-detail" }, form, panel && panel.el));
}
// -- end files
