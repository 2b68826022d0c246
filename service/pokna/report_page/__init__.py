"""The period report's page (`pokna audit report --html`): charts and HTML drawn from the report's JSON
document (pokna.audit.period_report), nothing else. Rendering only: the figures are computed in
pokna.audit, and the command writes the files."""
