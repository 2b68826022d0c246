// One check's result, as pokna_verify.fairness.verification reports it: a name, a status ("pass", "fail" or
// "not run") and a message. Names and failure messages are the Python verifier's, word for word.

export const check = (name, problems, success) =>
  problems.length ? { name, status: "fail", message: problems.join("; ") } : { name, status: "pass", message: success };
export const notRun = (name, reason) => ({ name, status: "not run", message: reason });
// A value as the Python verifier's messages print it (repr), so both say the same words.
export const quoted = (value) => (typeof value === "string" ? `'${value}'` : value === undefined || value === null ? "None" : JSON.stringify(value));
