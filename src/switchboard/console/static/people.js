// People by email: the console names a user by the email GET /users gives for their id. The gateway
// answers only for people the caller may know (themselves, fellow room members, participants of an
// economy they own; Admins anyone); anyone else stays an id prefix.

import { get } from "./api.js";
import { shortId } from "./dom.js";

const BATCH = 100; // GET /users takes at most 100 ids
let known = new Map(); // user id -> email, or null when the gateway did not say

/** Forget every email (on sign-in and sign-out: the next caller may know fewer people). */
export function forgetPeople() {
  known = new Map();
}

/** Ask for the emails of the ids not asked about yet; a failed lookup leaves them as ids. */
export async function learnPeople(ids) {
  const unknown = [...new Set(ids.filter((id) => id && !known.has(String(id))).map(String))];
  for (let start = 0; start < unknown.length; start += BATCH) {
    const batch = unknown.slice(start, start + BATCH);
    const query = batch.map((id) => `id=${encodeURIComponent(id)}`).join("&");
    let found = [];
    try {
      found = (await get(`/users?${query}`)).data;
    } catch {
      found = [];
    }
    for (const id of batch) known.set(id, null);
    for (const person of found) known.set(String(person.id), person.email);
  }
}

/**
 * "ada@example.com", "you (ada@example.com)", or the id (its prefix unless `full`) when the email is
 * not known.
 */
export function personName(ctx, id, { full = false } = {}) {
  const key = String(id);
  const email = key === ctx.me.user_id ? ctx.me.email || known.get(key) : known.get(key);
  const name = email || (full ? key : shortId(key));
  return key === ctx.me.user_id ? `you (${name})` : name;
}
