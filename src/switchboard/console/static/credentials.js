// The Credentials view: provider keys of the caller and their rooms. Secrets are write-only: a secret
// typed here goes into one request and its field is removed from the page as soon as it is sent.

import { call, getAll } from "./api.js";
import { announce, confirmButton, field, formatTime, h, put, showError, table } from "./dom.js";

function secretInput() {
  // type=password: never shown on screen; autocomplete off: never offered back by the browser.
  return h("input", { type: "password", autocomplete: "off", spellcheck: "false", required: true });
}

function nameOf(credential) {
  return credential.label || `${credential.provider} …${credential.secret_hint || ""}`;
}

function mayChange(ctx, credential, roomRoles) {
  if (!ctx.can.write) return false;
  if (credential.scope === "user") return credential.user_id === ctx.me.user_id;
  return ["owner", "manager"].includes(roomRoles.get(credential.room_id));
}

function addForm(ctx, rooms, providers, done, cancel) {
  // Only the kinds the gateway knows (GET /providers): an unknown kind cannot be typed in.
  const provider = h(
    "select",
    { required: true },
    providers.map((kind) => h("option", { value: kind.kind, selected: kind.kind === "openai" }, kind.kind)),
  );
  const label = h("input", { maxlength: "200", autocomplete: "off" });
  const baseUrl = h("input", { type: "url", autocomplete: "off", placeholder: "https://api.openai.com/v1" });
  const secret = secretInput();
  // A kind that refuses a base URL gets none; one that needs it must have it.
  const fitBaseUrl = () => {
    const kind = providers.find((item) => item.kind === provider.value);
    baseUrl.disabled = Boolean(kind && kind.base_url === "refused");
    baseUrl.required = Boolean(kind && kind.base_url === "required");
    if (baseUrl.disabled) baseUrl.value = "";
  };
  provider.addEventListener("change", fitBaseUrl);
  fitBaseUrl();
  const owner = h(
    "select",
    {},
    h("option", { value: "" }, "Me only"),
    rooms
      .filter((room) => ["owner", "manager"].includes(room.role))
      .map((room) => h("option", { value: room.id }, `Room ${room.name}`)),
  );
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add credential" },
    h("h3", {}, "Add a credential"),
    field("Provider", provider),
    field("Label", label),
    field("Base URL", baseUrl),
    field("Secret", secret),
    field("Owner", owner),
    h(
      "p",
      { class: "hint" },
      "The secret is encrypted at rest and never shown again: only its last four characters are.",
    ),
    errors,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Save credential"),
      " ",
      h("button", { type: "button", onclick: cancel }, "Cancel"),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const payload = { provider: provider.value, secret: secret.value };
    if (label.value.trim()) payload.label = label.value.trim();
    if (baseUrl.value.trim()) payload.base_url = baseUrl.value.trim();
    if (owner.value) payload.room_id = owner.value;
    try {
      await call("POST", "/llm-credentials", payload);
      secret.value = "";
      done("Credential saved");
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

function rotateRow(credential, done, cancel) {
  const secret = secretInput();
  const errors = h("div");
  const form = h(
    "form",
    { class: "inline", "aria-label": `Rotate ${nameOf(credential)}` },
    field(`New secret for ${nameOf(credential)}`, secret),
    " ",
    h("button", { type: "submit" }, "Save secret"),
    " ",
    h("button", { type: "button", onclick: cancel }, "Cancel"),
    errors,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await call("PATCH", `/llm-credentials/${credential.id}`, { secret: secret.value });
      secret.value = "";
      done("Secret rotated");
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

export async function credentialsView(ctx, body) {
  const bar = h("div", { class: "actions" });
  const messages = h("div");
  const panel = h("div");
  const listing = h("div");

  async function refresh(said) {
    put(panel);
    if (said) announce(said);
    const [credentials, rooms] = await Promise.all([getAll("/llm-credentials"), getAll("/working-groups")]);
    const roomNames = new Map(rooms.map((room) => [room.id, room.name]));
    const roomRoles = new Map(rooms.map((room) => [room.id, room.role]));
    const addButton = ctx.can.write
      ? h(
          "button",
          {
            type: "button",
            onclick: async () => {
              try {
                const providers = await getAll("/providers");
                put(
                  panel,
                  addForm(ctx, rooms, providers, refresh, () => put(panel)),
                );
              } catch (error) {
                showError(messages, error);
              }
            },
          },
          "Add credential",
        )
      : null;
    const rows = credentials.map((credential) => {
      const actions = h("span", { class: "row-actions" });
      if (mayChange(ctx, credential, roomRoles)) {
        const rotate = h(
          "button",
          {
            type: "button",
            "aria-label": `Rotate ${nameOf(credential)}`,
            onclick: () =>
              put(
                actions,
                rotateRow(credential, refresh, () => refresh()),
              ),
          },
          "Rotate",
        );
        const remove = confirmButton(
          "Delete",
          `Delete ${nameOf(credential)}`,
          async () => {
            await call("DELETE", `/llm-credentials/${credential.id}`);
            await refresh("Credential deleted");
          },
          (error) => showError(messages, error),
        );
        actions.append(rotate, " ", remove);
      }
      return [
        credential.label || "(no label)",
        credential.provider,
        credential.scope === "room"
          ? `Room ${roomNames.get(credential.room_id) || credential.room_id}`
          : "Me",
        credential.base_url || "provider default",
        credential.secret_hint ? `…${credential.secret_hint}` : "(hidden)",
        credential.last_used_at ? formatTime(credential.last_used_at) : "Never",
        actions,
      ];
    });
    put(bar, addButton);
    put(
      listing,
      table(
        "Credentials",
        ["Label", "Provider", "Owner", "Base URL", "Secret", "Last used", "Actions"],
        rows,
        "No credentials yet.",
      ),
    );
  }

  put(body, bar, panel, messages, listing);
  await refresh();
}
