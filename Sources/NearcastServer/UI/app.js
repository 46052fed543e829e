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
  // Without a state directory there is no audit log (404): say so rather than show an empty table.
  api("/v1/audit?last=1").catch((e) => {
    if (e.status !== 404) return;
    $("audit-table").hidden = true;
    $("audit-none").hidden = false;
  });
  follow();
  loadZones();
  state.zonesTimer = setInterval(loadZones, 10000);
}

// The zones (GET /v1/zones), read again every 10 s: a secondary zone's refresh moves on its own.
async function loadZones() {
  try { drawZones(await api("/v1/zones")); } catch (_) { /* shown again at the next read */ }
}

const utc = (seconds) => (seconds ? new Date(seconds * 1000).toISOString().slice(0, 19).replace("T", " ") : "");

function drawZones(zones) {
  const body = $("zones-table").tBodies[0];
  body.replaceChildren();
  for (const z of zones) {
    const s = z.secondary;
    const row = element("tr", { "data-zone": z.origin, "data-state": s ? s.state : "served" });
    row.append(element("td", {}, z.origin));
    row.append(element("td", {}, s && s.state !== "served" ? "" : String(z.serial)));
    row.append(element("td", {}, s && s.state !== "served" ? "" : String(z.records)));
    const catalog = { produce: "catalog made here", consume: "catalog followed" }[z.catalog];
    const source = (s ? `secondary of ${s.primaries.join(", ")}` + (s.state === "served" ? "" : ` (${s.state}: SERVFAIL)`)
      + (s.transferredBy ? `; transferred by ${s.transferredBy}` : "")
      : z.file) + (catalog ? `; ${catalog}` : "") + (z.memberOf ? `; listed in catalog ${z.memberOf}` : "");
    row.append(element("td", {}, source));
    row.append(element("td", {}, s ? utc(s.lastRefresh) : ""));
    row.append(element("td", {}, s ? utc(s.nextRefresh) : ""));
    row.append(element("td", { class: s && s.lastError ? "error" : "" }, s?.lastError || ""));
    body.append(row);
  }
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
  } else if (event === "audit") {
    drawAudit(value);
  }
}

// The audit log's last entries, newest first: the server sends them whenever one is added. In a
// fleet they are every server's, each naming the server that took the change.

function drawAudit(entries) {
  const body = $("audit-table").tBodies[0];
  body.replaceChildren();
  for (const e of [...entries].reverse()) {
    const row = element("tr", { "data-action": e.action, "data-target": e.target, "data-server": e.server || "" });
    row.append(element("td", {}, e.time.replace("T", " ").replace(/\.\d+Z$/, "")));
    row.append(element("td", {}, e.server ? `${e.who} on ${e.server}` : e.who));
    row.append(element("td", {}, e.detail ? `${e.action} (${e.detail})` : e.action));
    row.append(element("td", {}, e.target));
    row.append(element("td", {}, e.outcome));
    body.append(row);
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

// In a fleet, each observer's view of a node ("s0 down, s1 up"), this server's first; else "".
function seenBy(id) {
  const views = state.nodes.get(id)?.observers;
  return views?.length ? views.map((v) => `${v.server} ${v.view}`).join(", ") : "";
}

// Moves labels (SVG texts in translated groups, with the groups' x and y) down a line at a time
// until each overlaps none placed before it, so nearby nodes' names stay readable; the marks stay
// put. Every box is read before any label moves: one layout, not one per label.
function placeLabels(labels) {
  let boxes;
  try { boxes = labels.map(([label]) => label.getBBox()); } catch (_) { return; } // not rendered: left as is
  const placed = [];
  labels.forEach(([label, x, y], i) => {
    const box = boxes[i];
    let dy = 0;
    const at = () => ({ x0: x + box.x, y0: y + box.y + dy, x1: x + box.x + box.width, y1: y + box.y + box.height + dy });
    const hits = (r) => placed.some((p) => r.x0 < p.x1 && p.x0 < r.x1 && r.y0 < p.y1 && p.y0 < r.y1);
    for (let k = 0; k < 8 && hits(at()); k++) dy += box.height;
    if (dy) label.setAttribute("y", 1 + dy);
    placed.push(at());
  });
}

function drawNodes() {
  const layer = $("nodes-layer");
  layer.replaceChildren();
  const labels = [];
  for (const place of state.places) {
    const s = nodeState(place.id);
    const [x, y] = project(place.latitude, place.longitude);
    const g = element("svg:g", {
      class: `node state-${s}`, transform: `translate(${x} ${y})`, "data-node": place.id, "data-state": s,
    });
    g.append((SHAPES[s] || SHAPES.up)());
    const label = element("svg:text", { x: 3, y: 1 }, `${place.id} ${s}`);
    g.append(label);
    const seen = seenBy(place.id);
    g.append(element("svg:title", {},
      `${place.id}: ${s}; pools ${place.pools.join(", ") || "none"}` + (seen ? `; seen: ${seen}` : "")));
    layer.append(g);
    labels.push([label, x, y]);
  }
  placeLabels(labels);
  drawTable();
}

// The table is updated in place, row by row: a node's actions keep the duration chosen and the
// focus they have while events redraw the rest.
function drawTable() {
  const table = $("nodes-table");
  const body = table.tBodies[0];
  table.classList.toggle("read-only", !state.caller.mayChangeNodes);
  const ids = [...new Set([...state.places.map((p) => p.id), ...state.nodes.keys()])].sort();
  const rows = new Map([...body.rows].map((row) => [row.dataset.node, row]));
  for (const [id, row] of rows) if (!ids.includes(id)) row.remove();
  ids.forEach((id, i) => {
    const row = rows.get(id) || nodeRow(id);
    fillNodeRow(row, id);
    if (body.rows[i] !== row) body.insertBefore(row, body.rows[i] || null);
  });
}

function nodeRow(id) {
  const row = element("tr", { "data-node": id });
  for (let i = 0; i < 5; i++) row.append(element("td"));
  const actions = element("td", { class: "actions" });
  if (state.caller.mayChangeNodes) actions.append(...nodeActions(id));
  row.append(actions);
  return row;
}

function fillNodeRow(row, id) {
  const n = state.nodes.get(id) || {};
  const place = state.places.find((p) => p.id === id);
  const [name, cell, pools, override, reason] = row.cells;
  name.textContent = id;
  cell.className = `state state-${n.state || "unknown"}`;
  cell.textContent = n.state || "unknown";
  const seen = seenBy(id);
  if (seen) cell.append(element("div", { class: "observers", "data-observers": id }, `seen: ${seen}`));
  pools.textContent = place ? place.pools.join(", ") : "";
  const left = n.overrideSecondsLeft ? ` (${Math.round(n.overrideSecondsLeft)} s left)` : "";
  override.textContent = n.override ? n.override + left : "";
  reason.textContent = n.lastReason || "";
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

// Each series sums counters of a sample: XDP's verdicts (`xdp`, as /v1/stats names them) and the
// slow path's replies by rcode (`slow`); "limited" is both paths' rate limiting and XDP's pass budget.
const SLOW_OTHER = (s) => sum(s.slow, "") - (s.slow?.NOERROR || 0) - (s.slow?.NXDOMAIN || 0) - sum(s.slow, "rrl_");
const SERIES = [
  ["XDP answered", (s) => (s.xdp?.answered || 0) + (s.xdp?.answered_nxdomain || 0), "xdp"],
  ["XDP geo", (s) => (s.xdp?.answered_geo || 0) + (s.xdp?.answered_geo_all_down || 0), "xdp"],
  // Not pass_not_dns nor pass_not_ours: the other traffic the program lets by is no query of ours.
  ["passed to the slow path", (s) => sum(s.xdp, "pass_") - (s.xdp?.pass_not_dns || 0) - (s.xdp?.pass_not_ours || 0), "xdp"],
  ["limited", (s) => sum(s.xdp, "limit_") + sum(s.xdp, "rrl_") + sum(s.slow, "rrl_")],
  ["slow path NOERROR", (s) => s.slow?.NOERROR || 0],
  ["slow path NXDOMAIN", (s) => s.slow?.NXDOMAIN || 0],
  ["slow path other rcodes", SLOW_OTHER],
];

function sum(counters, prefix) {
  return Object.entries(counters || {}).filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);
}

function drawCharts() {
  const box = $("charts");
  box.replaceChildren();
  const samples = state.samples;
  if (samples.length < 2) {
    box.textContent = "collecting…";
    return;
  }
  const xdp = Boolean(samples[samples.length - 1].xdp);
  if (!xdp) box.append(element("p", { class: "note" }, "XDP fast path: off (every query goes to the slow path)"));
  for (const [label, value, needs] of SERIES) {
    if (needs === "xdp" && !xdp) continue;
    const rates = [];
    for (let i = 1; i < samples.length; i++) {
      const dt = samples[i].uptime - samples[i - 1].uptime;
      rates.push(dt > 0 ? Math.max(0, value(samples[i]) - value(samples[i - 1])) / dt : 0);
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
