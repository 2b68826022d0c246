// SHA-256, HMAC-SHA256, Ed25519 and base64url, all through WebCrypto (`crypto.subtle`: every current browser
// in a secure context, and Node 20 or newer), so the page and Node run the same code and nothing is vendored.
import { canonicalize } from "./json.js";

const encoder = new TextEncoder();

export const toHex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

export const hexBytes = (hex) => Uint8Array.from(hex.match(/../g) || [], (pair) => parseInt(pair, 16));

export async function sha256Bytes(bytes) {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

export async function sha256Hex(text) {
  return toHex(await sha256Bytes(encoder.encode(text)));
}

export async function hmacSha256(keyText, message) {
  const key = await crypto.subtle.importKey("raw", encoder.encode(keyText), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
}

export const b64urlEncode = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

// Strict: one spelling per value, so a re-encoded signature is refused as the Python verifier refuses it.
export function b64urlDecode(text) {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) {
    throw new Error("not unpadded base64url");
  }
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  const bytes = Uint8Array.from(atob(padded), (ch) => ch.charCodeAt(0));
  if (b64urlEncode(bytes) !== text) throw new Error("not canonical unpadded base64url");
  return bytes;
}

export async function keyIdOf(rawPublicKey) {
  return "ed25519:" + toHex(await sha256Bytes(rawPublicKey)).slice(0, 16);
}

// Throws where this WebCrypto has no Ed25519 (an older browser): the caller says the check was not run.
export const ed25519Key = (rawPublicKey) => crypto.subtle.importKey("raw", rawPublicKey, { name: "Ed25519" }, false, ["verify"]);

// Whether `signature` is the key's over the canonical JSON of `unsigned` (a document without its signature).
export const ed25519Verifies = (key, signature, unsigned) =>
  crypto.subtle.verify({ name: "Ed25519" }, key, signature, encoder.encode(canonicalize(unsigned)));
