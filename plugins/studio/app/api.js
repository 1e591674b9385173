// The studio's only way to svc: the public REST API under /api/v1, on the same origin.
// The access token lives in memory only; the refresh token is the httpOnly svc_refresh cookie
// (path /api/v1/auth), sent with "X-Svc-Refresh: 1" (docs/accounts.md). localStorage keeps no
// secret: only the last site and email, and which site the session is bound to.

const API = "/api/v1";
const KEEP = "svc.studio.";

export class ApiError extends Error {
  constructor(status, errors) {
    const first = (errors && errors[0]) || {};
    super(first.message || `HTTP ${status}`);
    this.status = status;
    this.code = first.code || "";
    this.errors = errors || [];
  }
}

/** The session ended (no refresh possible): the app shows the login page, keeping the URL. */
export class SessionEnded extends Error {}

export const session = {
  token: null,
  user: null,
  realm: "studio", // -- studio41: the token's realm ("frontend": the subscriber role)
  get site() { return localStorage.getItem(KEEP + "site") || ""; },
  set site(value) { value ? localStorage.setItem(KEEP + "site", value) : localStorage.removeItem(KEEP + "site"); },
  // The site the session's tokens are bound to ("" for the instance admin: every site).
  get bound() { return localStorage.getItem(KEEP + "bound") || ""; },
  set bound(value) { value ? localStorage.setItem(KEEP + "bound", value) : localStorage.removeItem(KEEP + "bound"); },
  get email() { return localStorage.getItem(KEEP + "email") || ""; },
  set email(value) { localStorage.setItem(KEEP + "email", value || ""); },
};

// -- studio42c: `exact` answers keep an integer too big for a JS number (a bigInteger such as
// 9007199254740993) as its digits, a string, read from the JSON's source text; lists show them.
const exactly = (key, value, context) => (typeof value === "number" && !Number.isSafeInteger(value) && context
  && /^-?\d+$/.test(context.source) ? context.source : value);

async function send(method, path, { body, params, site = session.site, token = session.token, headers = {}, exact = false } = {}) {
  let url = API + path;
  if (params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params)) {
      if (value !== undefined && value !== null && value !== "") query.append(key, String(value));
    }
    const text = query.toString();
    if (text) url += "?" + text;
  }
  const all = { Accept: "application/json", ...headers };
  if (token) all.Authorization = `Bearer ${token}`;
  if (site) all["X-Svc-Site"] = site;
  if (body !== undefined) all["Content-Type"] = "application/json";
  const resp = await fetch(url, {
    method, headers: all, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (resp.status === 204) return { status: 204, body: null };
  const parsed = exact ? await resp.text().then((text) => JSON.parse(text, exactly)).catch(() => null)
    : await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(resp.status, parsed && parsed.errors);
  // -- live (slive): the ETag of an item read or conditionally written (docs/items.md)
  return { status: resp.status, body: parsed, etag: resp.headers.get("ETag") };
}

// An access token's claims: its `site` (none for the instance admin, whose tokens serve every
// site) and `realm` (`frontend` for the subscriber role). Read to choose what to offer only; the
// server checks the token.
function claims(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)) || {};
  } catch {
    return {};
  }
}

function remember(data) {
  session.acting = null; // -- people: a session of one's own ends any impersonation (people.js)
  session.token = data.token;
  session.user = data.user;
  const said = claims(data.token);
  session.bound = said.site || "";
  session.realm = said.realm || "studio"; // -- studio41
}

// -- studio41: the session moves to another of the user's sites (POST /auth/switch-site, the
// svc_refresh cookie as proof, docs/accounts.md#switching-sites): no password again.
export async function switchSite(site) {
  const { body } = await send("POST", "/auth/switch-site", { site, token: null, headers: { "X-Svc-Refresh": "1" } });
  remember(body.data);
}
// -- end studio41

export async function login(email, password, site) {
  const { body } = await send("POST", "/auth/login", { body: { email, password }, site: site || "", token: null });
  remember(body.data);
  session.email = email;
  return body.data;
}

/** A new access token from the svc_refresh cookie; false when there is no live session. */
export async function refresh() {
  try {
    const { body } = await send("POST", "/auth/refresh", { site: "", token: null, headers: { "X-Svc-Refresh": "1" } });
    remember(body.data);
    return true;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return false;
    throw err;
  }
}

export async function logout() {
  try {
    await send("POST", "/auth/logout", { site: "", token: null, headers: { "X-Svc-Refresh": "1" } });
  } finally {
    session.token = null;
    session.user = null;
    session.bound = "";
  }
}

/** One API call as the signed-in user; an expired access token is refreshed once, then retried. */
export async function call(method, path, options = {}) {
  if (!session.token && !(await refresh())) throw new SessionEnded();
  try {
    return await send(method, path, options);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
    if (!(await refresh())) {
      session.token = null;
      throw new SessionEnded();
    }
    return send(method, path, options);
  }
}

// The answer's `data`; null for an answer without a body (204 No Content: most deletes).
export async function data(method, path, options) {
  const { body } = await call(method, path, options);
  return body ? body.data : null;
}

// -- editor: a raw body (a file upload) or a raw answer (an image's bytes), with the same token
// refresh as call(); an answer >= 400 throws ApiError.
async function sendRaw(method, path, { body, contentType, site = session.site } = {}) {
  const headers = { Accept: "application/json" };
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  if (site) headers["X-Svc-Site"] = site;
  if (contentType) headers["Content-Type"] = contentType;
  return fetch(API + path, { method, headers, body, credentials: "same-origin" });
}

export async function callRaw(method, path, options = {}) {
  if (!session.token && !(await refresh())) throw new SessionEnded();
  let resp = await sendRaw(method, path, options);
  if (resp.status === 401) {
    if (!(await refresh())) {
      session.token = null;
      throw new SessionEnded();
    }
    resp = await sendRaw(method, path, options);
  }
  if (!resp.ok) {
    const parsed = await resp.json().catch(() => null);
    throw new ApiError(resp.status, parsed && parsed.errors);
  }
  return resp;
}

// -- me: a new session's answer (POST /me/change-password) carries this session on
export function adopt(answer) {
  remember(answer);
}
