// File and image interfaces: a `files` field (a list of file ids) and a single-file field (a
// uuid or string field whose interface is `file` or `file-image`). Files are added by dropping
// them on the field or through its file input (the keyboard's way), uploaded with
// PUT /files/upload/<name> (docs/files.md; the name gets a short random suffix, since uploading
// to an existing name would replace that file), and shown with a thumbnail from
// GET /assets/<id>?width=..&height=..&fit=cover, read with the session's token and shown as a
// data: URL (an <img> cannot send the token; the page's CSP admits data: images).

import { callRaw, data } from "./api.js";
import { dropFiles, h, replace } from "./dom.js";
import { t } from "./i18n.js";
import { interfaceOptions } from "./iface_own.js"; // -- studio42b

const THUMB = "width=96&height=96&fit=cover&format=png";

export function isFileField(field) {
  return field.type === "files" || /^file(-image)?$|^image$/.test(field.interface || "");
}

function uploadName(name) {
  const dot = name.lastIndexOf(".");
  const stem = (dot > 0 ? name.slice(0, dot) : name).replace(/[^\w.-]+/g, "-").slice(0, 80) || "file";
  const ext = dot > 0 ? name.slice(dot).toLowerCase() : "";
  return `${stem}-${Math.random().toString(36).slice(2, 8)}${ext}`;
}

// -- studio42c: exported, with its transform's size (the image display's thumbnails are smaller)
export async function thumbnail(env, file, transform = THUMB) {
  if (!file.type || !file.type.startsWith("image/")) return null;
  const resp = await callRaw("GET", `/assets/${encodeURIComponent(file.id)}?${transform}`, { site: env.site });
  const blob = await resp.blob();
  return new Promise((resolve) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => resolve(null);
    reader.readAsDataURL(blob);
  });
}

// Whether `file` matches an accept list ("image/*, application/pdf, .txt"); no list takes all.
function accepted(accept, file) {
  if (!accept) return true;
  const name = file.name.toLowerCase();
  const type = (file.type || "").toLowerCase();
  return accept.split(",").map((a) => a.trim().toLowerCase()).filter(Boolean).some((a) => (a.startsWith(".") ? name.endsWith(a)
    : a.endsWith("/*") ? type.startsWith(a.slice(0, -1)) : type === a));
}

export async function fileControl(field, value, env) {
  const many = field.type === "files";
  const ids = (many ? (Array.isArray(value) ? value : []) : value ? [value] : []).map(String);
  const found = await Promise.all(ids.map((id) => data("GET", `/files/${encodeURIComponent(id)}`, { site: env.site })
    .catch(() => ({ id, key: id }))));
  let files = found;
  const status = h("p", { role: "status", class: "muted" });
  const list = h("ul", { class: "files", "aria-label": t("editor.filesOf", { field: field.field }) });
  const draw = async () => {
    const shown = await Promise.all(files.map(async (file) => [file, await thumbnail(env, file).catch(() => null)]));
    replace(list, shown.map(([file, src]) => h("li", {},
      src ? h("img", { src, alt: t("editor.thumbnailOf", { name: file.title || file.key }), width: "96", height: "96" }) : null,
      h("span", {}, file.title || file.key),
      env.readOnly ? null : h("button", { type: "button", class: "secondary", onclick: () => {
        files = files.filter((f) => f !== file);
        replace(status, t("editor.removed", { name: file.key }));
        draw();
        picker.focus();
      } }, t("editor.remove", { name: file.title || file.key })))));
  };
  // -- studio42b: the interface's `accept` (types, as an input's accept) refuses other files
  // before they are sent, and its `folder` labels each upload (PATCH /files/:id).
  const own = interfaceOptions(field);
  const accept = typeof own.accept === "string" && own.accept.trim() ? own.accept.trim()
    : field.interface === "file-image" || field.interface === "image" ? "image/*" : null;
  const upload = async (chosen) => {
    for (const file of chosen) {
      if (!accepted(accept, file)) {
        replace(status, t("editor.uploadRefused", { name: file.name, accept }));
        return;
      }
      replace(status, t("editor.uploading", { name: file.name }));
      try {
        const resp = await callRaw("PUT", `/files/upload/${encodeURIComponent(uploadName(file.name))}`,
          { site: env.site, body: file, contentType: file.type || "application/octet-stream" });
        let stored = (await resp.json()).data;
        if (typeof own.folder === "string" && own.folder.trim()) {
          stored = await data("PATCH", `/files/${encodeURIComponent(stored.id)}`, { site: env.site, body: { folder: own.folder.trim() } });
        }
        files = many ? [...files, stored] : [stored];
        replace(status, t("editor.uploaded", { name: file.name }));
      } catch (err) {
        replace(status, t("editor.uploadFailed", { name: file.name, message: err.message }));
        return;
      }
    }
    await draw();
  };
  const picker = h("input", { id: env.id, type: "file", name: field.field, multiple: many, disabled: env.readOnly,
    accept,
    "aria-describedby": env.describedBy,
    onchange: async () => {
      await upload([...picker.files]);
      picker.value = "";
    } });
  const zone = h("div", { class: "dropzone" }, h("p", { class: "muted" }, t("editor.dropHint")), picker);
  if (!env.readOnly) dropFiles(zone, upload); // -- files: dom.js's drop zone
  await draw();
  return { el: h("div", { class: "file-field" }, list, zone, status), input: picker, read: () => {
    const now = files.map((f) => f.id);
    return many ? (now.length || value ? now : null) : now[0] ?? null;
  } };
}
