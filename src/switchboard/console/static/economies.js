// The Economies view (Admin only, SPEC §8): every economy with its currency, markup and monthly
// budget; Admins create one and change those of the economies the API manages (those the config file
// declares are changed in the file). The API has no delete for an economy: its usage is billing history.

import { call, getAll } from "./api.js";
import { announce, field, formatNano, formPanel, h, nanoInput, put, table, toNano } from "./dom.js";

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
  const slug = h("input", { required: true, maxlength: "64", autocomplete: "off", pattern: "[a-z0-9][a-z0-9_\\-]*" });
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

export async function economiesView(ctx, body) {
  const bar = h("div", { class: "actions" });
  const panel = h("div");
  const listing = h("div");

  async function refresh(said) {
    put(panel);
    if (said) announce(said);
    const economies = await getAll("/economies");
    const open = (economy) => () =>
      put(
        panel,
        economyForm(economy, () => refresh(economy ? "Economy saved" : "Economy created"), () => put(panel)),
      );
    const rows = economies.map((economy) => [
      economy.name,
      economy.slug,
      economy.currency,
      String(economy.markup_bps),
      economy.budget ? formatNano(economy.budget, economy.currency) : "none",
      economy.managed_by,
      economy.managed_by === "api"
        ? h("button", { type: "button", "aria-label": `Edit ${economy.slug}`, onclick: open(economy) }, "Edit")
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
    listing,
  );
  await refresh();
}
