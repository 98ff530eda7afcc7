// Small DOM helpers: element builders, formatting of amounts and times, messages and confirmations.
// Text always goes in as text nodes (never innerHTML), so nothing a user stored can become markup.

const SVG = "http://www.w3.org/2000/svg";

function fill(element, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "text") element.textContent = value;
    else if (name === "value" || name === "checked" || name === "selected") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** An HTML element: h("button", {type: "button", onclick}, "Save"). */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, for charts. */
export function s(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

let nextId = 0;
/** A unique id, to tie a label to its field. */
export function uid(prefix) {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled field: the label's text is the field's accessible name. */
export function field(labelText, control) {
  control.id = control.id || uid("field");
  return h("div", { class: "field" }, h("label", { for: control.id }, labelText), control);
}

/** Nano-units (an integer string) as currency units, exactly: "1500" → "0.0000015". */
export function formatNano(amount, currency) {
  let digits = String(amount ?? "0");
  const negative = digits.startsWith("-");
  if (negative) digits = digits.slice(1);
  digits = digits.padStart(10, "0");
  const whole = BigInt(digits.slice(0, -9)).toLocaleString("en-US");
  let fraction = digits.slice(-9).replace(/0+$/, "");
  if (fraction.length < 2) fraction = fraction.padEnd(2, "0");
  const text = `${negative ? "-" : ""}${whole}.${fraction}`;
  return currency ? `${text} ${currency}` : text;
}

/** An amount typed in currency units ("12.5") as nano-units ("12500000000"); null if it is not one. */
export function toNano(text) {
  const match = /^(\d+)(?:\.(\d{1,9}))?$/.exec(String(text).trim());
  if (!match) return null;
  const digits = `${match[1]}${(match[2] || "").padEnd(9, "0")}`.replace(/^0+(?=\d)/, "");
  return digits;
}

/** Nano-units as what a person types back ("12.5"), for an edit form's starting value. */
export function nanoInput(amount) {
  return formatNano(amount).replaceAll(",", "").replace(/\.?0+$/, "");
}

export function formatCount(value) {
  return BigInt(String(value ?? "0")).toLocaleString("en-US");
}

/** An RFC 3339 time as "2025-05-02 09:14:03 UTC"; the same for every reader. */
export function formatTime(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

export function shortId(id) {
  return String(id).slice(0, 8);
}

/** A polite announcement in the page's status region (for "Saved" and the like). */
export function announce(text) {
  const region = document.getElementById("status");
  if (!region) return;
  region.textContent = "";
  // A fresh text node after a tick makes screen readers announce a repeated message too.
  setTimeout(() => {
    region.textContent = text;
  }, 20);
}

/** An error message as an alert: announced at once, read by tests by its role. */
export function alertBox(error) {
  return h("p", { role: "alert", class: "alert" }, error && error.message ? error.message : String(error));
}

/** Replace `element`'s children; null, undefined and false stand for nothing. */
export function put(element, ...children) {
  element.replaceChildren(
    ...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false),
  );
}

/** Show an error in `holder` (replacing any earlier one). */
export function showError(holder, error) {
  holder.replaceChildren(alertBox(error));
}

/**
 * A button for something that cannot be undone: the first press asks, with "Confirm" and "Cancel".
 * `name` is the accessible name ("Delete openai-main"); the visible text is `text`.
 */
export function confirmButton(text, name, action, onError) {
  const holder = h("span", { class: "confirm" });
  const ask = () => {
    const confirm = h(
      "button",
      {
        type: "button",
        class: "danger",
        "aria-label": `Confirm: ${name}`,
        onclick: async () => {
          confirm.disabled = true;
          try {
            await action();
          } catch (error) {
            onError(error);
            holder.replaceChildren(first);
          }
        },
      },
      "Confirm",
    );
    const cancel = h("button", { type: "button", onclick: () => holder.replaceChildren(first) }, "Cancel");
    holder.replaceChildren(confirm, " ", cancel);
    confirm.focus();
  };
  const first = h("button", { type: "button", "aria-label": name, onclick: ask }, text);
  holder.append(first);
  return holder;
}

/** A table: a caption, header cells and rows of cells (strings or nodes). */
export function table(caption, headers, rows, empty = "Nothing yet.") {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  const blank = (cell) =>
    cell === "" || cell === null || (cell instanceof Node && cell.childNodes.length === 0);
  const last = headers.length - 1;
  if (headers[last] === "Actions" && rows.every((cells) => blank(cells[last]))) {
    // Nothing the caller may do to any row: no empty column of buttons.
    headers = headers.slice(0, last);
    rows = rows.map((cells) => cells.slice(0, last));
  }
  const grid = h(
    "table",
    {},
    h("caption", {}, caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        headers.map((name) => h("th", { scope: "col" }, name)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((cells) =>
        h(
          "tr",
          {},
          cells.map((cell, index) => (index === 0 ? h("th", { scope: "row" }, cell) : h("td", {}, cell))),
        ),
      ),
    ),
  );
  return h("div", { class: "table-scroll" }, grid);
}

/** Save a blob as a file: a same-origin object URL, clicked once, then released. */
export function download(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * A form in a panel: labelled fields, an error holder and Save/Cancel. `submit` gets nothing and
 * throws to show an error (an ApiError, or an Error naming the bad field); `done` runs after it.
 */
export function formPanel(name, fields, saveText, submit, done, cancel) {
  const errors = h("div");
  const form = h(
    "form",
    { class: "panel", "aria-label": name },
    h("h3", {}, name),
    fields,
    errors,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, saveText),
      " ",
      h("button", { type: "button", onclick: cancel }, "Cancel"),
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      const result = await submit();
      await done(result);
    } catch (error) {
      showError(errors, error);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

/** A view's frame: its heading (focused after navigation) and a body to fill. */
export function viewFrame(title) {
  const heading = h("h2", { tabindex: "-1", id: uid("view") }, title);
  const body = h("div", { class: "view-body" }, h("p", { class: "loading" }, "Loading…"));
  return { root: h("section", { "aria-labelledby": heading.id }, heading, body), heading, body };
}
