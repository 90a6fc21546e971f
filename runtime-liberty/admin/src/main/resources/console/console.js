// The Postbox console: polls the admin API every two seconds and draws what it reads.
// Plain DOM and SVG, no libraries. Everything written into the page goes through textContent.
"use strict";

const samples = []; // {t, pending, published}
const MAX_POINTS = 90;

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) {
    throw new Error(path + " answered " + response.status);
  }
  return response.json();
}

function setText(id, value) {
  document.getElementById(id).textContent = String(value);
}

function cell(row, value, className) {
  const td = document.createElement("td");
  td.textContent = value === null || value === undefined ? "" : String(value);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function drawChart() {
  const svg = document.getElementById("chart");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  if (samples.length < 2) return;
  const rates = samples.slice(1).map((p, i) => {
    const prev = samples[i];
    const seconds = Math.max(0.001, (p.t - prev.t) / 1000);
    return Math.max(0, (p.published - prev.published) / seconds);
  });
  const pending = samples.slice(1).map(p => p.pending);
  const line = (values, color) => {
    const max = Math.max(1, ...values);
    const step = 600 / Math.max(1, MAX_POINTS - 1);
    const points = values.map((v, i) => `${(i * step).toFixed(1)},${(155 - (v / max) * 145).toFixed(1)}`);
    const path = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    path.setAttribute("points", points.join(" "));
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", color);
    path.setAttribute("stroke-width", "2");
    svg.appendChild(path);
  };
  line(pending, "#c0392b");
  line(rates, "#2471a3");
}

async function refreshOutbox() {
  const outbox = await getJson("../admin/outbox");
  setText("outbox-pending", outbox.pending);
  setText("outbox-failed", outbox.failed);
  setText("outbox-age", Math.round(outbox.oldestPendingAgeSeconds));
  setText("outbox-scheduled", outbox.scheduled);
  const outages = outbox.brokerOutages || [];
  setText("broker-status", outages.length === 0
    ? "Broker: available"
    : "Broker unavailable: " + outages.map(o => `${o.destination} since ${o.since} (${o.failedTries} tries)`).join("; "));
  samples.push({ t: Date.now(), pending: outbox.pending, published: outbox.publishedByThisInstance });
  if (samples.length > MAX_POINTS) samples.shift();
  drawChart();
}

async function refreshInbox() {
  const body = document.querySelector("#inbox tbody");
  const rows = await getJson("../admin/inbox");
  const sum = (field) => rows.reduce((total, s) => total + (s[field] || 0), 0);
  setText("inbox-processed", sum("processed"));
  setText("inbox-duplicates", sum("duplicates"));
  setText("inbox-dead-letters", sum("openDeadLetters"));
  body.replaceChildren();
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.dataset.subscription = s.subscription;
    for (const v of [s.subscription, s.mode, s.processed, s.duplicates, s.conflicts, s.retries,
                     s.openDeadLetters, s.deferredQueue === undefined ? "" : s.deferredQueue]) {
      cell(tr, v);
    }
    body.appendChild(tr);
  }
}

async function act(id, action) {
  const message = document.getElementById("dead-letter-message");
  const post = (query) => fetch(`../admin/dead-letters/${id}/${action}${query}`,
                                { method: "POST", credentials: "same-origin" });
  let response = await post("");
  let body = await response.json().catch(() => ({}));
  // A CONFLICT letter, or one older than the dedup window, needs the operator's decision.
  if (action === "replay" && response.status === 409 && /force/.test(body.error || "")
      && window.confirm(`${body.error}\n\nReplay it anyway?`)) {
    response = await post("?force=true");
    body = await response.json().catch(() => ({}));
  }
  message.textContent = response.ok
    ? `Dead letter ${id}: ${body.status}`
    : `Dead letter ${id}: ${body.error || response.status}`;
  await Promise.all([refreshDeadLetters(), refreshGroups()]);
}

// Bulk retry or discard of FAILED outbox rows by destination, type and creation time.
async function bulk(action) {
  const form = document.getElementById("outbox-bulk");
  const query = new URLSearchParams();
  for (const name of ["destination", "type", "from", "to"]) {
    const value = form.elements[name].value.trim();
    if (value) query.set(name, value);
  }
  const message = document.getElementById("outbox-bulk-message");
  if ([...query.keys()].length === 0) {
    if (!window.confirm(`No filter: ${action} every FAILED outbox row?`)) return;
    query.set("all", "true");
  } else if (action === "discard" && !window.confirm("Discard the matching FAILED rows? Their events are never sent.")) {
    return;
  }
  const response = await fetch(`../admin/outbox/failed/${action}?${query}`,
                               { method: "POST", credentials: "same-origin" });
  const body = await response.json().catch(() => ({}));
  message.textContent = response.ok
    ? (action === "retry" ? `${body.retried} rows sent again` : `${body.discarded} rows discarded`)
    : `Failed: ${body.error || response.status}`;
  await refreshOutbox();
}

document.querySelector("#outbox-bulk .bulk-retry").addEventListener("click", () => bulk("retry"));
document.querySelector("#outbox-bulk .bulk-discard").addEventListener("click", () => bulk("discard"));

async function refreshDeadLetters() {
  const body = document.querySelector("#dead-letters tbody");
  const letters = await getJson("../admin/dead-letters?limit=100");
  body.replaceChildren();
  for (const d of letters) {
    const tr = document.createElement("tr");
    tr.dataset.id = d.id;
    cell(tr, d.id);
    cell(tr, d.subscription);
    cell(tr, d.type);
    cell(tr, d.reason);
    cell(tr, d.error, "error").title = d.error || "";
    cell(tr, d.attempts);
    const actions = cell(tr, "");
    for (const action of ["replay", "discard"]) {
      const button = document.createElement("button");
      button.textContent = action === "replay" ? "Replay" : "Discard";
      button.className = action;
      button.addEventListener("click", () => act(d.id, action));
      actions.appendChild(button);
    }
    body.appendChild(tr);
  }
}

// Dead letters grouped by subscription, reason and error class, with bulk replay and discard of a
// group as seen (through its newest letter: later ones are left for another look).
async function actOnGroup(g, action) {
  const what = `${g.count} ${g.reason} letter(s) of ${g.subscription}` +
               (g.errorClass ? ` failing with ${g.errorClass}` : "");
  if (!window.confirm(action === "replay"
      ? `Replay ${what}? Do it after the cause is fixed.`
      : `Discard ${what}? Their events are never processed.`)) {
    return;
  }
  const query = new URLSearchParams({ subscription: g.subscription, reason: g.reason,
                                      through: String(g.lastId) });
  if (g.errorClass) query.set("errorClass", g.errorClass);
  const response = await fetch(`../admin/dead-letters/groups/${action}?${query}`,
                               { method: "POST", credentials: "same-origin" });
  const body = await response.json().catch(() => ({}));
  document.getElementById("dead-letter-group-message").textContent = !response.ok
    ? `Failed: ${body.error || response.status}`
    : action === "replay"
      ? `Replayed ${body.replayed}, already processed ${body.skippedAsDuplicates}, failed again ${body.failed}`
      : `Discarded ${body.discarded}`;
  await Promise.all([refreshGroups(), refreshDeadLetters()]);
}

async function refreshGroups() {
  const body = document.querySelector("#dead-letter-groups tbody");
  const groups = await getJson("../admin/dead-letters/groups");
  body.replaceChildren();
  for (const g of groups) {
    const tr = document.createElement("tr");
    tr.dataset.reason = g.reason;
    tr.dataset.errorClass = g.errorClass || "";
    cell(tr, g.subscription);
    cell(tr, g.reason);
    cell(tr, g.errorClass || "–");
    cell(tr, g.count);
    cell(tr, g.oldest);
    cell(tr, g.newest);
    cell(tr, g.sampleError, "error").title = g.sampleError || "";
    const actions = cell(tr, "");
    for (const action of ["replay", "discard"]) {
      const button = document.createElement("button");
      button.textContent = action === "replay" ? "Replay group" : "Discard group";
      button.className = "group-" + action;
      button.addEventListener("click", () => actOnGroup(g, action));
      actions.appendChild(button);
    }
    body.appendChild(tr);
  }
}

async function refreshLeases() {
  const list = document.getElementById("leases");
  const byOwner = await getJson("../admin/outbox/leases");
  list.replaceChildren();
  for (const [owner, partitions] of Object.entries(byOwner)) {
    const li = document.createElement("li");
    li.textContent = `${owner}: ${partitions.length} partitions (${partitions.join(", ")})`;
    list.appendChild(li);
  }
}

async function refresh() {
  try {
    await Promise.all([refreshOutbox(), refreshInbox(), refreshDeadLetters(), refreshGroups(),
                       refreshLeases()]);
    setText("updated", "updated " + new Date().toLocaleTimeString());
  } catch (e) {
    setText("updated", "update failed: " + e.message);
  }
}

refresh();
setInterval(refresh, 2000);
