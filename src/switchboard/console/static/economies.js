// The Economies view (Admin only, SPEC §8): every economy with its currency, markup and monthly
// budget; Admins create one and change those of the economies the API manages (those the config file
// declares are changed in the file), and open one to add and remove its participants (people by
// email). The API has no delete for an economy: its usage records are billing history.

import { call, get, getAll } from "./api.js";
import {
  announce,
  confirmButton,
  field,
  formatNano,
  formatTime,
  formPanel,
  h,
  nanoInput,
  put,
  showError,
  table,
  toNano,
} from "./dom.js";
import { learnPeople, personName } from "./people.js";

function budgetOf(text) {
  if (!text.trim()) return null;
  const nano = toNano(text);
  if (nano === null) throw new Error("Monthly budget: a number of currency units, like 250 or 12.5");
  return nano;
}

function markupOf(text) {
  const value = Number(text.trim() || "0");
  if (!Number.isInteger(value) || value < 0) throw new Error("Markup: a whole number of basis points");
  return value;
}

function economyForm(economy, done, cancel) {
  const slug = h("input", { required: true, maxlength: "64", autocomplete: "off" });
  const name = h("input", { required: true, maxlength: "200", autocomplete: "off", value: economy ? economy.name : "" });
  const currency = h("input", { required: true, maxlength: "16", autocomplete: "off", value: economy ? economy.currency : "USD" });
  const markup = h("input", { inputmode: "numeric", autocomplete: "off", value: String(economy ? economy.markup_bps : 0) });
  const budget = h("input", {
    inputmode: "decimal",
    autocomplete: "off",
    placeholder: "none",
    value: economy && economy.budget ? nanoInput(economy.budget) : "",
  });
  const fields = [
    economy ? null : field("Slug", slug),
    field("Economy name", name),
    field("Currency", currency),
    field("Markup (basis points)", markup),
    field("Monthly budget", budget),
  ];
  const submit = async () => {
    const payload = {
      name: name.value.trim(),
      currency: currency.value.trim(),
      markup_bps: markupOf(markup.value),
      budget: budgetOf(budget.value),
    };
    if (economy) return call("PATCH", `/economies/${economy.id}`, payload);
    if (payload.budget === null) delete payload.budget;
    return call("POST", "/economies", { slug: slug.value.trim(), ...payload });
  };
  const title = economy ? `Edit ${economy.slug}` : "New economy";
  return formPanel(title, fields, "Save economy", submit, done, cancel);
}

function addParticipantForm(economy, done) {
  const user = h("input", {
    required: true,
    autocomplete: "off",
    pattern: "[0-9a-fA-F\\-]{36}",
    placeholder: "the user's id (a UUID)",
  });
  const role = h("select", {}, h("option", { value: "member" }, "member"), h("option", { value: "owner" }, "owner"));
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": "Add participant" },
    field("User ID", user),
    field("Participant role", role),
    errors,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add participant")),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await call("POST", `/economies/${economy.id}/participants`, { user_id: user.value.trim(), role: role.value });
      form.reset();
      await done("Participant added");
    } catch (error) {
      showError(errors, error);
    }
  });
  return form;
}

async function economyDetail(ctx, id, body) {
  const economy = await get(`/economies/${encodeURIComponent(id)}`);
  const messages = h("div");
  const holder = h("div");
  async function refresh(said) {
    if (said) announce(said);
    const [participants, rooms] = await Promise.all([
      getAll(`/economies/${economy.id}/participants`),
      getAll("/working-groups"),
    ]);
    const roomNames = new Map(rooms.map((room) => [room.id, room.name]));
    await learnPeople(participants.filter((item) => item.kind === "user").map((item) => item.user_id));
    const rows = participants.map((item) => {
      const name =
        item.kind === "user"
          ? personName(ctx, item.user_id, { full: true })
          : `room ${roomNames.get(item.room_id) || item.room_id}`;
      const target = item.kind === "user" ? item.user_id : item.room_id;
      return [
        name,
        item.kind,
        item.role,
        formatTime(item.created_at),
        confirmButton(
          "Remove",
          `Remove ${item.kind === "user" ? personName(ctx, item.user_id) : name}`,
          async () => {
            await call("DELETE", `/economies/${economy.id}/participants/${target}`);
            await refresh("Participant removed");
          },
          (error) => showError(messages, error),
        ),
      ];
    });
    put(
      holder,
      table(
        `Participants of ${economy.name}`,
        ["Participant", "Kind", "Role", "Added", "Actions"],
        rows,
        "No participants yet.",
      ),
    );
  }
  put(
    body,
    h("p", {}, h("a", { href: "#/economies" }, "All economies")),
    h("h3", {}, `${economy.name} (${economy.slug})`),
    addParticipantForm(economy, refresh),
    messages,
    holder,
  );
  await refresh();
}

export async function economiesView(ctx, body, params) {
  if (params.length) {
    await economyDetail(ctx, decodeURIComponent(params[0]), body);
    return;
  }
  const bar = h("div", { class: "actions" });
  const panel = h("div");
  const messages = h("div");
  const listing = h("div");

  async function refresh(said) {
    put(panel);
    put(messages);
    if (said) announce(said);
    const economies = await getAll("/economies");
    const open = (economy) => () =>
      put(
        panel,
        economyForm(economy, () => refresh(economy ? "Economy saved" : "Economy created"), () => put(panel)),
      );
    const rows = economies.map((economy) => [
      h("a", { href: `#/economies/${economy.id}` }, economy.name),
      economy.slug,
      economy.currency,
      String(economy.markup_bps),
      economy.budget ? formatNano(economy.budget, economy.currency) : "none",
      economy.managed_by,
      economy.managed_by === "api"
        ? h(
            "span",
            {},
            h("button", { type: "button", "aria-label": `Edit ${economy.slug}`, onclick: open(economy) }, "Edit"),
            " ",
            // The API keeps an economy that has usage or that a room, agent or limit names (409, shown).
            confirmButton(
              "Delete",
              `Delete ${economy.slug}`,
              async () => {
                await call("DELETE", `/economies/${economy.id}`);
                await refresh("Economy deleted");
              },
              (error) => showError(messages, error),
            ),
          )
        : "",
    ]);
    put(bar, h("button", { type: "button", onclick: open(null) }, "New economy"));
    put(
      listing,
      table(
        "Economies",
        ["Economy", "Slug", "Currency", "Markup (bps)", "Monthly budget", "Managed by", "Actions"],
        rows,
        "No economies.",
      ),
    );
  }

  put(
    body,
    h("p", { class: "hint" }, "Economies declared in the config file are changed there; a budget is a monthly cost limit."),
    bar,
    panel,
    messages,
    listing,
  );
  await refresh();
}
