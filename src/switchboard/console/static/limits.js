// The Limits view: every limit on the caller and their economies (GET /usage/me/limits) and those they
// manage (GET /limits), each with amount, used, reserved, remaining and the reset time. Those who may
// manage limits (Admins; an economy's owners inside it; a room's owners and managers) create them and
// change or delete the ones the API manages (config and budget limits are changed where they are set).

import { call, get, getAll } from "./api.js";
import {
  announce,
  confirmButton,
  field,
  formatCount,
  formatNano,
  formatTime,
  formPanel,
  h,
  nanoInput,
  put,
  shortId,
  showError,
  table,
  toNano,
} from "./dom.js";
import { learnPeople, personName } from "./people.js";

/** Authority levels, lowest first, as the API ranks them (limits/authority.py). */
const LEVELS = ["owner", "admin", "superadmin", "operator"];

const METRICS = ["cost", "requests", "tokens"];
const WINDOWS = ["minute", "hour", "day", "month", "total"];

function subjectOf(ctx, limit, names) {
  const id = limit.subject_id;
  let subject;
  if (limit.subject_type === "user") subject = id === ctx.me.user_id ? "you" : `user ${personName(ctx, id)}`;
  else if (limit.subject_type === "economy")
    subject = `economy ${names.economies.get(id)?.slug || shortId(id)}`;
  else if (limit.subject_type === "room") subject = `room ${names.rooms.get(id)?.name || shortId(id)}`;
  else if (limit.subject_type === "api_key") subject = `API key ${shortId(id)}`;
  else subject = `agent ${id}`;
  const economy = limit.economy_id ? names.economies.get(limit.economy_id) : null;
  if (limit.economy_id) subject += ` in ${economy ? economy.slug : shortId(limit.economy_id)}`;
  return subject;
}

function currencyOf(limit, names) {
  const economyId = limit.subject_type === "economy" ? limit.subject_id : limit.economy_id;
  const economy = economyId ? names.economies.get(economyId) : null;
  return economy ? economy.currency : "";
}

function amountText(limit, value, names) {
  if (limit.metric !== "cost") return `${formatCount(value)} ${limit.metric}`;
  return formatNano(value, currencyOf(limit, names));
}

/** What the Amount field holds, as the API's integer string: cost in currency units, else a count. */
function amountOf(metric, text) {
  if (metric === "cost") {
    const nano = toNano(text);
    if (nano === null) throw new Error("Amount: a number of currency units, like 250 or 12.5");
    return nano;
  }
  if (!/^\d+$/.test(text.trim())) throw new Error(`Amount: a whole number of ${metric}`);
  return text.trim();
}

function resetText(limit, status) {
  if (limit.window === "total") return "never (total)";
  return formatTime(status.resets_at) || "now";
}

function options(values, labelOf = (value) => value) {
  return values.map((value) => h("option", { value }, labelOf(value)));
}

/** Which subjects the caller may limit: Admins any; owners their economies; managers their rooms. */
function subjectChoices(ctx, owned, managedRooms) {
  if (ctx.can.admin) return ["economy", "user", "room", "agent", "api_key"];
  const types = [];
  if (owned.length) types.push("economy", "user", "agent", "api_key");
  if (managedRooms.length) types.push("room");
  return types;
}

function newLimitForm(ctx, names, owned, managedRooms, done, cancel) {
  const type = h("select", {}, options(subjectChoices(ctx, owned, managedRooms)));
  const subjectHolder = h("div");
  const economy = h("select", {});
  const metric = h("select", {}, options(METRICS));
  const window = h("select", {}, options(WINDOWS, (name) => (name === "total" ? "total (never resets)" : name)));
  const amount = h("input", { required: true, inputmode: "decimal", autocomplete: "off" });
  let subject = null;
  const economies = ctx.can.admin ? [...names.economies.values()] : owned;
  const drawSubject = () => {
    if (type.value === "economy") {
      subject = h("select", {}, economies.map((item) => h("option", { value: item.id }, `${item.name} (${item.slug})`)));
    } else if (type.value === "room" && !ctx.can.admin) {
      // An Admin may limit any room, also those they are not in: they give its id.
      subject = h("select", {}, managedRooms.map((room) => h("option", { value: room.id }, room.name)));
    } else {
      const hint = {
        user: "the user's id (a UUID)",
        room: "the room's id (a UUID)",
        agent: "the agent's id",
        api_key: "the API key's id",
      };
      subject = h("input", { required: true, autocomplete: "off", placeholder: hint[type.value] });
    }
    // A non-economy limit may be narrowed to one economy; an owner's must be, to one they own.
    const narrowable = type.value !== "economy";
    put(
      economy,
      ctx.can.admin || type.value === "room" ? h("option", { value: "" }, "any economy") : null,
      narrowable ? economies.map((item) => h("option", { value: item.id }, `${item.name} (${item.slug})`)) : null,
    );
    economy.disabled = !narrowable;
    put(subjectHolder, field("Subject", subject));
  };
  type.addEventListener("change", drawSubject);
  drawSubject();
  const submit = () => {
    const payload = {
      subject_type: type.value,
      subject_id: subject.value.trim(),
      metric: metric.value,
      window: window.value,
      amount: amountOf(metric.value, amount.value),
    };
    if (!economy.disabled && economy.value) payload.economy_id = economy.value;
    return call("POST", "/limits", payload);
  };
  const fields = [
    field("Subject type", type),
    subjectHolder,
    field("Narrowed to", economy),
    field("Metric", metric),
    field("Window", window),
    field("Amount", amount),
    h("p", { class: "hint" }, "A cost amount is in the economy's currency units; requests and tokens are counts."),
  ];
  return formPanel("New limit", fields, "Save limit", submit, done, cancel);
}

function editLimitForm(limit, title, names, done, cancel) {
  const value = limit.metric === "cost" ? nanoInput(limit.amount) : String(limit.amount);
  const amount = h("input", { required: true, inputmode: "decimal", autocomplete: "off", value });
  const unit = limit.metric === "cost" ? currencyOf(limit, names) || "currency units" : limit.metric;
  const submit = () => call("PATCH", `/limits/${limit.id}`, { amount: amountOf(limit.metric, amount.value) });
  return formPanel(`Edit ${title}`, [field(`Amount (${unit})`, amount)], "Save limit", submit, done, cancel);
}

export async function limitsView(ctx, body) {
  const bar = h("div", { class: "actions" });
  const panel = h("div");
  const messages = h("div");
  const listing = h("div");

  async function refresh(said) {
    put(panel);
    if (said) announce(said);
    const [mine, managed, economies, rooms, owned] = await Promise.all([
      getAll("/usage/me/limits"),
      getAll("/limits"),
      getAll("/economies"),
      getAll("/working-groups"),
      ctx.can.write && !ctx.can.admin ? getAll("/economies?usage=readable") : [],
    ]);
    const names = {
      economies: new Map(economies.map((economy) => [economy.id, economy])),
      rooms: new Map(rooms.map((room) => [room.id, room])),
    };
    const all = new Map(mine.map((limit) => [limit.id, limit]));
    // Only the authority that set a limit, or a higher one, may change it (the API answers 403 otherwise).
    const level = LEVELS.indexOf(ctx.me.role === "SuperAdmin" ? "superadmin" : ctx.me.role === "Admin" ? "admin" : "owner");
    const mayChange = new Set(
      managed
        .filter((limit) => limit.managed_by === "api" && LEVELS.indexOf(limit.authority ?? "owner") <= level)
        .map((limit) => limit.id),
    );
    const extra = managed.filter((limit) => !all.has(limit.id)).slice(0, 200);
    const statuses = await Promise.all(extra.map((limit) => get(`/limits/${limit.id}/status`)));
    extra.forEach((limit, index) => all.set(limit.id, { ...limit, status: statuses[index] }));
    await learnPeople([...all.values()].filter((limit) => limit.subject_type === "user").map((limit) => limit.subject_id));

    const rows = [...all.values()].map((limit) => {
      const subject = subjectOf(ctx, limit, names);
      const title = `${subject} ${limit.metric} per ${limit.window}`;
      const actions = h("span", { class: "row-actions" });
      if (ctx.can.write && mayChange.has(limit.id)) {
        const edit = () =>
          put(panel, editLimitForm(limit, title, names, () => refresh("Limit saved"), () => put(panel)));
        actions.append(
          h("button", { type: "button", "aria-label": `Edit ${title}`, onclick: edit }, "Edit"),
          " ",
          confirmButton(
            "Delete",
            `Delete ${title}`,
            async () => {
              await call("DELETE", `/limits/${limit.id}`);
              await refresh("Limit deleted");
            },
            (error) => showError(messages, error),
          ),
        );
      }
      return [
        subject,
        `${limit.metric} per ${limit.window}`,
        amountText(limit, limit.amount, names),
        amountText(limit, limit.status.used, names),
        amountText(limit, limit.status.reserved, names),
        amountText(limit, limit.status.remaining, names),
        resetText(limit, limit.status),
        limit.managed_by,
        actions,
      ];
    });
    const managedRooms = rooms.filter((room) => ["owner", "manager"].includes(room.role));
    const ownedEconomies = owned.filter((economy) => names.economies.has(economy.id));
    const mayCreate = ctx.can.write && !ctx.me.delegated && subjectChoices(ctx, ownedEconomies, managedRooms).length > 0;
    put(
      bar,
      mayCreate
        ? h(
            "button",
            {
              type: "button",
              onclick: () =>
                put(
                  panel,
                  newLimitForm(ctx, names, ownedEconomies, managedRooms, () => refresh("Limit created"), () => put(panel)),
                ),
            },
            "New limit",
          )
        : null,
    );
    put(
      listing,
      table(
        "Limits",
        ["Subject", "Metric", "Amount", "Used", "Reserved", "Remaining", "Resets at", "Managed by", "Actions"],
        rows,
        "No limit applies to you.",
      ),
    );
  }

  put(
    body,
    h(
      "p",
      { class: "hint" },
      "Limits on you and on the economies you take part in, and the limits you manage. Amounts of cost are in the economy's currency.",
    ),
    bar,
    panel,
    messages,
    listing,
  );
  await refresh();
}
