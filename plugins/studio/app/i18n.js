// Every string the studio shows, in one catalogue per language (English first).
// t("key", { name: "x" }) fills {name}; a key missing from a language falls back to English.

const CATALOGUES = {
  en: {
    "app.title": "svc studio",
    "app.loading": "Loading…",
    "login.heading": "Sign in",
    "login.email": "Email",
    "login.password": "Password",
    "login.site": "Site (leave empty if you administer the instance)",
    "login.submit": "Sign in",
    "login.failed": "Wrong email or password.",
    "login.needSite": "Name the site you want to sign in to.",
    "login.again": "Sign in again to open the site {site}.",
    "login.expired": "Your session ended. Sign in again to continue.",
    "shell.site": "Site",
    "shell.signOut": "Sign out",
    "shell.signedInAs": "Signed in as {email}",
    "nav.label": "Collections",
    "nav.heading": "Content",
    "nav.empty": "This site has no collections you can read.",
    "home.heading": "{site}",
    "home.pick": "Choose a collection.",
    "list.search": "Search",
    "list.searchButton": "Search",
    "list.create": "Create item",
    "list.caption": "Items of {collection}",
    "list.display": "Item",
    "list.empty": "No items.",
    "list.pages": "Pages",
    "list.previous": "Previous page",
    "list.next": "Next page",
    "list.pageOf": "Page {page} of {pages} ({total} items)",
    "list.open": "Open item {id}",
    "editor.new": "New item in {collection}",
    "editor.edit": "{collection}: {id}",
    "editor.save": "Save",
    "editor.back": "Back to the list",
    "editor.saved": "Saved.",
    "editor.saving": "Saving…",
    "editor.failed": "Not saved: {message}",
    "editor.invalidJson": "This is not valid JSON.",
    "editor.readOnly": "read-only",
    "editor.none": "(none)",
    "editor.shortcut": "Ctrl+S or Cmd+S saves.",
    "error.generic": "Something went wrong: {message}",
    "error.notFound": "Not found.",
  },
};

let language = "en";

export function setLanguage(tag) {
  const base = String(tag || "en").toLowerCase().split("-")[0];
  language = CATALOGUES[base] ? base : "en";
  document.documentElement.lang = language;
}

export function t(key, vars = {}) {
  const text = (CATALOGUES[language] && CATALOGUES[language][key]) || CATALOGUES.en[key] || key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
