// JSON values as the checks read them, and RFC 8785 canonical JSON: the bytes a signature covers.

export const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
export const isInteger = (value) => typeof value === "number" && Number.isInteger(value);

// RFC 8785: JSON.stringify already writes ECMAScript numbers and JCS string escapes; keys sort by UTF-16 units.
export function canonicalize(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return "[" + value.map(canonicalize).join(",") + "]";
  const keys = Object.keys(value).sort();
  return "{" + keys.map((key) => JSON.stringify(key) + ":" + canonicalize(value[key])).join(",") + "}";
}
