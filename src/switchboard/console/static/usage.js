// The Usage view: an economy's usage as charts (per day, model, user), totals, a filterable table of
// records and an export of every record. Without the right to read an economy's usage, "My usage"
// shows the caller's own records (GET /usage/me), aggregated here, and the selector offers only the
// economies whose usage the caller may read (GET /economies?usage=readable). People are named by email.

import { call, get, getAll, withQuery } from "./api.js";
import { barChart, columnChart } from "./chart.js";
import {
  download,
  field,
  formatCount,
  formatNano,
  formatTime,
  h,
  put,
  showError,
  table,
} from "./dom.js";
import { learnPeople, personName } from "./people.js";
import { csvOf, summarise, tokensOf } from "./usage_data.js";

const MINE = "mine";
const PAGE = 500;

const userLabel = personName;

function chartsOf(ctx, summaries, measure, currency) {
  const pick =
    measure === "cost"
      ? (row) => ({ value: Number(row.cost), text: formatNano(row.cost, currency) })
      : (row) => ({ value: tokensOf(row), text: `${formatCount(tokensOf(row))} tokens` });
  const name = measure === "cost" ? "Cost" : "Tokens";
  const days = summaries.day.rows
    .map((row) => ({ label: row.day, ...pick(row) }))
    .sort((a, b) => a.label.localeCompare(b.label));
  return h(
    "div",
    { class: "charts" },
    columnChart(`${name} per day`, days),
    barChart(
      `${name} per model`,
      summaries.model.rows.map((row) => ({ label: String(row.model), ...pick(row) })),
    ),
    barChart(
      `${name} per user`,
      summaries.user.rows.map((row) => ({ label: userLabel(ctx, String(row.user)), ...pick(row) })),
    ),
  );
}

function totalsOf(totals, currency) {
  return h(
    "dl",
    { class: "totals", "aria-label": "Totals" },
    h("div", {}, h("dt", {}, "Total cost"), h("dd", {}, formatNano(totals.cost, currency))),
    h("div", {}, h("dt", {}, "Requests"), h("dd", {}, formatCount(totals.requests))),
    h("div", {}, h("dt", {}, "Prompt tokens"), h("dd", {}, formatCount(totals.prompt_tokens))),
    h("div", {}, h("dt", {}, "Completion tokens"), h("dd", {}, formatCount(totals.completion_tokens))),
    h("div", {}, h("dt", {}, "Cache reads"), h("dd", {}, formatCount(totals.cached_tokens || 0))),
    h("div", {}, h("dt", {}, "Cache writes"), h("dd", {}, formatCount(totals.cache_write_tokens || 0))),
    h("div", {}, h("dt", {}, "Reasoning tokens"), h("dd", {}, formatCount(totals.reasoning_tokens || 0))),
  );
}

function recordsTable(ctx, records, filterText, currencyOf) {
  const wanted = filterText.trim().toLowerCase();
  const shown = records.filter((record) => {
    if (!wanted) return true;
    const who = `${record.user_id} ${userLabel(ctx, record.user_id)}`;
    const haystack = `${record.provider}/${record.model} ${record.status} ${who} ${record.agent_id || ""} ${record.endpoint}`;
    return haystack.toLowerCase().includes(wanted);
  });
  return table(
    `Usage records (${shown.length} of ${records.length} loaded)`,
    ["Time", "Model", "User", "Status", "Prompt tokens", "Cache reads", "Cache writes", "Completion tokens", "Cost"],
    shown.map((record) => [
      formatTime(record.occurred_at),
      `${record.provider}/${record.model}`,
      userLabel(ctx, record.user_id),
      record.status,
      formatCount(record.prompt_tokens),
      formatCount(record.cached_tokens || 0),
      formatCount(record.cache_write_tokens || 0),
      formatCount(record.completion_tokens),
      record.priced ? formatNano(record.cost, currencyOf(record)) : "unpriced",
    ]),
    wanted ? "No loaded record matches the filter." : "No usage in this range.",
  );
}

export async function usageView(ctx, body) {
  // Every visible economy names a record's currency; the selector offers only the readable ones.
  const [visible, economies] = await Promise.all([
    getAll("/economies"),
    ctx.can.readAllUsage ? null : getAll("/economies?usage=readable"),
  ]).then(([all, readable]) => [all, readable || all]);
  const byId = new Map(visible.map((economy) => [economy.id, economy]));
  const currencyOf = (record) => (byId.get(record.economy_id) || { currency: "" }).currency;
  const economy = h(
    "select",
    {},
    ctx.can.readAllUsage ? null : h("option", { value: MINE }, "My usage (all economies)"),
    economies.map((item) => h("option", { value: item.id }, `${item.name} (${item.slug})`)),
  );
  const measure = h(
    "select",
    {},
    h("option", { value: "cost" }, "Cost"),
    h("option", { value: "tokens" }, "Tokens"),
  );
  const from = h("input", { type: "date" });
  const to = h("input", { type: "date" });
  const filter = h("input", { type: "search", placeholder: "model, status, user…" });
  const format = h(
    "select",
    {},
    h("option", { value: "csv" }, "CSV"),
    h("option", { value: "ndjson" }, "NDJSON"),
  );
  const exportButton = h("button", { type: "button" }, "Export");
  const results = h("div", { class: "usage-results", "aria-live": "polite" });
  const exportStatus = h("div", { class: "export-status" });
  let loaded = { records: [], next: null, summaries: null, currency: "" };
  let generation = 0;

  const drawTable = () => {
    const holder = results.querySelector(".records");
    if (!holder) return;
    const more = loaded.next ? h("button", { type: "button", onclick: loadMore }, "Load more records") : null;
    put(holder, recordsTable(ctx, loaded.records, filter.value, currencyOf), more);
  };

  const draw = () => {
    const { summaries, currency } = loaded;
    put(
      results,
      totalsOf(summaries.day.totals, currency),
      chartsOf(ctx, summaries, measure.value, currency),
      h("div", { class: "records" }),
    );
    drawTable();
  };

  async function loadMore() {
    const page = await get(
      withQuery(`/economies/${economy.value}/usage`, {
        from: from.value,
        to: to.value,
        limit: PAGE,
        cursor: loaded.next,
      }),
    );
    loaded.records.push(...page.data);
    loaded.next = page.next_cursor;
    await learnPeople(page.data.map((record) => record.user_id));
    drawTable();
  }

  async function load() {
    generation += 1;
    const mine = generation;
    const range = { from: from.value, to: to.value };
    put(results, h("p", { class: "loading" }, "Loading…"));
    try {
      let next = null;
      if (economy.value === MINE) {
        const records = await getAll(withQuery("/usage/me", range));
        const currencies = new Set(records.map(currencyOf));
        const currency = currencies.size === 1 ? [...currencies][0] : "";
        next = { records, next: null, summaries: summarise(records), currency };
      } else {
        const base = `/economies/${economy.value}/usage`;
        const [day, model, user, page] = await Promise.all([
          ...["day", "model", "user"].map((group) =>
            get(withQuery(`${base}/summary`, { ...range, group_by: group })),
          ),
          get(withQuery(base, { ...range, limit: PAGE })),
        ]);
        const currency = (byId.get(economy.value) || { currency: "" }).currency;
        next = { records: page.data, next: page.next_cursor, summaries: { day, model, user }, currency };
      }
      await learnPeople([
        ...next.records.map((record) => record.user_id),
        ...next.summaries.user.rows.map((row) => row.user),
      ]);
      if (mine !== generation) return;
      loaded = next;
      draw();
    } catch (error) {
      if (mine !== generation) return;
      if (error.status === 403 || error.status === 404) {
        error.message = `${error.message}. An economy's usage is for its owners, Admins and holders of ReadUsage; "My usage" shows your own calls.`;
      }
      showError(results, error);
    }
  }

  async function exportRecords() {
    exportButton.disabled = true;
    put(exportStatus);
    try {
      if (economy.value === MINE) {
        const records = await getAll(withQuery("/usage/me", { from: from.value, to: to.value }), Infinity);
        const text =
          format.value === "csv"
            ? csvOf(records)
            : records.map((r) => JSON.stringify(r)).join("\n") + (records.length ? "\n" : "");
        download(
          new Blob([text], { type: format.value === "csv" ? "text/csv" : "application/x-ndjson" }),
          `my-usage.${format.value}`,
        );
      } else {
        const path = withQuery(`/economies/${economy.value}/usage/export`, {
          format: format.value,
          from: from.value,
          to: to.value,
        });
        const response = await call("GET", path, undefined, { raw: true });
        const slug = (byId.get(economy.value) || { slug: "economy" }).slug;
        download(await response.blob(), `usage-${slug}.${format.value}`);
      }
    } catch (error) {
      showError(exportStatus, error);
    } finally {
      exportButton.disabled = false;
    }
  }

  economy.addEventListener("change", load);
  from.addEventListener("change", load);
  to.addEventListener("change", load);
  measure.addEventListener("change", () => loaded.summaries && draw());
  filter.addEventListener("input", drawTable);
  exportButton.addEventListener("click", exportRecords);

  put(
    body,
    h(
      "div",
      { class: "toolbar" },
      field("Economy", economy),
      field("Measure", measure),
      field("From", from),
      field("To", to),
      field("Filter records", filter),
      field("Export format", format),
      h("div", { class: "field actions" }, exportButton),
    ),
    exportStatus,
    results,
  );
  if (economies.length === 0 && !ctx.can.readAllUsage) economy.value = MINE;
  await load();
}
