// -- files: the media library (docs/files.md), for site admins: the files of one folder in a grid
// or a list, the folders (GET/POST /folders), and the upload of many files at once, each with its
// progress (XMLHttpRequest upload events) and, when the upload guard refuses one, its reason.
// The view is the URL's query: #/s/<site>/files?folder=<id>&view=list; a file opens in
// media_file.js at #/s/<site>/files/<id>.

import { ApiError, callRaw, data, refresh, session } from "./api.js";
import { dropFiles, h, replace, uid } from "./dom.js";
import { t } from "./i18n.js";
import { go, siteHash } from "./router.js";

const THUMB = "width=160&height=120&fit=cover&format=png";
const PARALLEL = 3; // uploads at once

/** An image of the file as a data: URL (an <img> cannot send the token; the CSP admits data:). */
export async function imageUrl(site, id, query) {
  const resp = await callRaw("GET", `/assets/${encodeURIComponent(id)}?${query}`, { site });
  const blob = await resp.blob();
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** Every folder of the site with its path ("Summer / Beach"), sorted by path. */
export async function folderPaths(site) {
  const all = await data("GET", "/folders", { site });
  const byId = new Map(all.map((f) => [f.id, f]));
  const path = (f) => (f.parent && byId.has(f.parent) ? `${path(byId.get(f.parent))} / ${f.name}` : f.name);
  return all.map((f) => ({ ...f, path: path(f) })).sort((a, b) => a.path.localeCompare(b.path));
}

/** Why the API refused: its message, code and `extensions.reason` when it gives one. */
export function refusal(err) {
  if (!(err instanceof ApiError)) return err.message;
  const first = err.errors[0] || {};
  const reason = first.extensions && first.extensions.reason;
  return `${err.message} (${[err.code, reason].filter(Boolean).join(": ")})`;
}

export function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function sendFile(site, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", `/api/v1/files/upload/${encodeURIComponent(file.name)}`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-Svc-Site", site);
    xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    if (session.token) xhr.setRequestHeader("Authorization", `Bearer ${session.token}`);
    xhr.upload.addEventListener("progress", (event) => { if (event.lengthComputable) onProgress(event.loaded, event.total); });
    xhr.addEventListener("load", () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch { body = null; }
      if (xhr.status >= 400) reject(new ApiError(xhr.status, body && body.errors));
      else resolve({ status: xhr.status, file: body.data });
    });
    xhr.addEventListener("error", () => reject(new Error(t("files.networkError"))));
    xhr.send(file);
  });
}

/** PUT /files/upload/<name> with progress; an expired token is refreshed once. */
async function upload(site, file, onProgress) {
  if (!session.token) await refresh();
  try {
    return await sendFile(site, file, onProgress);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401 || !(await refresh())) throw err;
    return sendFile(site, file, onProgress);
  }
}

function uploader(shell, folderId, onDone) {
  const inputId = uid("upload");
  const log = h("ul", { class: "uploads", "aria-label": t("files.uploadsLabel") });
  const summary = h("p", { role: "status" });
  const run = async (chosen) => {
    if (!chosen.length) return;
    replace(log);
    let done = 0, refused = 0;
    const rows = chosen.map((file) => {
      const bar = h("progress", { max: String(file.size || 1), value: "0", "aria-label": t("files.progressOf", { name: file.name }) });
      const note = h("span", { class: "muted" }, t("files.waiting"));
      const li = h("li", {}, h("span", { class: "name" }, file.name), bar, note);
      log.append(li);
      return { file, bar, note, li };
    });
    const count = () => replace(summary, t("files.uploadSummary", { done, refused, count: chosen.length }));
    count();
    const queue = [...rows];
    const worker = async () => {
      for (let row = queue.shift(); row; row = queue.shift()) {
        replace(row.note, t("files.uploading"));
        try {
          const { status, file } = await upload(shell.site, row.file, (loaded, total) => {
            row.bar.max = total;
            row.bar.value = loaded;
          });
          row.bar.value = row.bar.max;
          replace(row.note, status === 200 ? t("files.replaced") : t("files.uploaded"));
          done += 1;
          // The bytes are stored: a refused move into the folder says so, not that the upload failed.
          if (folderId) {
            await data("PATCH", `/files/${encodeURIComponent(file.id)}`, { site: shell.site, body: { folderId } })
              .catch((err) => replace(row.note, h("span", { class: "error" }, t("files.notMoved", { reason: refusal(err) }))));
          }
        } catch (err) {
          row.li.classList.add("refused");
          row.bar.remove();
          replace(row.note, h("span", { class: "error" }, t("files.refused", { reason: refusal(err) })));
          refused += 1;
        }
        count();
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, rows.length) }, worker));
    await onDone();
  };
  const picker = h("input", { id: inputId, type: "file", multiple: true, onchange: async () => {
    const chosen = [...picker.files];
    picker.value = "";
    await run(chosen);
  } });
  const zone = h("div", { class: "dropzone" }, h("label", { for: inputId }, t("files.upload")), picker,
    h("p", { class: "muted" }, t("files.dropHint")));
  dropFiles(zone, run);
  return h("section", { class: "upload", "aria-labelledby": `${inputId}-h` },
    h("h2", { id: `${inputId}-h` }, t("files.uploadHeading")), zone, summary, log);
}

function folderBar(shell, folders, current, view) {
  const here = (id) => siteHash(shell.site, "files") + "?" + new URLSearchParams({ ...(id ? { folder: id } : {}), view });
  const byId = new Map(folders.map((f) => [f.id, f]));
  const trail = [];
  for (let f = byId.get(current); f; f = byId.get(f.parent)) trail.unshift(f);
  const children = folders.filter((f) => (f.parent || null) === (current || null));
  const nameId = uid("folder-name");
  const name = h("input", { id: nameId, type: "text", required: true, maxlength: "255" });
  const status = h("p", { role: "status" });
  const create = h("form", { class: "inline", onsubmit: async (event) => {
    event.preventDefault();
    try {
      await data("POST", "/folders", { site: shell.site, body: { name: name.value.trim(), ...(current ? { parent: current } : {}) } });
      go(here(current));
    } catch (err) {
      replace(status, h("span", { class: "error" }, refusal(err)));
      name.focus();
    }
  } }, h("label", { for: nameId }, t("files.folderName")), name, h("button", { type: "submit" }, t("files.createFolder")));
  return h("section", { class: "folders", "aria-label": t("files.foldersLabel") },
    h("nav", { "aria-label": t("files.breadcrumb") }, h("ol", { class: "crumbs" },
      h("li", {}, current ? h("a", { href: here(null) }, t("files.allFolders")) : h("span", { "aria-current": "page" }, t("files.allFolders"))),
      trail.map((f) => h("li", {}, f.id === current ? h("span", { "aria-current": "page" }, f.name) : h("a", { href: here(f.id) }, f.name))))),
    children.length ? h("ul", { class: "subfolders", "aria-label": t("files.subfolders") },
      children.map((f) => h("li", {}, h("a", { href: here(f.id) }, t("files.openFolder", { name: f.name }))))) : null,
    create, status);
}

async function filesView(shell, files, view) {
  const open = (f) => siteHash(shell.site, "files", f.id);
  if (!files.length) return h("p", { class: "muted" }, t("files.empty"));
  if (view === "list") {
    return h("table", {}, h("caption", {}, t("files.caption")),
      h("thead", {}, h("tr", {}, ["files.name", "files.type", "files.size", "files.dimensions", "files.tags"]
        .map((key) => h("th", { scope: "col" }, t(key))))),
      h("tbody", {}, files.map((f) => h("tr", {},
        h("td", {}, h("a", { href: open(f) }, f.title || f.key)), h("td", {}, f.type), h("td", {}, size(f.filesize)),
        h("td", {}, f.width ? `${f.width} × ${f.height}` : ""), h("td", {}, f.tags.join(", "))))));
  }
  const thumbs = await Promise.all(files.map((f) => (f.width ? imageUrl(shell.site, f.id, THUMB).catch(() => null) : null)));
  return h("ul", { class: "grid", "aria-label": t("files.caption") }, files.map((f, i) => h("li", {},
    h("a", { href: open(f) },
      thumbs[i] ? h("img", { src: thumbs[i], alt: "", width: "160", height: "120" }) : h("span", { class: "kind" }, f.type),
      h("span", { class: "name" }, f.title || f.key)))));
}

export async function renderMedia(shell, query) {
  document.title = `${t("files.heading")} · ${shell.title}`;
  if (!shell.ctx.permissions.admin) {
    return replace(shell.main, h("h1", {}, t("files.heading")), h("p", { role: "alert", class: "error" }, t("files.adminsOnly")));
  }
  const current = query.get("folder") || null;
  const view = query.get("view") === "list" ? "list" : "grid";
  const folders = await folderPaths(shell.site);
  const filter = current ? { "filter[folderId][_eq]": current } : { "filter[folderId][_null]": "true" };
  const area = h("div", { class: "library" });
  const draw = async () => {
    const files = await data("GET", "/files", { site: shell.site, params: { ...filter, sort: "-createdAt", limit: 200 } });
    replace(area, await filesView(shell, files, view));
  };
  const viewHash = (v) => siteHash(shell.site, "files") + "?" + new URLSearchParams({ ...(current ? { folder: current } : {}), view: v });
  const toggle = h("div", { class: "view-toggle", role: "group", "aria-label": t("files.viewLabel") },
    ["grid", "list"].map((v) => h("button", { type: "button", "aria-pressed": String(v === view), onclick: () => go(viewHash(v)) },
      t(`files.view.${v}`))));
  replace(shell.main, h("h1", {}, t("files.heading")), folderBar(shell, folders, current, view),
    uploader(shell, current, draw), toggle, area);
  await draw();
}
// -- end files
