// The Audit view: who changed what, newest first, filtered by action, target and time, a page at a time.
// Read only: the API offers no edit or delete of an event, and neither does this page.

import { get, withQuery } from "./api.js";
import { field, formatTime, h, put, showError, table } from "./dom.js";

function actorOf(actor) {
  const who = actor.user_id ? actor.user_id : actor.auth_method;
  return actor.role ? `${who} (${actor.role}, ${actor.auth_method})` : who;
}

function changesOf(changes) {
  const names = Object.keys(changes);
  if (names.length === 0) return "";
  return h(
    "ul",
    { class: "changes" },
    names.map((name) => {
      const [before, after] = changes[name];
      const show = (value) => (value === null ? "—" : typeof value === "string" ? value : JSON.stringify(value));
      return h("li", {}, `${name}: ${show(before)} → ${show(after)}`);
    }),
  );
}

function rowOf(event) {
  return [
    formatTime(event.at),
    actorOf(event.actor),
    event.action,
    event.target.id ? `${event.target.type} ${event.target.id}` : event.target.type,
    changesOf(event.changes),
    event.request_id || "",
  ];
}

export async function auditView(ctx, body) {
  const action = h("input", { type: "text", spellcheck: "false", placeholder: "e.g. credential.rotate" });
  const targetType = h("input", { type: "text", spellcheck: "false", placeholder: "e.g. credential" });
  const from = h("input", { type: "date" });
  const to = h("input", { type: "date" });
  const messages = h("div");
  const holder = h("div");
  const more = h("button", { type: "button", hidden: true }, "Load more");
  let events = [];
  let cursor = null;
  let filters = {};

  function draw() {
    put(
      holder,
      table(
        "Audit events",
        ["When", "Actor", "Action", "Target", "Changes", "Request"],
        events.map(rowOf),
        "No audit events you can see.",
      ),
    );
    more.hidden = !cursor;
  }

  async function load(reset) {
    put(messages);
    try {
      const page = await get(withQuery("/audit", { ...filters, limit: 50, cursor: reset ? null : cursor }));
      events = reset ? page.data : events.concat(page.data);
      cursor = page.next_cursor;
      draw();
    } catch (error) {
      showError(messages, error);
    }
  }

  const form = h(
    "form",
    { class: "panel filters", "aria-label": "Audit filters" },
    field("Action", action),
    field("Target type", targetType),
    field("From", from),
    field("To", to),
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    filters = {
      action: action.value.trim(),
      target_type: targetType.value.trim(),
      from: from.value,
      to: to.value,
    };
    await load(true);
  });
  more.addEventListener("click", () => load(false));
  put(
    body,
    h(
      "p",
      { class: "hint" },
      ctx.can.admin
        ? "Every change to the gateway, newest first."
        : "Changes to the economies you own and the rooms you own or manage, newest first.",
    ),
    form,
    messages,
    holder,
    more,
  );
  await load(true);
}
