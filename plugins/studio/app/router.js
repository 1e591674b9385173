// Moving between screens: every screen is a URL hash (main.js reads it on "hashchange").

export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

export function siteHash(site, ...parts) {
  return "#/" + ["s", site, ...parts].map(encodeURIComponent).join("/");
}

// -- editor: a screen may ask before it is left (unsaved changes): main.js awaits `leaving.ask()`
// on every hash change and, when it answers false, puts the previous hash back.
export const leaving = { ask: null };
