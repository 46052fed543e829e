// The nearcast dashboard: signs in with an API token (kept for the tab only), draws the nodes on
// the world map in their states, follows the server's live events (GET /v1/events), explains where
// a client is sent, and offers a write token the node actions. The API checks every call itself.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const state = { token: null, caller: null, places: [], nodes: new Map(), samples: [], events: null };
const $ = (id) => document.getElementById(id);

// x = longitude + 180, y = 90 - latitude: the world outline's box (tools/ui/make-world-outline.py).
const project = (lat, lon) => [lon + 180, 90 - lat];

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: "Bearer " + state.token, ...(options.headers || {}) },
  });
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try { message = JSON.parse(text).error.message; } catch (_) { /* plain text */ }
    const error = new Error(message || response.statusText);
    error.status = response.status;
    throw error;
  }
  return text ? JSON.parse(text) : null;
}

function element(tag, attributes = {}, text) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// Signing in and out.

async function signIn(token) {
  state.token = token;
  try {
    state.caller = await api("/v1/whoami");
  } catch (e) {
    state.token = null;
    throw e;
  }
  sessionStorage.setItem("nearcast-token", token);
  $("who").textContent = `signed in: ${state.caller.role} token (${state.caller.source})`;
  $("signin").hidden = true;
  $("dashboard").hidden = false;
  $("signout").hidden = false;
  document.body.dataset.role = state.caller.role;
  try { state.places = await api("/v1/map"); } catch (_) { state.places = []; }
  drawNodes();
  follow();
}

function signOut() {
  sessionStorage.removeItem("nearcast-token");
  if (state.events) state.events.abort();
  location.reload();
}

// The live events: server-sent events read through fetch, so the token goes in a header.

async function follow() {
  const controller = new AbortController();
  state.events = controller;
  try {
    const response = await fetch("/v1/events", {
      headers: { Authorization: "Bearer " + state.token }, signal: controller.signal,
    });
    if (!response.ok) throw new Error(response.statusText);
    setLive(true);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        dispatch(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  } catch (_) {
    if (controller.signal.aborted) return;
  }
  setLive(false);
  setTimeout(follow, 2000);
}

function setLive(on) {
  const live = $("live");
  live.className = "live " + (on ? "on" : "off");
  live.textContent = on ? "live" : "reconnecting";
}

function dispatch(frame) {
  let event = "message";
  let data = "";
  for (const line of frame.split("\n")) {
    if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  const value = JSON.parse(data);
  if (event === "nodes") {
    state.nodes = new Map(value.map((n) => [n.id, n]));
    drawNodes();
  } else if (event === "pools") {
    drawPools(value);
  } else if (event === "history") {
    state.samples = value;
    drawCharts();
  } else if (event === "sample") {
    state.samples.push(value);
    if (state.samples.length > 3600) state.samples.shift();
    drawCharts();
  }
}

// The map and the nodes table.

const SHAPES = {
  up: () => element("svg:circle", { r: 2.2, class: "mark" }),
  degraded: () => element("svg:path", { d: "M0 -2.6L2.4 1.6H-2.4Z", class: "mark" }),
  down: () => element("svg:path", { d: "M-2 -2L2 2M2 -2L-2 2", class: "cross" }),
  drained: () => element("svg:rect", { x: -2, y: -2, width: 4, height: 4, class: "mark" }),
};

function nodeState(id) {
  const n = state.nodes.get(id);
  return n ? n.state : "unknown";
}

function drawNodes() {
  const layer = $("nodes-layer");
  layer.replaceChildren();
  for (const place of state.places) {
    const s = nodeState(place.id);
    const [x, y] = project(place.latitude, place.longitude);
    const g = element("svg:g", {
      class: `node state-${s}`, transform: `translate(${x} ${y})`, "data-node": place.id, "data-state": s,
    });
    g.append((SHAPES[s] || SHAPES.up)());
    g.append(element("svg:text", { x: 3, y: 1 }, `${place.id} ${s}`));
    g.append(element("svg:title", {}, `${place.id}: ${s}; pools ${place.pools.join(", ") || "none"}`));
    layer.append(g);
  }
  drawTable();
}

function drawTable() {
  const body = $("nodes-table").tBodies[0];
  body.replaceChildren();
  const ids = new Set([...state.places.map((p) => p.id), ...state.nodes.keys()]);
  $("nodes-table").classList.toggle("read-only", !state.caller.mayChangeNodes);
  for (const id of [...ids].sort()) {
    const n = state.nodes.get(id) || {};
    const place = state.places.find((p) => p.id === id);
    const row = element("tr", { "data-node": id });
    row.append(element("td", {}, id));
    row.append(element("td", { class: `state state-${n.state || "unknown"}` }, n.state || "unknown"));
    row.append(element("td", {}, place ? place.pools.join(", ") : ""));
    const left = n.overrideSecondsLeft ? ` (${Math.round(n.overrideSecondsLeft)} s left)` : "";
    row.append(element("td", {}, n.override ? n.override + left : ""));
    row.append(element("td", {}, n.lastReason || ""));
    const actions = element("td", { class: "actions" });
    if (state.caller.mayChangeNodes) actions.append(...nodeActions(id));
    row.append(actions);
    body.append(row);
  }
}

function nodeActions(id) {
  const duration = element("select", { "aria-label": `how long for ${id}`, "data-duration": id });
  for (const [label, seconds] of [["10 minutes", 600], ["1 hour", 3600], ["1 day", 86400], ["until undone", ""]]) {
    duration.append(element("option", { value: seconds }, label));
  }
  const buttons = [["drain", "Drain"], ["undrain", "Undrain"], ["force-up", "Force up"], ["force-down", "Force down"]]
    .map(([action, label]) => {
      const b = element("button", { type: "button", "data-action": action, "data-node": id }, label);
      b.addEventListener("click", () => act(id, action, duration.value));
      return b;
    });
  return [duration, ...buttons];
}

async function act(id, action, seconds) {
  const timed = action !== "undrain" && seconds;
  const what = `${action} ${id}` + (timed ? ` for ${seconds} s` : "");
  if (!window.confirm(`${what}?`)) return;
  const result = $("action-result");
  try {
    const status = await api(`/v1/nodes/${encodeURIComponent(id)}/${action}` + (timed ? `?for=${seconds}` : ""),
      { method: "POST" });
    state.nodes.set(id, status);
    drawNodes();
    result.className = "";
    result.textContent = `${new Date().toISOString()} ${what}: now ${status.state}; in the audit log as ` +
      `${state.caller.role} ${state.caller.source}`;
  } catch (e) {
    result.className = "error";
    result.textContent = `${what} refused: ${e.message}`;
  }
}

function drawPools(pools) {
  const body = $("pools-table").tBodies[0];
  body.replaceChildren();
  for (const p of pools) {
    const row = element("tr", { "data-pool": p.id });
    row.append(element("td", {}, p.id));
    row.append(element("td", {}, p.members.join(", ")));
    row.append(element("td", {}, p.settled ? "settled" : `capped at ${p.ttlCap} s (unsettled)`));
    body.append(row);
  }
}

// Charts: rates between samples, the last hour.

const SERIES = [
  ["answered", (c) => c.answered || 0],
  ["passed to the slow path", (c) => sum(c, "pass_")],
  ["limited", (c) => sum(c, "limit_") + sum(c, "rrl_")],
];

function sum(counters, prefix) {
  return Object.entries(counters).filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);
}

function drawCharts() {
  const box = $("charts");
  box.replaceChildren();
  const samples = state.samples.filter((s) => s.xdp);
  if (samples.length < 2) {
    box.textContent = samples.length ? "collecting…" : "the fast path is off";
    return;
  }
  for (const [label, value] of SERIES) {
    const rates = [];
    for (let i = 1; i < samples.length; i++) {
      const dt = samples[i].uptime - samples[i - 1].uptime;
      rates.push(dt > 0 ? Math.max(0, value(samples[i].xdp) - value(samples[i - 1].xdp)) / dt : 0);
    }
    const top = Math.max(1, ...rates);
    const points = rates.map((r, i) => `${(i / Math.max(1, rates.length - 1)) * 300},${46 - (r / top) * 44}`);
    const chart = element("div", { class: "chart", "data-series": label });
    chart.append(element("div", {}, `${label}: ${Math.round(rates[rates.length - 1])}/s (peak ${Math.round(top)}/s)`));
    const svg = element("svg:svg", { viewBox: "0 0 300 48", preserveAspectRatio: "none", role: "img", "aria-label": label });
    svg.append(element("svg:polyline", { points: points.join(" ") }));
    chart.append(svg);
    box.append(chart);
  }
}

// Explain: where a client is placed, its candidates in order, and the answer, drawn on the map.

async function explain(event) {
  event.preventDefault();
  const q = new URLSearchParams({ name: $("explain-name").value, type: $("explain-type").value,
    client: $("explain-client").value });
  if ($("explain-ecs").value) q.set("ecs", $("explain-ecs").value);
  const out = $("explain-result");
  const layer = $("explain-layer");
  layer.replaceChildren();
  try {
    const x = await api("/v1/explain?" + q);
    out.replaceChildren();
    const where = x.location.latitude === undefined ? "an unknown location" :
      `${x.location.latitude.toFixed(2)}, ${x.location.longitude.toFixed(2)}` +
      (x.location.country ? ` (${x.location.country})` : "");
    out.append(element("p", {}, `${x.lookupAddress} is in ${where}, class ${x.locationClass}` +
      (x.classPrefix ? ` (${x.classPrefix})` : "")));
    const list = element("ol", { class: "candidates" });
    for (const c of x.candidates) {
      const distance = c.distanceKm === undefined ? "" : `, ${Math.round(c.distanceKm)} km`;
      list.append(element("li", { "data-candidate": c.node }, `${c.node}${distance}: ${c.healthy ? "up" : "not up"}`));
    }
    out.append(list);
    out.append(element("p", { id: "explain-answer" },
      `answer (${x.outcome}, TTL ${x.ttl}): ${x.answer.join(", ") || "none"}`));
    if (x.location.latitude !== undefined) {
      const [cx, cy] = project(x.location.latitude, x.location.longitude);
      for (const address of x.answer) {
        const node = state.places.find((p) => p.ipv4 === address || p.ipv6 === address);
        if (!node) continue;
        const [nx, ny] = project(node.latitude, node.longitude);
        layer.append(element("svg:path", { class: "route", d: `M${cx} ${cy}L${nx} ${ny}`, "data-answer": node.id }));
      }
      layer.append(element("svg:circle", { class: "client", cx, cy, r: 1.6, "data-client": x.lookupAddress }));
    }
  } catch (e) {
    out.replaceChildren(element("p", { class: "error" }, e.message));
  }
}

// Start.

document.addEventListener("DOMContentLoaded", async () => {
  fetch("/ui/world.path").then((r) => r.text()).then((d) => $("world").setAttribute("d", d.trim()));
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("signin-error").textContent = "";
    try {
      await signIn($("token").value.trim());
    } catch (e) {
      $("signin-error").textContent = e.status === 401 ? "That token is not valid." : e.message;
    }
  });
  $("signout").addEventListener("click", signOut);
  $("explain-form").addEventListener("submit", explain);
  const saved = sessionStorage.getItem("nearcast-token");
  if (saved) signIn(saved).catch(() => sessionStorage.removeItem("nearcast-token"));
});
