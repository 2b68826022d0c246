// The page's DOM helpers. Everything is written with textContent, never as HTML: a proof is untrusted input.

export const $ = (selector) => document.querySelector(selector);

// textContent only: a proof is untrusted input.
export function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}


export const mono = (text) => el("code", {}, text);

export function cardTable(id, columns, rows) {
  const table = el("table", { id, class: "cards" }, el("thead", {}, el("tr", {}, columns.map((name) => el("th", { scope: "col" }, name)))));
  const body = el("tbody");
  for (const row of rows) {
    body.append(el("tr", row.attributes, row.cells.map((content, i) => el("td", { "data-label": columns[i] }, content))));
  }
  table.append(body);
  return table;
}

export const signed = (amount) => (amount > 0 ? `+${amount}` : String(amount));
