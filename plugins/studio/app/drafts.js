// Work in progress that outlives a session (docs/studio.md, "Session expiry"): when the
// session ends (the login page shows), the open editor's unsaved values are kept in
// sessionStorage (this tab only, never localStorage), and the same editor takes them back after
// signing in again. Sign out drops them.

const KEY = "svc.studio.draft.";
let watched = null; // { key, collect(): the changed values, el: an element of the editor }

/** The open editor registers how to read its unsaved values; a new editor replaces it. */
export function watchDraft(key, collect, el) {
  watched = { key, collect, el };
}

/** The session ended: keep the watched editor's unsaved values, if it is still shown. */
export function keepDraft() {
  if (!watched || !watched.el.isConnected) return;
  const values = watched.collect();
  if (values && Object.keys(values).length) sessionStorage.setItem(KEY + watched.key, JSON.stringify(values));
}

/** The values kept for this editor (and forget them), or null. */
export function takeDraft(key) {
  const raw = sessionStorage.getItem(KEY + key);
  if (raw === null) return null;
  sessionStorage.removeItem(KEY + key);
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

export function dropDrafts() {
  watched = null;
  for (const key of Object.keys(sessionStorage)) if (key.startsWith(KEY)) sessionStorage.removeItem(key);
}
