// Bar charts drawn as inline SVG: columns for a time series, horizontal bars for categories.
// Each chart is one `role="img"` whose accessible name reads out the values it draws.

import { h, s } from "./dom.js";

const WIDTH = 640;

function spoken(title, items) {
  if (items.length === 0) return `${title}: no usage`;
  const shown = items.slice(0, 12).map((item) => `${item.label} ${item.text}`);
  const more = items.length > 12 ? `; and ${items.length - 12} more` : "";
  return `${title}: ${shown.join("; ")}${more}`;
}

function frame(title, items, height, drawing) {
  const svg = s(
    "svg",
    {
      role: "img",
      "aria-label": spoken(title, items),
      viewBox: `0 0 ${WIDTH} ${height}`,
      class: "chart-svg",
    },
    drawing,
  );
  return h("figure", { class: "chart" }, h("figcaption", {}, title), svg);
}

function tooltip(item) {
  return s("title", {}, `${item.label}: ${item.text}`);
}

/** Columns over time (one per day), for `items` of {label, value (a number), text}. */
export function columnChart(title, items) {
  const height = 220;
  const side = 16;
  const bottom = 32;
  const top = 22;
  const plotWidth = WIDTH - 2 * side;
  const plotHeight = height - top - bottom;
  const max = Math.max(0, ...items.map((item) => item.value));
  const slot = items.length ? plotWidth / items.length : plotWidth;
  const width = Math.min(56, Math.max(1, slot * 0.7));
  const every = Math.max(1, Math.ceil(items.length / 8));
  const labelled = items.length <= 10; // a value over each column while they fit
  const parts = [
    s("line", { class: "axis", x1: side, y1: top + plotHeight, x2: WIDTH - side, y2: top + plotHeight }),
  ];
  items.forEach((item, index) => {
    const barHeight = max > 0 ? (item.value / max) * plotHeight : 0;
    const middle = side + index * slot + slot / 2;
    const y = top + plotHeight - barHeight;
    parts.push(
      s("rect", { class: "bar", x: middle - width / 2, y, width, height: barHeight }, tooltip(item)),
    );
    if (labelled)
      parts.push(s("text", { class: "value", x: middle, y: y - 6, "text-anchor": "middle" }, item.text));
    if (index % every === 0) {
      parts.push(
        s("text", { class: "tick", x: middle, y: height - 10, "text-anchor": "middle" }, item.label),
      );
    }
  });
  if (items.length === 0) parts.push(s("text", { class: "tick", x: side, y: 20 }, "No usage"));
  return frame(title, items, height, parts);
}

/** Horizontal bars, largest first, for categories (models, users). */
export function barChart(title, items) {
  const sorted = [...items].sort((a, b) => b.value - a.value).slice(0, 15);
  const row = 26;
  const height = Math.max(1, sorted.length) * row + 8;
  const left = 220;
  const right = 150;
  const plotWidth = WIDTH - left - right;
  const max = Math.max(0, ...sorted.map((item) => item.value));
  const parts = [];
  sorted.forEach((item, index) => {
    const y = 4 + index * row;
    const width = max > 0 ? (item.value / max) * plotWidth : 0;
    const label = item.label.length > 30 ? `${item.label.slice(0, 29)}…` : item.label;
    parts.push(
      s("text", { class: "tick", x: left - 8, y: y + 16, "text-anchor": "end" }, label),
      s(
        "rect",
        { class: "bar", x: left, y: y + 3, width: Math.max(1, width), height: row - 8 },
        tooltip(item),
      ),
      s("text", { class: "value", x: left + width + 6, y: y + 16 }, item.text),
    );
  });
  if (sorted.length === 0) parts.push(s("text", { class: "tick", x: 8, y: 20 }, "No usage"));
  return frame(title, sorted, height, parts);
}
