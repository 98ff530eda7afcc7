// Usage records turned into what the Usage view draws: summaries like the API's, tokens, CSV.

/** prompt + completion tokens of a summary row or record. */
export function tokensOf(row) {
  return Number(row.prompt_tokens || 0) + Number(row.completion_tokens || 0);
}

const GROUPS = {
  day: (record) => String(record.occurred_at).slice(0, 10),
  model: (record) => `${record.provider}/${record.model}`,
  user: (record) => record.user_id,
};

function add(into, record) {
  into.requests += 1;
  into.prompt_tokens += Number(record.prompt_tokens || 0);
  into.completion_tokens += Number(record.completion_tokens || 0);
  for (const name of CLASSES) into[name] += Number(record[name] || 0);
  into.cost += BigInt(record.cost || "0");
}

// The token classes priced apart (SPEC §20), summed as the API's summaries sum them.
export const CLASSES = ["cached_tokens", "cache_write_tokens", "reasoning_tokens"];

function empty() {
  const sums = { requests: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0n };
  for (const name of CLASSES) sums[name] = 0;
  return sums;
}

function finish(sums) {
  return { ...sums, cost: sums.cost.toString() };
}

/** The shape of GET /economies/{id}/usage/summary, for each group, from records (exact costs). */
export function summarise(records) {
  const result = {};
  for (const [group, keyOf] of Object.entries(GROUPS)) {
    const rows = new Map();
    const totals = empty();
    for (const record of records) {
      const key = keyOf(record);
      if (!rows.has(key)) rows.set(key, empty());
      add(rows.get(key), record);
      add(totals, record);
    }
    result[group] = {
      group_by: group,
      rows: [...rows].map(([key, sums]) => ({ [group]: key, ...finish(sums) })),
      totals: finish(totals),
    };
  }
  return result;
}

function cell(value) {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** RFC 4180 CSV: a header row of the records' fields, then one row per record. */
export function csvOf(records) {
  if (records.length === 0) return "";
  const columns = Object.keys(records[0]);
  const lines = [columns.join(",")];
  for (const record of records) lines.push(columns.map((name) => cell(record[name])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}
