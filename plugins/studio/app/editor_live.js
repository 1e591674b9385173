// What the editor does about other sessions (docs/studio.md, "Live"): it remembers the item's
// ETag (GET /items/:c/:id) and saves with If-Match, so a change made elsewhere since it was read
// is never silently overwritten (412 PRECONDITION_FAILED, docs/items.md); it says so when the
// realtime channel signals that someone else changed or deleted the item; and it keeps its
// unsaved values when the session ends and takes them back after signing in (drafts.js).

import { ApiError, call } from "./api.js";
import { h, replace } from "./dom.js";
import { takeDraft, watchDraft } from "./drafts.js";
import { t } from "./i18n.js";
import { onFrame, subscribe } from "./live.js";
import { go } from "./router.js";

let screen = 0; // the editor screen shown; an older one's listener stops

export function editorGuard({ shell, collection, id, etag }) {
  const mine = ++screen;
  const key = `${shell.site}/${collection}/${id === null ? "new" : id}`;
  const el = h("div", { class: "conflict", role: "alert" });
  const path = id === null ? null : `/items/${encodeURIComponent(collection)}/${encodeURIComponent(id)}`;
  let tag = etag || null;
  let saving = false;
  let pending = false;
  const here = location.hash;

  const reload = () => go(here);
  const tell = (message, ...actions) => replace(el, h("p", {}, message), actions.length ? h("div", { class: "tools" }, actions) : null);
  const theirs = () => h("button", { type: "button", onclick: reload }, t("live.loadTheirs"));

  // Did someone else write the item since we read it? A GET's ETag says (our own saves set `tag`).
  const check = async (action) => {
    if (action === "delete") return tell(t("live.deleted"));
    try {
      const resp = await call("GET", path, { site: shell.site, params: { fields: "id" } });
      if (resp.etag && tag && resp.etag !== tag) tell(t("live.changed"), theirs());
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) tell(t("live.deleted"));
      else throw err;
    }
  };

  if (path !== null) {
    subscribe(collection);
    const off = onFrame((frame) => {
      if (mine !== screen || location.hash !== here) return off();
      if (frame.type !== "event" || frame.collection !== collection || String(frame.itemId) !== String(id)) return;
      if (saving) pending = frame.action;
      else check(frame.action);
    });
  }

  return {
    el,
    /** The values kept for this editor when the session ended, or null (a notice says so). */
    restore() {
      const kept = takeDraft(key);
      if (kept) tell(t("live.restored"));
      return kept;
    },
    /** collect(): the unsaved values, read when the session ends. */
    watch(collect) {
      watchDraft(key, collect, el);
    },
    /** The headers of a save: If-Match with the ETag read (none for a new item). */
    ifMatch() {
      saving = true;
      replace(el);
      return tag ? { "If-Match": tag } : {};
    },
    /** A save answered: remember the new ETag; a signal that came meanwhile is checked now. */
    saved(newTag) {
      saving = false;
      if (newTag) tag = newTag;
      if (pending) {
        const action = pending;
        pending = false;
        check(action);
      }
    },
    /** A save failed: true when it was a conflict (412), shown with the choice to load their
     * version or save ours over it (retry() after taking the current ETag). */
    conflict(err, retry) {
      saving = false;
      pending = false;
      if (!(err instanceof ApiError) || err.code !== "PRECONDITION_FAILED") return false;
      const current = err.errors[0] && err.errors[0].extensions && err.errors[0].extensions.etag;
      tell(t("live.conflict"), theirs(), h("button", { type: "button", onclick: () => {
        tag = current || tag;
        retry();
      } }, t("live.saveMine")));
      return true;
    },
  };
}
