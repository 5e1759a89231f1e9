// Caldera dashboard: plain JavaScript, no build step. The bearer token lives in sessionStorage
// (this tab only) and travels as an Authorization header; it is never written into the page.
"use strict";
const TOKEN_KEY = "caldera.token";
const REFRESH_MS = 2000;
let timer = null;
let paused = false;

const $ = (id) => document.getElementById(id);
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k === "href") node.href = v; else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
function pill(text, kind) { return el("span", {class: "pill " + (kind || "")}, text); }
function phaseKind(phase) {
  if (["Running", "Completed", "Succeed", "Succeeded", "True", "Released"].includes(phase)) return "ok";
  if (["Failed", "Aborted", "Terminated", "False", "Cancelled"].includes(phase)) return "bad";
  return "warn";
}
function fill(tableId, rows, empty) {
  const body = $(tableId).tBodies[0];
  body.replaceChildren(...rows);
  if (!rows.length) body.append(el("tr", {}, el("td", {colspan: "10", class: "muted"}, empty || "none")));
}
function fmt(n) {
  if (n === null || n === undefined) return "";
  const v = Number(n);
  if (!Number.isFinite(v)) return String(n);
  if (Math.abs(v) >= 1 << 30 && v % (1 << 20) === 0) return (v / (1 << 30)).toFixed(0) + "Gi";
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}
function bar(used, total) {
  const pct = total > 0 ? Math.round(100 * used / total) : 0;
  const span = el("span"); span.style.width = pct + "%";
  return el("span", {}, el("span", {class: "bar"}, span), `${used} / ${total}`);
}
function jobHref(j) { return `/ui/jobs/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.name)}`; }

async function api(path) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) throw {login: true};
  const response = await fetch(path, {headers: {"Authorization": "Bearer " + token}, cache: "no-store"});
  if (response.status === 401) throw {login: true, message: "the server did not accept this token"};
  if (!response.ok) throw {message: `${path}: HTTP ${response.status} ${(await response.text()).slice(0, 300)}`};
  return response.json();
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  stop();
  for (const id of ["overview", "job", "session"]) $(id).hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").focus();
}

function renderSummary(doc) {
  const s = doc.summary;
  const used = s.gpus.total - s.gpus.free;
  const cards = [["clusters Ready", `${s.readyClusters} / ${s.clusters}`], ["GPUs used", `${used} / ${s.gpus.total}`],
    ["jobs", s.jobs], ...Object.entries(s.jobsByPhase).map(([p, n]) => [p, n])];
  const lat = doc.placementLatency.observed;
  if (lat && lat.count) cards.push(["placement p99", `${(lat.p99 * 1000).toFixed(0)} ms`]);
  $("summary").replaceChildren(...cards.map(([k, v]) => el("div", {class: "card"}, el("div", {class: "v"}, v),
    el("div", {class: "k"}, k))));
}

// GPU use over time as an SVG line: used GPUs (filled) under the total (dashed), from Prometheus when the
// server was given --prometheus-url, else from the server's samples (doc.gpuHistory; doc.gpuHistorySource
// says which, and why Prometheus was not used). No chart library: a polyline over a fixed viewBox.
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}
function renderGpuChart(points, source) {
  const box = $("gpu-chart");
  const from = source || {source: "server"};
  box.dataset.source = from.source;
  const origin = from.source === "prometheus" ? `from Prometheus (${from.url})` : "from the server's samples";
  $("gpu-origin").textContent = from.source === "prometheus" ? "(from Prometheus, every 5 s, last hour)"
    : "(sampled by the server every 5 s, last hour)";
  box.dataset.peak = Math.max(0, ...(points || []).map((p) => p.used));
  const note = from.problem ? [el("div", {class: "muted", "data-problem": "true"}, from.problem)] : [];
  if (!points || points.length < 2) {
    box.replaceChildren(el("p", {class: "muted"}, "collecting samples (one every 5 s)…"), ...note);
    return;
  }
  const W = 900, H = 160, L = 40, B = 20, T = 8;
  const t0 = Date.parse(points[0].time), t1 = Date.parse(points[points.length - 1].time);
  const top = Math.max(1, ...points.map((p) => p.total));
  const x = (p) => L + (W - L - 8) * (Date.parse(p.time) - t0) / Math.max(1, t1 - t0);
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const line = (key) => points.map((p) => `${x(p).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
  const chart = svg("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "GPUs used over time"});
  chart.append(svg("polygon", {points: `${L},${y(0)} ${line("used")} ${x(points[points.length - 1])},${y(0)}`, class: "used-area"}),
    svg("polyline", {points: line("used"), class: "used"}), svg("polyline", {points: line("total"), class: "total"}));
  for (const v of [0, top]) {
    const label = svg("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end"}); label.textContent = v; chart.append(label);
  }
  const span = svg("text", {x: W - 8, y: H - 4, "text-anchor": "end"});
  span.textContent = `${Math.round((t1 - t0) / 60000)} min`; chart.append(span);
  const last = points[points.length - 1];
  box.replaceChildren(chart, el("div", {class: "muted"}, `now ${last.used} of ${last.total} GPUs used (dashed: total), ${origin}`),
    ...note);
}

function renderClusters(doc) {
  fill("clusters", doc.clusters.map((c) => el("tr", {"data-cluster": c.name},
    el("td", {}, c.name), el("td", {}, pill(c.ready, phaseKind(c.ready)), " ", el("span", {class: "muted"}, c.readyReason)),
    el("td", {class: "num"}, c.leaseAgeSeconds === null ? "no lease" : `${c.leaseAgeSeconds.toFixed(1)} s`),
    el("td", {class: "num"}, `${c.nodes.ready} / ${c.nodes.total}`),
    el("td", {}, bar(c.gpus.total - c.gpus.free, c.gpus.total)),
    el("td", {}, Object.entries(c.gpus.byModel).map(([m, g]) => `${m}: ${g.total - g.free}/${g.total}`).join(", ")),
    el("td", {class: "num"}, c.gpus.fragmented || 0),
    el("td", {}, c.taints.map((t) => `${t.key}:${t.effect}`).join(", ")))), "no member clusters");
}

function renderQueues(doc) {
  // one fleet row per queue (its capability holds across the fleet), each cluster's report under it
  const rows = [];
  for (const q of doc.queues) {
    const resources = [...new Set([...Object.keys(q.deserved), ...Object.keys(q.allocated), ...Object.keys(q.capability)])].sort();
    resources.forEach((r, i) => rows.push(el("tr", {"data-queue": q.name, "data-scope": "fleet"},
      el("td", {}, i === 0 ? q.name : ""), el("td", {}, i === 0 ? "fleet" : ""), el("td", {}, r),
      el("td", {class: "num"}, fmt(q.deserved[r])),
      el("td", {class: "num"}, fmt(q.allocated[r] || 0)), el("td", {class: "num"}, fmt(q.capability[r])))));
    for (const c of q.perCluster || []) {
      resources.forEach((r, i) => rows.push(el("tr", {"data-queue": q.name, "data-scope": c.cluster, class: "muted"},
        el("td", {}, ""), el("td", {}, i === 0 ? c.cluster : ""), el("td", {}, r),
        el("td", {class: "num"}, fmt(c.deserved[r])), el("td", {class: "num"}, fmt(c.allocated[r] || 0)),
        el("td", {class: "num"}, fmt(c.capability[r])))));
    }
  }
  fill("queues", rows, "no queues reported");
}

function shares(j) { return (j.clusters || []).map((s) => `${s.name}: ${s.replicas}`).join(", "); }

// Filters by namespace, queue and phase: the choices come from the jobs listed; a choice that
// disappears falls back to "all". The namespace filter applies to the event groups too.
const FILTERS = ["namespace", "queue", "phase"];
let lastOverview = null;
function filterChoices(doc) {
  for (const key of FILTERS) {
    const select = $(`filter-${key}`);
    const values = [...new Set(doc.jobs.map((j) => j[key] || ""))].filter((v) => v).sort();
    const current = select.value;
    select.replaceChildren(el("option", {value: ""}, "all"), ...values.map((v) => el("option", {value: v}, v)));
    select.value = values.includes(current) ? current : "";
  }
}
function chosen(key) { return $(`filter-${key}`).value; }
function keptJob(j) { return FILTERS.every((key) => !chosen(key) || (j[key] || "") === chosen(key)); }
function keptGroup(g) { return !chosen("namespace") || g.namespace === chosen("namespace"); }
for (const key of FILTERS) {
  $(`filter-${key}`).addEventListener("change", () => { if (lastOverview) { renderJobs(lastOverview); renderEvents(lastOverview); } });
}

function renderJobs(doc) {
  const kept = doc.jobs.filter(keptJob);
  $("filter-count").textContent = kept.length === doc.jobs.length ? `${doc.jobs.length} jobs` : `${kept.length} of ${doc.jobs.length} jobs`;
  fill("jobs", kept.map((j) => el("tr", {"data-job": `${j.namespace}/${j.name}`},
    el("td", {}, el("a", {href: jobHref(j)}, `${j.namespace}/${j.name}`)), el("td", {}, j.queue),
    el("td", {}, pill(j.phase, phaseKind(j.phase))), el("td", {}, shares(j)), el("td", {class: "num"}, j.minAvailable ?? ""),
    el("td", {}, j.twoPhase ? pill(j.twoPhase, phaseKind(j.twoPhase)) : ""), el("td", {class: "muted"}, j.waitingReason || ""))),
    doc.jobs.length ? "no job matches the filters" : "no jobs");
}

function renderEvents(doc) {
  fill("events", groupRows((doc.eventGroups || []).filter(keptGroup)), "no events yet");
}

function eventRows(events) {
  return events.map((e) => el("tr", {}, el("td", {class: "muted"}, e.time), el("td", {}, pill(e.type, e.type === "Warning" ? "bad" : "")),
    el("td", {}, e.reason), el("td", {}, e.object), el("td", {}, e.message + (e.count > 1 ? ` (x${e.count})` : ""))));
}

// Events grouped per object: one collapsed row per object (its latest event and how many there
// are); a click opens the group. Open groups stay open across refreshes.
const openGroups = new Set();
function groupRows(groups) {
  const rows = [];
  for (const g of groups) {
    const key = `${g.namespace}/${g.object}`;
    const open = openGroups.has(key);
    const e = g.latest;
    const toggle = el("button", {class: "group-toggle", "aria-expanded": String(open)},
      `${open ? "▾" : "▸"} ${g.count} event${g.count === 1 ? "" : "s"}`);
    toggle.addEventListener("click", () => {
      if (openGroups.has(key)) openGroups.delete(key); else openGroups.add(key);
      for (const row of document.querySelectorAll(`tr[data-group-child="${CSS.escape(key)}"]`)) row.hidden = !row.hidden;
      toggle.setAttribute("aria-expanded", String(openGroups.has(key)));
      toggle.textContent = `${openGroups.has(key) ? "▾" : "▸"} ${g.count} event${g.count === 1 ? "" : "s"}`;
    });
    rows.push(el("tr", {class: "group", "data-group": key}, el("td", {class: "muted"}, e.time),
      el("td", {}, pill(g.warnings ? "Warning" : "Normal", g.warnings ? "bad" : "")), el("td", {}, e.reason),
      el("td", {}, g.namespace ? `${g.namespace}/${g.object}` : g.object, " ", toggle), el("td", {}, e.message)));
    for (const row of eventRows(g.events)) {
      row.setAttribute("data-group-child", key); row.className = "group-child"; row.hidden = !open;
      rows.push(row);
    }
  }
  return rows;
}

function renderOverview(doc) {
  lastOverview = doc;
  renderSummary(doc); renderGpuChart(doc.gpuHistory, doc.gpuHistorySource); renderClusters(doc); renderQueues(doc); filterChoices(doc); renderJobs(doc); renderEvents(doc);
}

function renderJob(j) {
  $("job-title").textContent = `Job ${j.namespace}/${j.name}`;
  const facts = [["Phase", pill(j.phase, phaseKind(j.phase))], ["Reason", j.reason], ["Queue", j.queue],
    ["minAvailable", j.minAvailable ?? ""], ["Two-phase", j.twoPhase || "single cluster"],
    ["Why pending", j.waitingReason || ""], ["Created", j.createdAt || ""], ["Placed", j.scheduledAt || ""],
    ["Pods", `${j.running} running, ${j.pending} pending, ${j.succeeded} succeeded, ${j.failed} failed`]];
  $("job-facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  const holds = Object.fromEntries(j.works.map((w) => [w.cluster, w]));
  fill("job-shares", (j.clusters || []).map((s) => el("tr", {"data-cluster": s.name}, el("td", {}, s.name),
    el("td", {class: "num"}, s.replicas), el("td", {class: "num"}, s.minAvailable ?? ""), el("td", {}, pill(s.phase || "Pending", phaseKind(s.phase))),
    el("td", {class: "num"}, s.running || 0), el("td", {class: "num"}, s.succeeded || 0), el("td", {class: "num"}, s.failed || 0),
    el("td", {}, s.gangPhase || ""), el("td", {}, holds[s.name] && holds[s.name].hold ? "held" : ""),
    el("td", {class: "muted"}, s.reason || ""))), "not placed yet");
  fill("job-pods", j.pods.map((p) => el("tr", {}, el("td", {}, p.cluster), el("td", {}, p.task), el("td", {class: "num"}, p.total),
    el("td", {}, Object.entries(p.phases).map(([ph, n]) => `${ph}: ${n}`).join(", ")))), "no pods reported yet");
  fill("job-ranks", (j.podList || []).map((p) => el("tr", {"data-pod": p.name, "data-cluster": p.cluster},
    el("td", {}, p.name), el("td", {}, p.task), el("td", {class: "num"}, p.index ?? ""), el("td", {class: "num"}, p.rank),
    el("td", {}, p.cluster), el("td", {}, p.node || "<none>"), el("td", {}, pill(p.phase, phaseKind(p.phase))),
    el("td", {}, logLink(p)))), "no pods reported yet");
  fill("job-events", groupRows(j.eventGroups || []), "no events");
}

function logLink(p) {
  const link = el("a", {href: p.log, class: "log-link", "data-log": p.name}, "log");
  link.addEventListener("click", (event) => { event.preventDefault(); showLog(p); });
  return link;
}

async function showLog(p) {
  // a link cannot carry the bearer token: fetch the log (RBAC get pods/log) and show it here
  const token = sessionStorage.getItem(TOKEN_KEY);
  $("job-log-box").hidden = false;
  $("job-log-title").textContent = `Log of ${p.namespace}/${p.name} (cluster ${p.cluster}, node ${p.node || "none"})`;
  $("job-log").textContent = "loading…";
  try {
    const response = await fetch(p.log, {headers: {"Authorization": "Bearer " + token}, cache: "no-store"});
    const text = await response.text();
    $("job-log").textContent = response.ok ? text : `HTTP ${response.status}: ${text.slice(0, 500)}`;
    $("job-log").dataset.pod = p.name;
  } catch (err) {
    $("job-log").textContent = String(err);
  }
}

function route() {
  const m = location.pathname.match(/^\/ui\/jobs\/([^/]+)\/([^/]+)\/?$/);
  return m ? {page: "job", path: `/ui/api/jobs/${m[1]}/${m[2]}`} : {page: "overview", path: "/ui/api/overview"};
}

async function refresh() {
  const {page, path} = route();
  try {
    const doc = await api(path);
    $("login").hidden = true;
    $("session").hidden = false;
    $(page).hidden = false;
    $("error").textContent = "";
    if (page === "job") renderJob(doc); else renderOverview(doc);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "true";
  } catch (err) {
    if (err && err.login) { showLogin(err.message); return; }
    $("error").textContent = (err && err.message) || String(err);
  }
}

function start() { stop(); if (!paused && sessionStorage.getItem(TOKEN_KEY)) timer = setInterval(refresh, REFRESH_MS); }
function stop() { if (timer !== null) clearInterval(timer); timer = null; }

$("login-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const field = $("token");
  sessionStorage.setItem(TOKEN_KEY, field.value.trim());
  field.value = "";
  refresh().then(start);
});
$("logout").addEventListener("click", () => showLogin(""));
$("pause").addEventListener("click", () => {
  paused = !paused; $("pause").textContent = paused ? "Resume" : "Pause";
  if (paused) stop(); else start();
});
if (sessionStorage.getItem(TOKEN_KEY)) { refresh().then(start); } else { showLogin(""); }
