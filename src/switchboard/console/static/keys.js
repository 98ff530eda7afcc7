// The API keys view: the caller's active keys, a form to create one and revoke buttons. A new key is
// shown once, in this view only: it lives in no variable beyond it and in no browser storage, so
// navigating away or reloading loses it for good, as the API does.

import { call, getAll } from "./api.js";
import { announce, confirmButton, field, formatTime, h, put, showError, table } from "./dom.js";

function shownOnce(issued, close) {
  const key = h("code", { class: "secret-once" }, issued.api_key);
  const copied = h("span", { role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      onclick: () =>
        navigator.clipboard.writeText(key.textContent).then(
          () => (copied.textContent = "Copied."),
          () => (copied.textContent = "Copying is not allowed here: select the key and copy it."),
        ),
    },
    "Copy",
  );
  return h(
    "section",
    { class: "panel new-key", "aria-label": "New API key" },
    h("h3", {}, `New API key: ${issued.service_name}`),
    h(
      "p",
      {},
      "Copy it now. It is shown this once and is not kept anywhere: after you leave this page it cannot be shown again.",
    ),
    h("p", {}, key),
    h(
      "div",
      { class: "actions" },
      copy,
      " ",
      h("button", { type: "button", onclick: close }, "Done"),
      " ",
      copied,
    ),
  );
}

function createForm(onIssued) {
  const name = h("input", { required: true, maxlength: "100", autocomplete: "off" });
  const description = h("input", { maxlength: "500", autocomplete: "off" });
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": "Create API key" },
    field("Name", name),
    field("Description", description),
    errors,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    put(errors);
    try {
      const issued = await call("POST", "/auth/api-key/generate", {
        service_name: name.value.trim(),
        description: description.value.trim(),
      });
      form.reset();
      await onIssued(issued);
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

export async function keysView(ctx, body) {
  const fresh = h("div");
  const messages = h("div");
  const listing = h("div");

  async function refresh() {
    const keys = await getAll("/auth/api-keys");
    const rows = keys.map((key) => [
      key.service_name,
      key.description || "",
      `${key.key_prefix}…`,
      formatTime(key.created_at),
      ctx.can.write && !ctx.me.delegated
        ? confirmButton(
            "Revoke",
            `Revoke ${key.service_name}`,
            async () => {
              await call("POST", `/auth/api-keys/${key.id}/revoke`);
              announce(`Key ${key.service_name} revoked`);
              await refresh();
            },
            (error) => showError(messages, error),
          )
        : "",
    ]);
    put(
      listing,
      table("API keys", ["Name", "Description", "Key", "Created", "Actions"], rows, "No active API keys."),
    );
  }

  let intro;
  if (ctx.can.issueKeys) {
    intro = createForm(async (issued) => {
      put(
        fresh,
        shownOnce(issued, () => put(fresh)),
      );
      announce("API key created: copy it now");
      await refresh();
    });
  } else if (ctx.can.write && ctx.me.auth_method === "api_key") {
    intro = h(
      "p",
      { class: "hint" },
      "You signed in with an API key: an API key cannot create keys. Sign in with your email and password to create one.",
    );
  } else {
    intro = h("p", { class: "hint" }, "Your role may not create API keys.");
  }
  put(
    body,
    h(
      "p",
      { class: "hint" },
      "An API key acts as your account everywhere a token does, including as an OpenAI client's api_key.",
    ),
    intro,
    fresh,
    messages,
    listing,
  );
  await refresh();
}
