// Pokna proof verifier, in the browser: it re-checks a finished game of Vigo's Favor and tells it as a story.
//
// The page is this file and its parts in verify/ (the story, the verdict, DOM helpers); everything that
// judges is the checking core in pokna-verify/, the same ES module that runs under Node
// (verifier/pokna_verify/js, docs/fairness.md): the commitment, the game client seed, every roll, both
// signatures (WebCrypto), the beacon rounds (the vendored @noble/curves BLS, loaded only for beacon-mode
// proofs) and the rules replay, a second implementation of docs/rules.md. No build step. This file reads
// the address, loads what it names, and wires the forms and the calculator. The only requests are
// same-origin fetches of a proof link, the key ring and the modules, and, only when the page's address
// names one (?beacon_chain=URL), a drand chain's /info to trust besides quicknet.
//
// window.PoknaVerifier exposes verifyDocument() and replayRules() for scripts and tests.
import { HEX64, LINK_OBJECT, Unusable, canonicalize, chainFromDrandInfo, computeRoll, replayRules, verifyDocument } from "./pokna-verify/index.js";
import { $, el, mono } from "./verify/dom.js";
import { render, showUnusable } from "./verify/report.js";
import { die } from "./verify/story.js";

const CHAIN_INFO_TIMEOUT_MS = 10000;
const KEYS_PATH = "/v1/fairness/keys";
const LINK_PATH = "/v1/fairness/proofs/";
const LINK_TOKEN = /^[A-Za-z0-9_-]{32,}$/;

// ?proof= takes a bare token, the path /v1/fairness/proofs/<token>, or a full link on this site (even a
// link to this page with its own ?proof=).
function linkPath(value, depth = 0) {
  const text = value.trim();
  if (LINK_TOKEN.test(text)) return LINK_PATH + text;
  if (text.startsWith(LINK_PATH) && LINK_TOKEN.test(text.slice(LINK_PATH.length))) return text;
  let url;
  try {
    url = new URL(text);
  } catch {
    throw new Unusable(`“${text}” is not a proof link: give the token (32 or more letters, digits, - or _), ${LINK_PATH}<token>, or a link on this site`, "NOT A PROOF LINK");
  }
  if (url.origin !== location.origin) {
    throw new Unusable(`this page loads proofs from its own site (${location.origin}) only; open the link on ${url.origin}, or download the proof and upload it here`, "NOT A PROOF LINK");
  }
  if (depth === 0 && url.searchParams.has("proof")) return linkPath(url.searchParams.get("proof"), 1);
  return linkPath(url.pathname, 1);
}

async function fetchJson(path) {
  let response;
  try {
    response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" });
  } catch (error) {
    const offline = location.protocol === "file:" ? " (this page was opened as a file: paste or upload the document instead)" : "";
    throw new Unusable(`cannot reach ${path}: ${error.message}${offline}`, "CANNOT LOAD");
  }
  if (response.status === 404) return { status: 404, body: null };
  if (!response.ok) throw new Unusable(`${path} answered HTTP ${response.status}`, "CANNOT LOAD");
  try {
    return { status: response.status, body: await response.json() };
  } catch (error) {
    throw new Unusable(`${path} did not answer JSON: ${error.message}`, "CANNOT LOAD");
  }
}

// The pasted key ring wins; otherwise the published one, from this origin only.
async function keyRingFor(link) {
  const pasted = $("#keys-json").value.trim();
  if (pasted) {
    try {
      return { keyRing: JSON.parse(pasted) };
    } catch (error) {
      return { keyRingReason: `the pasted key ring is not JSON: ${error.message}` };
    }
  }
  let path = KEYS_PATH;
  if (link && typeof link.keys_url === "string") {
    try {
      const url = new URL(link.keys_url, location.href);
      if (url.origin === location.origin) path = url.pathname;
    } catch {
      // keep the documented path
    }
  }
  if (location.protocol === "file:") return { keyRingReason: `opened as a file, so ${KEYS_PATH} cannot be fetched: paste the key ring under “Keys”` };
  try {
    const answer = await fetchJson(path);
    if (answer.body && Array.isArray(answer.body.keys)) return { keyRing: answer.body };
    return { keyRingReason: `${path} has no key ring (HTTP ${answer.status}): paste it under “Keys”` };
  } catch (error) {
    return { keyRingReason: `could not load the key ring: ${error.message}` };
  }
}

function pastedReceipt() {
  const text = $("#receipt-json").value.trim();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Unusable(`your commitment receipt is not JSON: ${error.message}`);
  }
}

// ?beacon_chain=URL: a drand chain trusted besides quicknet because the page's address asks for it, as
// `pokna verify --beacon-chain` trusts one for a CLI user. Read once when the page opens, used by every check
// on the page (a link, a paste, an upload); trusted only if it was fetched and read as a drand chain's /info.
let addressChain = null; // { url, chain } once read, { url, problem } if it could not be used

async function readAddressChain(given) {
  let url;
  try {
    url = new URL(given, location.href);
  } catch {
    return { url: given, problem: "that is not a URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return { url: url.href, problem: "that is not an http(s) URL" };
  let response;
  try {
    const signal = AbortSignal.timeout(CHAIN_INFO_TIMEOUT_MS);
    response = await fetch(url.href, { headers: { Accept: "application/json" }, credentials: "omit", cache: "no-store", signal });
  } catch (error) {
    return {
      url: url.href,
      problem:
        `it could not be fetched (${error.message}); this page reads a chain's info over https, or over http from this ` +
        "machine (127.0.0.1, localhost), from a relay that lets other sites read it (Access-Control-Allow-Origin), as drand's relays do",
    };
  }
  if (!response.ok) return { url: url.href, problem: `it answered HTTP ${response.status}` };
  let info;
  try {
    info = await response.json();
  } catch (error) {
    return { url: url.href, problem: `it did not answer JSON (${error.message})` };
  }
  try {
    return { url: url.href, chain: chainFromDrandInfo(info) };
  } catch (error) {
    return { url: url.href, problem: `it is not a drand chain's info: ${error.message}` };
  }
}

// Beside the verdict, so nobody reads VALID without seeing which beacon it rests on.
function renderAddressChain() {
  const node = $("#beacon-trust");
  node.hidden = addressChain === null;
  if (addressChain === null) return;
  const { url, chain, problem } = addressChain;
  node.dataset.state = chain ? "trusted" : "refused";
  if (chain) {
    node.dataset.chain = chain.chain_hash;
    node.replaceChildren(
      el("strong", {}, "Beacon chain also trusted (beacon_chain in this page's address): "),
      "chain ", mono(chain.chain_hash), ", key ", mono(`${chain.public_key.slice(0, 16)}…`), ", read from ", mono(url), ". ",
      "It is trusted because the address asked for it, not because this page knows it: whoever holds its key chooses its rounds, ",
      "so a game on it is only as fair as they are. Without beacon_chain this page trusts drand's quicknet only.",
    );
  } else {
    node.replaceChildren(
      el("strong", {}, "Beacon chain not trusted: "),
      "the address asks to trust the drand chain at ", mono(url), ` too (beacon_chain), but ${problem}. Only drand's quicknet is trusted.`,
    );
  }
}

async function verifyAndShow(value) {
  const keys = await keyRingFor(value && value.object === LINK_OBJECT ? value : null);
  const beaconChains = addressChain && addressChain.chain ? [addressChain.chain] : [];
  const report = await verifyDocument(value, { ...keys, receipt: pastedReceipt(), beaconChains });
  render(report);
  $("#load").open = false;
  return report;
}

async function guarded(work) {
  document.body.dataset.ready = "false";
  try {
    await work();
  } catch (error) {
    if (!(error instanceof Unusable)) console.error(error);
    showUnusable(error instanceof Unusable ? error : new Unusable(`the page failed: ${error.message}`));
  } finally {
    document.body.dataset.ready = "true";
  }
}

async function loadLink(value) {
  const path = linkPath(value);
  const answer = await fetchJson(path);
  if (answer.status === 404) {
    throw new Unusable(`no such proof link: ${path} is unknown here; check that the whole link was copied`, "NO SUCH PROOF LINK");
  }
  await verifyAndShow(answer.body);
}

function parsePasted(text, what) {
  if (!text.trim()) throw new Unusable(`the ${what} is empty`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Unusable(`the ${what} is not JSON: ${error.message}`);
  }
}

async function runCalculator() {
  const serverSeed = $("#calc-server-seed").value.trim();
  const clientSeed = $("#calc-client-seed").value.trim();
  const status = $("#calc-status");
  const body = $("#calc-results tbody");
  body.replaceChildren();
  if (!HEX64.test(serverSeed)) {
    status.textContent = "a server seed is 64 lowercase hexadecimal characters";
    status.dataset.state = "error";
    return;
  }
  const nonces = $("#calc-nonces").value.split(",").map((text) => text.trim()).filter(Boolean);
  for (const text of nonces) {
    if (!/^\d+$/.test(text)) {
      status.textContent = `nonce '${text}' is not a non-negative integer`;
      status.dataset.state = "error";
      return;
    }
    const computed = await computeRoll(serverSeed, clientSeed, text.replace(/^0+(?=\d)/, ""));
    body.append(
      el(
        "tr",
        { "data-nonce": text, "data-f": String(computed.f), "data-face": computed.face, "data-color": computed.color },
        el("td", { "data-label": "Nonce" }, text),
        el("td", { "data-label": "HMAC-SHA256" }, mono(computed.digest)),
        el("td", { "data-label": "f" }, mono(String(computed.f))),
        el("td", { "data-label": "Face" }, die(computed.face, computed.color)),
        el("td", { "data-label": "Colour" }, computed.color),
      ),
    );
  }
  status.textContent = `${nonces.length} roll${nonces.length === 1 ? "" : "s"}`;
  status.dataset.state = "done";
}

function wire() {
  $("#link-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = $("#link-input").value.trim();
    guarded(async () => {
      const path = linkPath(value);
      const query = new URLSearchParams({ proof: path.slice(LINK_PATH.length) });
      const asked = new URLSearchParams(location.search).get("beacon_chain");
      if (asked !== null) query.set("beacon_chain", asked); // the chain trusted stays named in the address
      history.replaceState(null, "", `?${query}`);
      await loadLink(path);
    });
  });
  $("#paste-button").addEventListener("click", () => guarded(() => verifyAndShow(parsePasted($("#proof-json").value, "pasted document"))));
  $("#proof-file").addEventListener("change", () => {
    const file = $("#proof-file").files[0];
    if (file) guarded(async () => verifyAndShow(parsePasted(await file.text(), `file ${file.name}`)));
  });
  $("#calc-button").addEventListener("click", runCalculator);
}

async function start() {
  wire();
  const params = new URLSearchParams(location.search);
  if (params.has("beacon_chain")) {
    addressChain = await readAddressChain(params.get("beacon_chain"));
    renderAddressChain();
  }
  if (params.has("server_seed")) {
    $("#calc-server-seed").value = params.get("server_seed");
    $("#calc-client-seed").value = params.get("client_seed") || "";
    $("#calc-nonces").value = params.get("nonces") || "0";
    $("#calculator").open = true;
    await runCalculator();
  }
  if (params.has("proof")) {
    $("#link-input").value = params.get("proof");
    await guarded(() => loadLink(params.get("proof")));
  } else {
    $("#load").open = true;
    document.body.dataset.ready = "true";
  }
}

window.PoknaVerifier = { verifyDocument, replayRules, computeRoll, canonicalize, Unusable };
if (document.getElementById("verify-app")) start();
