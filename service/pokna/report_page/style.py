"""The report page's stylesheet, inside the page: system fonts only, a phone's width first, tables that
stack into labelled rows below 700 px, charts that scale with the column."""

STYLESHEET = """
:root { color-scheme: light; --ink: #1d2430; --muted: #5b6472; --line: #d9dee5; --flag: #b3261e;
  --ok: #1b6e3a; --tint: #f4f6f9; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
  background: #fff; }
main { max-width: 1040px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.6rem; margin: 0.2rem 0 0.6rem; line-height: 1.2; overflow-wrap: anywhere; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; padding-top: 0.6rem; border-top: 2px solid var(--line); }
h3 { font-size: 1.1rem; margin: 1.6rem 0 0.4rem; overflow-wrap: anywhere; }
h4 { font-size: 1rem; margin: 1.2rem 0 0.3rem; }
p { margin: 0.5rem 0; max-width: 72ch; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em;
  overflow-wrap: anywhere; }
.kicker { color: var(--muted); text-transform: uppercase; letter-spacing: 0.06em; font-size: 0.8rem; margin: 0; }
.verdict { font-weight: 600; padding: 0.6rem 0.8rem; border-radius: 6px; max-width: none; }
.verdict.clear { background: #e7f4ec; color: var(--ok); }
.verdict.flagged { background: #fbe9e7; color: var(--flag); }
.flag { color: var(--flag); }
.ok { color: var(--ok); }
.muted { color: var(--muted); }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 4px 14px 10px; margin: 14px 0; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
caption { text-align: left; color: var(--muted); font-size: 0.9rem; padding-bottom: 0.3rem; }
th, td { padding: 6px 8px; border-bottom: 1px solid var(--line); text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.text { text-align: left; }
.num { white-space: nowrap; }
td.text { min-width: 14rem; }
thead th { font-size: 0.85rem; color: var(--muted); font-weight: 600; }
.scroll { overflow-x: auto; }
.grid { width: auto; min-width: 60%; }
.grid td, .grid th { white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: minmax(12rem, max-content) 1fr; gap: 4px 16px; margin: 0.5rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; font-variant-numeric: tabular-nums; overflow-wrap: anywhere; }
figure { margin: 1rem 0; }
svg.chart { display: block; width: 100%; max-width: 540px; height: auto; }
figcaption { color: var(--muted); font-size: 0.9rem; max-width: 72ch; }
@media (max-width: 700px) {
  main { padding: 12px; }
  table.stack thead { display: none; }
  table.stack tr { display: block; border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; padding: 4px 8px; }
  table.stack td { display: flex; justify-content: space-between; gap: 12px; border: 0; padding: 3px 0;
    text-align: right; }
  table.stack td::before { content: attr(data-label); color: var(--muted); text-align: left; }
  table.stack td:first-child { display: block; font-weight: 600; }
  table.stack td:first-child::before, table.stack td.text::before { content: none; }
  table.stack td.text { display: block; color: var(--muted); }
  table.stack td:first-child, table.stack td.text { text-align: left; }
  .grid thead th { white-space: normal; }
  table.stack td.num { white-space: normal; }
  td.text { min-width: 0; }
  .grid { font-size: 0.85rem; }
  .grid td, .grid th { padding: 5px 5px; }
  dl.facts { grid-template-columns: 1fr; gap: 0; }
  dl.facts dd { margin-bottom: 6px; }
}
"""
