// Moving between screens: every screen is a URL hash (main.js reads it on "hashchange").

export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

export function siteHash(site, ...parts) {
  return "#/" + ["s", site, ...parts].map(encodeURIComponent).join("/");
}
