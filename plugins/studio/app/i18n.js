// Every string the studio shows, in one catalogue per language (English first).
// t("key", { name: "x" }) fills {name}; a key missing from a language falls back to English.

import { de } from "./i18n_de.js"; // live (slive)
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
    // -- live (slive): live updates, conflicts, notifications
    "live.on": "Live updates on",
    "live.off": "Live updates off",
    "live.changed": "Someone else changed this item since you opened it.",
    "live.deleted": "Someone else deleted this item.",
    "live.conflict": "Not saved: someone else changed this item since you opened it. Load their version (your changes here are lost), or save yours over theirs.",
    "live.loadTheirs": "Load their version",
    "live.saveMine": "Save mine over theirs",
    "live.restored": "Your session had ended: your unsaved changes were kept and are back in the form. Save to keep them.",
    "bell.none": "Notifications",
    "bell.unread": "Notifications ({count} unread)",
    "bell.panel": "Notifications",
    "bell.heading": "Unread notifications",
    "bell.empty": "Nothing unread.",
    "bell.markRead": "Mark as read",
    "bell.markReadOf": "Mark as read: {title}",
    "bell.marked": "Marked as read: {title}",
    "bell.new": "New notification: {title}",
    // -- end live
  },
  de, // live (slive): German (i18n_de.js)
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
