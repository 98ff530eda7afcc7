// The Limits view: every limit on the caller and their economies (GET /usage/me/limits) and those they
// manage (GET /limits), each with amount, used, reserved, remaining and the reset time.

import { get, getAll } from "./api.js";
import { formatCount, formatNano, formatTime, h, put, shortId, table } from "./dom.js";

function subjectOf(ctx, limit, names) {
  const id = limit.subject_id;
  let subject;
  if (limit.subject_type === "user") subject = id === ctx.me.user_id ? "you" : `user ${shortId(id)}`;
  else if (limit.subject_type === "economy")
    subject = `economy ${names.economies.get(id)?.slug || shortId(id)}`;
  else if (limit.subject_type === "room") subject = `room ${names.rooms.get(id) || shortId(id)}`;
  else if (limit.subject_type === "api_key") subject = `API key ${shortId(id)}`;
  else subject = `agent ${id}`;
  const economy = limit.economy_id ? names.economies.get(limit.economy_id) : null;
  if (limit.economy_id) subject += ` in ${economy ? economy.slug : shortId(limit.economy_id)}`;
  return subject;
}

function amountText(limit, value, names) {
  if (limit.metric !== "cost") return `${formatCount(value)} ${limit.metric}`;
  const economyId = limit.subject_type === "economy" ? limit.subject_id : limit.economy_id;
  const economy = economyId ? names.economies.get(economyId) : null;
  return formatNano(value, economy ? economy.currency : "");
}

function resetText(limit, status) {
  if (limit.window === "total") return "never (total)";
  return formatTime(status.resets_at) || "now";
}

export async function limitsView(ctx, body) {
  const [mine, managed, economies, rooms] = await Promise.all([
    getAll("/usage/me/limits"),
    getAll("/limits"),
    getAll("/economies"),
    getAll("/working-groups"),
  ]);
  const names = {
    economies: new Map(economies.map((economy) => [economy.id, economy])),
    rooms: new Map(rooms.map((room) => [room.id, room.name])),
  };
  const all = new Map(mine.map((limit) => [limit.id, limit]));
  const extra = managed.filter((limit) => !all.has(limit.id)).slice(0, 200);
  const statuses = await Promise.all(extra.map((limit) => get(`/limits/${limit.id}/status`)));
  extra.forEach((limit, index) => all.set(limit.id, { ...limit, status: statuses[index] }));
  const rows = [...all.values()].map((limit) => [
    subjectOf(ctx, limit, names),
    `${limit.metric} per ${limit.window}`,
    amountText(limit, limit.amount, names),
    amountText(limit, limit.status.used, names),
    amountText(limit, limit.status.reserved, names),
    amountText(limit, limit.status.remaining, names),
    resetText(limit, limit.status),
    limit.managed_by,
  ]);
  put(
    body,
    h(
      "p",
      { class: "hint" },
      "Limits on you and on the economies you take part in, and the limits you manage. Amounts of cost are in the economy's currency.",
    ),
    table(
      "Limits",
      ["Subject", "Metric", "Amount", "Used", "Reserved", "Remaining", "Resets at", "Managed by"],
      rows,
      "No limit applies to you.",
    ),
  );
}
