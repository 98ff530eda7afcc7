// The gateway's JSON APIs, called with the signed-in token. Same origin only (the page's CSP says so).
//
// The session (access token, refresh token, user) lives in sessionStorage so that a reload keeps the
// tab signed in; it ends with the tab. An API key the user creates is never stored here or anywhere.

const STORE = "switchboard.console.session";

export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let session = restore();
let refreshing = null;
let onSignedOut = () => {};

function restore() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(STORE) || "null");
    return saved && saved.token && saved.refresh_token ? saved : null;
  } catch {
    return null;
  }
}

function keep(next) {
  session = next;
  if (next) sessionStorage.setItem(STORE, JSON.stringify(next));
  else sessionStorage.removeItem(STORE);
}

export function hasSession() {
  return session !== null;
}

export function whenSignedOut(callback) {
  onSignedOut = callback;
}

export function signOut() {
  keep(null);
}

/** Sign-out: the gateway revokes the session's refresh token, then the tab forgets the session. */
export async function endSession() {
  const ending = session;
  keep(null);
  if (!ending) return;
  try {
    await post("/auth/logout", { refresh_token: ending.refresh_token });
  } catch {
    // Offline: the tab has forgotten the session anyway; its refresh token expires on its own.
  }
}

/** Whether the gateway offers single sign-on (GET /auth/sso), and where it starts. */
export async function ssoStatus() {
  try {
    const response = await fetch("/auth/sso", { credentials: "omit" });
    return response.ok ? await response.json() : { enabled: false };
  } catch {
    return { enabled: false };
  }
}

async function errorOf(response) {
  let message = `${response.status} ${response.statusText}`.trim();
  let code = "";
  try {
    const body = await response.json();
    // Flat `{error, code}`, the registry's `{error: {code, message}}`, or OpenAI's `{error: {message}}`.
    const error = body && body.error;
    if (typeof error === "string") {
      message = error;
      code = body.code || "";
    } else if (error && typeof error === "object") {
      message = error.message || message;
      code = error.code || "";
    }
  } catch {
    // Not JSON: the status line is all there is.
  }
  return new ApiError(response.status, message, code);
}

async function post(path, body) {
  return fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    credentials: "omit",
  });
}

/** Sign in at /auth/login or /auth/api-key; the answer's tokens become the session. */
export async function signIn(path, body) {
  const response = await post(path, body);
  if (!response.ok) throw await errorOf(response);
  const result = await response.json();
  keep({ token: result.token, refresh_token: result.refresh_token });
}

// Refresh tokens are single-use and a second use revokes the family: one refresh at a time.
function refresh() {
  if (refreshing === null) {
    const spent = session;
    refreshing = (async () => {
      if (!spent) return false;
      const response = await post("/auth/refresh", { refresh_token: spent.refresh_token });
      if (!response.ok) return false;
      const result = await response.json();
      keep({ token: result.token, refresh_token: result.refresh_token });
      return true;
    })().finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

/** One call; a 401 refreshes once and retries, a second 401 ends the session. */
export async function call(method, path, body, { raw = false } = {}) {
  for (let attempt = 0; ; attempt += 1) {
    if (!session) throw new ApiError(401, "signed out", "UNAUTHORIZED");
    const used = session.token;
    const headers = { authorization: `Bearer ${used}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit",
    });
    if (response.status === 401 && attempt === 0) {
      // Another call may have refreshed meanwhile: then just retry with the new token.
      if ((session && session.token !== used) || (await refresh())) continue;
    }
    if (response.status === 401) {
      keep(null);
      onSignedOut();
    }
    if (!response.ok) throw await errorOf(response);
    if (raw) return response;
    return response.status === 204 ? null : response.json();
  }
}

export const get = (path) => call("GET", path);

/** Every page of a `{data, next_cursor}` list, up to `cap` items. */
export async function getAll(path, cap = 5000) {
  const items = [];
  let cursor = null;
  do {
    const glue = path.includes("?") ? "&" : "?";
    const page = await get(`${path}${glue}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor && items.length < cap);
  return items;
}

/** A path with its query string; empty and null values are left out. */
export function withQuery(path, params) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(name, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
