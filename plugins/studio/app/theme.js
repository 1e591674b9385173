// The site's look (docs/studio.md, "Theming"): defaultAppearance (light, dark, auto following
// prefers-color-scheme), branding.brandColor, themeOverrides and customCss.
// Everything goes through the CSSOM, which the page's Content-Security-Policy does not govern
// (docs/decisions/studio-theming.md): custom properties by style.setProperty, and customCss as
// a constructed style sheet (document.adoptedStyleSheets); never a <style> element or a style
// attribute written as text. Each token value is checked again here ('H S% L%' only, as the
// settings plugin checks it), so no value can carry a declaration or a rule of its own.

// themeOverrides' tokens (docs/settings-and-site.md) -> the studio's own custom properties.
const TOKENS = {
  background: ["--bg"], foreground: ["--fg"], card: ["--panel"], "card-foreground": [],
  popover: [], "popover-foreground": [], primary: ["--brand"], "primary-foreground": ["--accent-fg"],
  secondary: [], "secondary-foreground": [], muted: ["--panel"], "muted-foreground": ["--muted"],
  accent: [], "accent-foreground": [], destructive: ["--error"], "destructive-foreground": [],
  border: ["--line"], input: ["--input"], ring: ["--ring"],
};
export const THEME_TOKENS = Object.keys(TOKENS); // -- studio42: the site settings offer every one
const HSL = /^(\d{1,3}(?:\.\d+)?) (\d{1,3}(?:\.\d+)?)% (\d{1,3}(?:\.\d+)?)%$/;
const HEX = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const DARK = window.matchMedia("(prefers-color-scheme: dark)");
let current = null; // the config applied
let set = []; // the properties this module set on <html>

/** 'H S% L%' as a CSS colour, or null when the value is not exactly that. */
export function tokenColour(value) {
  const m = typeof value === "string" ? HSL.exec(value) : null;
  if (!m) return null;
  const [hue, sat, light] = m.slice(1).map(Number);
  return hue <= 360 && sat <= 100 && light <= 100 ? `hsl(${hue} ${sat}% ${light}%)` : null;
}

function mode(appearance) {
  if (appearance === "light" || appearance === "dark") return appearance;
  return DARK.matches ? "dark" : "light";
}

function paint() {
  const html = document.documentElement;
  for (const name of set) html.style.removeProperty(name);
  set = [];
  if (!current) return;
  const put = (name, value) => { html.style.setProperty(name, value); set.push(name); };
  const brand = current.branding && current.branding.brandColor;
  if (typeof brand === "string" && HEX.test(brand)) put("--brand", brand);
  const overrides = (current.themeOverrides || {})[mode(html.dataset.appearance)] || {};
  for (const [token, value] of Object.entries(overrides)) {
    const colour = Object.hasOwn(TOKENS, token) ? tokenColour(value) : null;
    if (!colour) continue; // not a token, or not 'H S% L%': ignored, never written
    put(`--tk-${token}`, colour);
    for (const name of TOKENS[token]) put(name, colour);
  }
}

function customSheet(css) {
  if (!("adoptedStyleSheets" in document)) return;
  const own = document.adoptedStyleSheets.filter((s) => !s.svcCustom);
  if (!css) {
    document.adoptedStyleSheets = own;
    return;
  }
  const sheet = new CSSStyleSheet();
  sheet.svcCustom = true;
  // replaceSync parses the text as a style sheet and nothing else; @import rules are dropped.
  sheet.replaceSync(String(css));
  document.adoptedStyleSheets = [...own, sheet];
}

/** Apply a site's look (GET /site); null clears it (the login page). */
export function applyTheme(config) {
  const html = document.documentElement;
  current = config || null;
  const appearance = config && ["light", "dark"].includes(config.defaultAppearance) ? config.defaultAppearance : "auto";
  html.dataset.appearance = own || appearance; // -- me: the user's preference first
  paint();
  customSheet(config && config.customCss);
  favicon(config && config.branding && config.branding.faviconUrl); // -- studio42
}

// -- studio42: branding.faviconUrl as the page's icon (the CSP's img-src allows https: and 'self')
function favicon(url) {
  let link = document.head.querySelector("link[rel='icon']");
  if (!url) return link && link.remove();
  if (!link) {
    link = document.createElement("link");
    link.rel = "icon";
    document.head.append(link);
  }
  link.href = url;
}

// "auto" follows the system while the page is open.
DARK.addEventListener("change", () => { if (current) paint(); });

// -- me: the user's own appearance preference (light, dark, auto) over the site's default; null
// goes back to the site's.
let own = null;
export function setAppearance(value) {
  own = ["light", "dark", "auto"].includes(value) ? value : null;
  if (own) document.documentElement.dataset.appearance = own;
  else applyTheme(current);
  paint();
}
