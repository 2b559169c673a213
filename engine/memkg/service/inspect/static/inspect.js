"use strict";
// The inspector's script: keeps the API key in memory, loads server-rendered views with it
// as a bearer header, and sends every change to the JSON API. Nothing is stored.
const state = {key: "", user: "", purpose: "", view: ""};
const $ = (sel, root) => (root || document).querySelector(sel);

function headers(json) {
  const h = {"Authorization": "Bearer " + state.key};
  if (state.purpose) h["Memkg-Purpose"] = state.purpose;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

function say(text) {
  const box = $("#status");
  box.textContent = "";
  window.setTimeout(() => { box.textContent = text; }, 30);
}

async function api(method, path, body) {
  const init = {method, headers: headers(body !== undefined), credentials: "omit",
                cache: "no-store"};
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  return {ok: res.ok, status: res.status, data};
}

function refused(answer) {
  const d = answer.data || {};
  return "Refused: " + answer.status + " " + (d.error || "") + " " + (d.message || "");
}

const enc = encodeURIComponent;

const VIEWS = ["memory", "history", "decisions", "decision", "reviews", "rights"];

function fragment() {
  // the hash, decoded; one with a stray "%" (a link typed by hand) is taken as it was typed
  const raw = window.location.hash.slice(1);
  try { return decodeURIComponent(raw); } catch (e) { return raw; }
}

function route() {
  // the hash names the view; any other fragment (the skip link's) keeps the current one
  const hash = fragment();
  if (VIEWS.includes(hash.split("/")[0])) state.view = hash;
  const [name, ...rest] = (state.view || "memory").split("/");
  const q = new URLSearchParams();
  if (state.user) q.set("user", state.user);
  if (name === "history") { q.set("domain", rest[0] || ""); q.set("key", rest.slice(1).join("/")); }
  if (name === "decision") q.set("id", rest.join("/"));
  return {name, query: q};
}

async function show(message) {
  if (!state.key) { say("Type an API key first."); $("#key").focus(); return; }
  const {name, query} = route();
  const res = await fetch("/inspect/views/" + enc(name) + "?" + query, {
    headers: headers(false), credentials: "omit", cache: "no-store"});
  const main = $("#view");
  main.innerHTML = await res.text();
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.nav === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const title = $("#view-title") || main;
  document.title = title.textContent + " - memkg inspector";
  title.focus();
  say(message || (res.ok ? title.textContent + " loaded" : "Refused: " + res.status));
}

function session(event) {
  event.preventDefault();
  state.key = $("#key").value.trim();
  state.user = $("#user").value.trim();
  state.purpose = $("#purpose").value.trim();
  const name = fragment().split("/")[0];
  if (!VIEWS.includes(name)) window.location.hash = "memory";
  else show();
}

function parseValue(text) {
  try { return JSON.parse(text); } catch (e) { return text; }
}

async function onSubmit(event) {
  const form = event.target.closest("form[data-action]");
  if (!form) return;
  event.preventDefault();
  const act = form.dataset.action;
  if (act === "retract") {
    const reason = form.elements.reason.value.trim();
    const answer = await api("POST", "/v1/users/" + enc(state.user) + "/facts/" +
                             enc(form.dataset.fact) + "/retract", {reason});
    if (!answer.ok) { say(refused(answer)); return; }
    await show("Retracted " + form.dataset.fact + ": " + reason);
  } else if (act === "resolve") {
    const body = {value: parseValue(form.elements.value.value), note: form.elements.note.value};
    const answer = await api("POST", "/v1/reviews/" + enc(form.dataset.review) + "/resolve", body);
    if (!answer.ok) { say(refused(answer)); return; }
    await show("Resolved " + answer.data.key + " to " + JSON.stringify(answer.data.value) +
               " by " + answer.data.reviewer);
  } else if (act === "memory-off") {
    const mode = form.elements.mode.value;
    const body = {mode, by: "inspector", reason: form.elements.reason.value.trim()};
    const answer = await api("POST", "/v1/users/" + enc(form.dataset.user) + "/memory/disable",
                             body);
    if (!answer.ok) { say(refused(answer)); return; }
    await show("Memory off for " + form.dataset.user + " (" + mode + ")");
  } else if (act === "erase") {
    const user = form.dataset.user;
    if (form.elements.confirm.value !== user) {
      say("Not erased: type the user id " + user + " exactly to confirm.");
      form.elements.confirm.focus();
      return;
    }
    const answer = await api("DELETE", "/v1/users/" + enc(user));
    if (!answer.ok) { say(refused(answer)); return; }
    receipt(answer.data);
  }
}

function receipt(data) {
  const box = $("#receipt");
  box.textContent = "";
  const h = document.createElement("h4");
  h.textContent = "Erasure receipt";
  const dl = document.createElement("dl");
  dl.className = "receipt";
  for (const [k, v] of Object.entries(data)) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k.replace(/_/g, " ");
    dd.textContent = typeof v === "string" ? v : JSON.stringify(v);
    dd.dataset.field = k;
    dl.append(dt, dd);
  }
  box.append(h, dl);
  box.focus();
  say("Erased " + (data.user_id || state.user) + ": receipt shown");
}

async function onClick(event) {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  const act = button.dataset.action;
  if (act === "confirm") {
    const answer = await api("POST", "/v1/users/" + enc(state.user) + "/facts/" +
                             enc(button.dataset.fact) + "/confirm", {by: "inspector"});
    if (!answer.ok) { say(refused(answer)); return; }
    await show("Confirmed " + button.dataset.fact);
  } else if (act === "replay") {
    const answer = await api("POST", "/v1/decisions/" + enc(button.dataset.decision) + "/replay");
    const out = $("#replay-result");
    if (!answer.ok) { out.textContent = refused(answer); say(out.textContent); return; }
    const moved = answer.data.revisions_changed || [];
    out.textContent = (answer.data.reproduced ? "Reproduced exactly." :
      "Did not reproduce: " + answer.data.differences.join("; ")) +
      (moved.length ? " Made again under revisions that moved since: " + moved.join("; ") : "");
    say(out.textContent);
  } else if (act === "decide") {
    const body = {domain: button.dataset.domain, decision: button.dataset.decisionName,
                  context: JSON.parse(button.dataset.context || "{}")};
    const answer = await api("POST", "/v1/users/" + enc(button.dataset.user) + "/decisions", body);
    if (!answer.ok) { say(refused(answer)); return; }
    await show("New decision " + answer.data.decision_id + ": " + answer.data.status);
  } else if (act === "memory-on") {
    const answer = await api("POST", "/v1/users/" + enc(button.dataset.user) + "/memory/enable",
                             {by: "inspector"});
    if (!answer.ok) { say(refused(answer)); return; }
    await show("Memory on for " + button.dataset.user);
  } else if (act === "export") {
    await exportJson(button.dataset.user);
  }
}

async function everyPage(path, field) {
  // a listing page by page (`next` sent back as `after`), whole: an export holds everything
  const items = [];
  let after = null;
  for (;;) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api("GET", path + (after === null ? "" : sep + "after=" + enc(after)));
    if (!page.ok) return page;
    items.push(...page.data[field]);
    if (!page.data.next) return {ok: true, status: page.status, data: {[field]: items}};
    after = page.data.next;
  }
}

async function everyDecision(user) {
  // the decision log newest page first (`before` the oldest shown), then oldest first
  const found = [];
  let before = null;
  for (;;) {
    const page = await api("GET", "/v1/users/" + enc(user) + "/decisions?limit=1000" +
                           (before === null ? "" : "&before=" + enc(before)));
    if (!page.ok) return page;
    found.unshift(...page.data.decisions);
    if (page.data.decisions.length < 1000) {
      return {ok: true, status: page.status, data: {decisions: found}};
    }
    before = page.data.decisions[0].decision_id;
  }
}

async function exportJson(user) {
  const out = $("#export-result");
  const facts = await everyPage("/v1/users/" + enc(user) + "/facts", "facts");
  if (!facts.ok) { out.textContent = refused(facts); say(out.textContent); return; }
  // every declared key of every domain the key may read: retracted and superseded facts too
  const keys = new Map();
  for (const f of facts.data.facts) keys.set(f.domain + "\u0000" + f.key, [f.domain, f.key]);
  const domains = await api("GET", "/v1/domains");
  if (!domains.ok) { out.textContent = refused(domains); say(out.textContent); return; }
  for (const domain of domains.data.domains) {
    const declared = await api("GET", "/v1/domains/" + enc(domain) + "/keys");
    if (!declared.ok && declared.status !== 403) {
      out.textContent = refused(declared); say(out.textContent); return;
    }
    for (const k of declared.ok ? declared.data.keys : []) {
      keys.set(domain + "\u0000" + k.key, [domain, k.key]);
    }
  }
  const history = [];
  for (const [domain, key] of keys.values()) {
    const h = await everyPage("/v1/users/" + enc(user) + "/history/" + enc(key) +
                              "?domain=" + enc(domain), "history");
    // a key the caller may not read is not theirs to export; any other refusal stops it:
    // an export that leaves things out must not say it holds everything
    if (h.ok) history.push(...h.data.history);
    else if (h.status !== 403) { out.textContent = refused(h); say(out.textContent); return; }
  }
  // the free-text notes the log holds: those the profile and recall serve, and the retired
  const notes = await everyPage("/v1/users/" + enc(user) + "/notes?include_retired=true",
                                "notes");
  if (!notes.ok) { out.textContent = refused(notes); say(out.textContent); return; }
  const decisions = await everyDecision(user);
  if (!decisions.ok) { out.textContent = refused(decisions); say(out.textContent); return; }
  const doc = {user_id: user, exported_facts: history.length ? history : facts.data.facts,
               current_facts: facts.data.facts, notes: notes.data.notes,
               decisions: decisions.data.decisions};
  const blob = new Blob([JSON.stringify(doc, null, 2)], {type: "application/json"});
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = "memkg-" + user + ".json";
  link.textContent = "Download the export again";
  out.textContent = "Exported " + doc.exported_facts.length + " facts, " + doc.notes.length +
    " notes and " + doc.decisions.length + " decisions. ";
  out.append(link);
  link.click();
  say(out.textContent);
}

document.addEventListener("DOMContentLoaded", () => {
  $("#session").addEventListener("submit", session);
  window.addEventListener("hashchange", () => {
    if (VIEWS.includes(fragment().split("/")[0])) show();
  });
  for (const a of document.querySelectorAll("nav a")) {
    a.addEventListener("click", () => { if (a.hash === window.location.hash) show(); });
  }
  $("#view").addEventListener("submit", onSubmit);
  $("#view").addEventListener("click", onClick);
});
