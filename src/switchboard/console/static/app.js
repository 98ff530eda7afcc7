// The console's entry: sign-in, the signed-in frame (who, navigation) and the views behind #/<view>.
// What the page offers follows the caller's claims (GET /protected/jwt); the API enforces it anyway.

import { agentsView } from "./agents.js";
import { auditView } from "./audit.js";
import { endSession, get, hasSession, signIn, signOut, ssoStatus, whenSignedOut } from "./api.js";
import { credentialsView } from "./credentials.js";
import { alertBox, field, h, put, showError, viewFrame } from "./dom.js";
import { economiesView } from "./economies.js";
import { keysView } from "./keys.js";
import { limitsView } from "./limits.js";
import { forgetPeople } from "./people.js";
import { roomsView } from "./rooms.js";
import { usageView } from "./usage.js";

const VIEWS = {
  usage: { title: "Usage", render: usageView },
  limits: { title: "Limits", render: limitsView },
  credentials: { title: "Credentials", render: credentialsView },
  "api-keys": { title: "API keys", render: keysView },
  agents: { title: "Agents", render: agentsView },
  rooms: { title: "Rooms", render: roomsView },
  // Creating and changing economies is for Admins (SPEC §2); nobody else is offered the view.
  economies: { title: "Economies", render: economiesView, only: (can) => can.admin && can.write },
  // A delegation token may not read the trail (the API says 403); everyone else sees what is theirs.
  audit: { title: "Audit", render: auditView, only: (can) => !can.delegated },
};

function offered(name) {
  const view = VIEWS[name];
  return Boolean(view && ctx && (!view.only || view.only(ctx.can)));
}

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const whoText = document.getElementById("who-text");
let ctx = null;

function contextOf(claims) {
  const permissions = new Set(claims.permissions || []);
  const admin = claims.role === "Admin" || claims.role === "SuperAdmin";
  const delegated = claims.auth_method === "delegation";
  const write = claims.role !== "Viewer";
  return {
    me: {
      user_id: claims.user_id,
      email: claims.email,
      role: claims.role,
      auth_method: claims.auth_method,
      delegated,
    },
    can: {
      write,
      admin,
      readAllUsage: admin || permissions.has("ReadUsage"),
      createRoom: write && !delegated && (admin || permissions.has("CreateGroup")),
      issueKeys: write && !delegated && claims.auth_method !== "api_key",
      delegated,
    },
  };
}

function route() {
  const [name, ...params] = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  return offered(name) ? { name, params } : { name: "usage", params: [] };
}

async function render(focus) {
  if (!ctx) return;
  const { name, params } = route();
  const view = VIEWS[name];
  for (const link of nav.querySelectorAll("a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  document.title = `${view.title} · Switchboard`;
  const frame = viewFrame(view.title);
  put(main, frame.root);
  if (focus) frame.heading.focus();
  try {
    await view.render(ctx, frame.body, params);
  } catch (error) {
    if (!hasSession()) return; // the session ended: the sign-in form has taken over
    put(frame.body, alertBox(error));
  }
}

function signInForm(name, controls, button, submit) {
  const alerts = h("div");
  const form = h(
    "form",
    { class: "panel sign-in", "aria-label": name },
    ...controls,
    alerts,
    h("button", { type: "submit" }, button),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const submitButton = form.querySelector("button[type=submit]");
    submitButton.disabled = true;
    put(alerts);
    try {
      await submit();
      form.reset();
      await start(true);
    } catch (error) {
      showError(alerts, error);
    } finally {
      submitButton.disabled = false;
    }
  });
  return form;
}

function showSignIn(message) {
  ctx = null;
  forgetPeople();
  nav.hidden = true;
  who.hidden = true;
  document.title = "Sign in · Switchboard";
  const email = h("input", { type: "email", autocomplete: "username", required: true });
  const password = h("input", { type: "password", autocomplete: "current-password", required: true });
  const apiKey = h("input", { type: "password", autocomplete: "off", spellcheck: "false", required: true });
  const byPassword = signInForm(
    "Account sign-in",
    [field("Email", email), field("Password", password)],
    "Sign in",
    () => signIn("/auth/login", { email: email.value.trim(), password: password.value }),
  );
  const byKey = signInForm("Key sign-in", [field("API key", apiKey)], "Use API key", () =>
    signIn("/auth/api-key", { api_key: apiKey.value.trim() }),
  );
  const sso = h("div");
  put(
    main,
    h(
      "section",
      { class: "signed-out" },
      h("h2", { tabindex: "-1" }, "Sign in"),
      message ? h("p", { class: "notice" }, message) : null,
      sso,
      byPassword,
      h("p", { class: "or" }, "or with an API key"),
      byKey,
    ),
  );
  email.focus();
  // Offered only when the gateway has an identity provider (SWITCHBOARD_OIDC_ISSUER).
  ssoStatus().then((status) => {
    if (!status.enabled || ctx) return;
    put(
      sso,
      h("a", { class: "button sso", href: status.sign_in_url }, "Sign in with SSO"),
      h("p", { class: "or" }, "or with a password"),
    );
  });
}

/** Back from the identity provider: the callback left a one-time ticket in the fragment. */
async function finishSso() {
  const ticket = decodeURIComponent(location.hash.slice("#sso=".length));
  // Out of the address bar and the history before anything else: the ticket is used once, now.
  history.replaceState(null, "", "/console#/usage");
  try {
    await signIn("/auth/sso/session", { ticket });
  } catch (error) {
    showSignIn(`Single sign-on did not complete: ${error.message}`);
    return;
  }
  await start(true);
}

async function start(focus) {
  let claims;
  try {
    claims = await get("/protected/jwt");
  } catch {
    signOut();
    showSignIn("Your session has ended. Sign in again.");
    return;
  }
  forgetPeople();
  ctx = contextOf(claims);
  for (const link of nav.querySelectorAll("a")) {
    link.parentElement.hidden = !offered(link.getAttribute("href").replace(/^#\//, ""));
  }
  whoText.textContent = `Signed in as ${claims.email || claims.user_id} (${claims.role}${claims.auth_method === "api_key" ? ", with an API key" : ""})`;
  who.hidden = false;
  nav.hidden = false;
  if (!offered(location.hash.replace(/^#\/?/, "").split("/")[0])) history.replaceState(null, "", "#/usage");
  await render(focus);
}

document.getElementById("sign-out").addEventListener("click", async () => {
  forgetPeople();
  showSignIn("You are signed out.");
  await endSession();
});
window.addEventListener("hashchange", () => render(true));
whenSignedOut(() => showSignIn("Your session has ended. Sign in again."));

if (location.hash.startsWith("#sso=")) finishSso();
else if (hasSession()) start(false);
else showSignIn("");
