// The operators' console: polls /console/api/status and draws the queues, the latest
// rounds and the replicas; opens a round (#round=ID) or a player (#player=ID, or
// ?player=ID) on request. Reads only; every value goes into the page as text, never as
// markup.
"use strict";

const POLL_MS = 3000;

// The last status, and when it arrived (the countdowns tick from it).
let status = null;
let statusAt = 0;
// The newest round each queue's plots show, so they reload only when a round is added.
const plotted = new Map();

// An element with attributes (`text` sets its text, `on` a click handler) and children.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "text") node.textContent = value;
    else if (key === "on") node.addEventListener("click", value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(value, digits) {
  return value === null || value === undefined ? "-" : Number(value).toFixed(digits);
}

function time(iso) {
  return iso ? new Date(iso).toISOString().slice(11, 19) : "-";
}

function stamp(iso) {
  return iso ? new Date(iso).toISOString().slice(0, 19).replace("T", " ") : "-";
}

// Seconds as the status shows them: whole, or one decimal under ten.
function secs(value) {
  return value === null || value === undefined ? "-" : num(value, value < 10 ? 1 : 0);
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// The page's selection: ?player= and ?round=, overridden by the same in the #hash.
function selection() {
  const chosen = new URLSearchParams(location.search);
  for (const [key, value] of new URLSearchParams(location.hash.slice(1))) chosen.set(key, value);
  return chosen;
}

// Open (or, with null, close) a round or a player, keeping the other one open.
function choose(key, value) {
  const chosen = selection();
  if (value === null) chosen.delete(key);
  else chosen.set(key, value);
  history.replaceState(null, "", location.pathname + (chosen.toString() ? "#" + chosen : ""));
  route();
}

function roundLink(id) {
  return el("a", { href: `#round=${id}`, "data-round": id, text: `#${id}`,
    on: (e) => { e.preventDefault(); choose("round", String(id)); } });
}

function playerLink(id) {
  return el("a", { href: `#player=${encodeURIComponent(id)}`, "data-player": id, text: id,
    on: (e) => { e.preventDefault(); choose("player", id); } });
}

function problem(text) {
  const banner = document.getElementById("problem");
  banner.hidden = !text;
  banner.textContent = text || "";
}

async function getJSON(path) {
  const response = await fetch(path, { cache: "no-store" });
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    throw new Error((body && body.error) || `${path} answered ${response.status}`);
  }
  return body;
}

// ---- the live part ----

async function refresh() {
  try {
    status = await getJSON("/console/api/status");
    statusAt = Date.now();
    problem(null);
    drawStatus();
  } catch (e) {
    problem(`Could not read the status: ${e.message}. Showing the last answer.`);
  }
}

function drawStatus() {
  document.getElementById("clock").textContent = `database time ${stamp(status.at)} UTC`;
  drawQueues();
  drawRounds();
  drawReplicas();
  drawServers();
  tick();
}

// The countdown as `matchmaker status` words it, its seconds counted down since the answer.
function countdown(queue) {
  if (queue.seconds_to_next === null || !/^in \d+ s/.test(queue.countdown)) return queue.countdown;
  const left = Math.max(0, queue.seconds_to_next - Math.floor((Date.now() - statusAt) / 1000));
  return queue.countdown.replace(/^in \d+ s/, `in ${left} s`);
}

function tick() {
  if (!status) return;
  for (const queue of status.queues) {
    const card = document.querySelector(`article.queue[data-queue="${CSS.escape(queue.queue)}"]`);
    if (card) card.querySelector(".countdown").textContent = countdown(queue);
  }
}

function latestLine(round) {
  if (!round) return el("p", { class: "latest empty", text: "no round yet" });
  const wait = round.wait_secs ? round.wait_secs.map(secs).join("/") : "-";
  return el("p", { class: "latest" }, "latest round ", roundLink(round.round_id),
    ` at ${time(round.committed_at)} (${round.trigger}): ${round.pool_size} pooled, `,
    `${plural(round.match_count, "match", "matches")}, ${round.left_over} left over`,
    round.rejected ? `, ${round.rejected} rejected` : "",
    `, score ${num(round.score, 3)}, wait p50/p90/max ${wait} s`);
}

function queueCard(queue) {
  const card = el("article", { class: "queue", "data-queue": queue.queue },
    el("h3", { text: queue.queue }),
    el("div", { class: "figures" },
      el("div", { class: "figure" }, el("span", { class: "label", text: "players waiting" }),
        el("span", { class: "value pool" })),
      el("div", { class: "figure" }, el("span", { class: "label", text: "next round" }),
        el("span", { class: "value countdown" }))),
    el("p", { class: "leader" }),
    el("p", { class: "pending" }),
    el("div", { class: "latest-slot" }),
    el("div", { class: "plots" },
      el("img", { class: "plot-pool", alt: `Pool size per round of ${queue.queue}`, width: 960, height: 330 }),
      el("img", { class: "plot-waits", alt: `Wait to match per round of ${queue.queue}`, width: 960, height: 330 })));
  return card;
}

function drawQueues() {
  const box = document.getElementById("queues");
  const cards = new Map([...box.querySelectorAll("article.queue")].map((c) => [c.dataset.queue, c]));
  if (status.queues.length === 0) {
    box.replaceChildren(el("p", { class: "empty", text: "No queue yet: this replica's config lists none and no player waits." }));
    return;
  }
  box.querySelectorAll(":scope > p").forEach((p) => p.remove());
  for (const queue of status.queues) {
    let card = cards.get(queue.queue);
    if (!card) card = queueCard(queue);
    cards.delete(queue.queue);
    box.append(card); // in the answer's order
    card.querySelector(".pool").textContent = String(queue.pool_size);
    const leader = queue.leader ? `leader ${queue.leader}` : "no live leader";
    card.querySelector(".leader").textContent =
      queue.here ? `${leader} · this replica: ${queue.here}` : `${leader} · not in this replica's config`;
    const pending = card.querySelector(".pending");
    pending.hidden = queue.pending_matches === 0;
    pending.textContent = `${plural(queue.pending_matches, "match", "matches")} waiting for the ready check`;
    card.querySelector(".latest-slot").replaceChildren(latestLine(queue.latest));
    const newest = queue.latest ? queue.latest.round_id : 0;
    if (plotted.get(queue.queue) !== newest) {
      plotted.set(queue.queue, newest);
      const base = `/console/plot/${encodeURIComponent(queue.queue)}`;
      card.querySelector(".plot-pool").src = `${base}/pool.svg?round=${newest}`;
      card.querySelector(".plot-waits").src = `${base}/waits.svg?round=${newest}`;
    }
  }
  for (const gone of cards.values()) gone.remove();
}

function drawRounds() {
  const body = document.querySelector("#rounds tbody");
  if (status.rounds.length === 0) {
    body.replaceChildren(el("tr", {}, el("td", { colspan: 10, class: "empty", text: "no rounds yet" })));
    return;
  }
  body.replaceChildren(...status.rounds.map((r) => el("tr", { "data-round-row": r.round_id },
    el("td", {}, roundLink(r.round_id)),
    el("td", { text: r.queue }),
    el("td", { text: r.trigger }),
    el("td", { text: time(r.committed_at) }),
    el("td", { class: "num", text: r.pool_size }),
    el("td", { class: "num", text: r.match_count }),
    el("td", { class: "num", text: r.rejected ? `${r.left_over}+${r.rejected}r` : r.left_over }),
    el("td", { class: "num", text: num(r.score, 3) }),
    el("td", { class: "num", text: r.wait_secs ? r.wait_secs.map(secs).join("/") : "-" }),
    el("td", { class: "num", text: num(r.solve_ms, 0) }))));
}

function drawReplicas() {
  const body = document.querySelector("#replicas tbody");
  document.getElementById("replicas-section").hidden = status.replicas.length === 0;
  body.replaceChildren(...status.replicas.map((r) => {
    const state = r.live ? "live" : r.heartbeat_secs === null ? "unregistered" : "gone";
    const heartbeat = r.heartbeat_secs === null ? "-" : `${Math.max(0, r.heartbeat_secs)} s ago`;
    const leads = r.heartbeat_secs === null ? `${r.leads.length}` : `${r.leads.length} of ${r.serves}`;
    return el("tr", {}, el("td", { text: r.replica }), el("td", { text: state }),
      el("td", { text: heartbeat }),
      el("td", { text: r.leads.length ? `${leads}: ${r.leads.join(", ")}` : leads }));
  }));
}

function drawServers() {
  document.getElementById("servers-section").hidden = status.servers.length === 0;
  document.querySelector("#servers tbody").replaceChildren(...status.servers.map((s) =>
    el("tr", {}, el("td", { text: s.region }), el("td", { class: "num", text: s.ready }),
      el("td", { class: "num", text: s.silent }), el("td", { class: "num", text: s.allocated }))));
}

// ---- a round ----

function panelHead(title, key) {
  return el("h2", {}, title, " ",
    el("a", { href: "#", class: "close", text: "close", on: (e) => { e.preventDefault(); choose(key, null); } }));
}

function table(headers, rows, numeric) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: numeric && numeric.includes(i) ? "num" : null, text: h })))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c, i) =>
      el("td", { class: numeric && numeric.includes(i) ? "num" : null }, c))))));
}

async function showRound(id) {
  const panel = document.getElementById("round-panel");
  panel.hidden = false;
  panel.replaceChildren(panelHead(`Round #${id}`, "round"), el("p", { class: "empty", text: "loading…" }));
  let r;
  try {
    r = await getJSON(`/console/api/round/${encodeURIComponent(id)}`);
  } catch (e) {
    panel.replaceChildren(panelHead(`Round #${id}`, "round"), el("p", { class: "problem", text: e.message }));
    return;
  }
  const s = r.stored;
  const waits = s.waits ? `${secs(s.waits.p50)} / ${secs(s.waits.p90)} / ${secs(s.waits.max)} s` : "-";
  const factorNames = [...new Set([...Object.keys(s.factors), ...r.matches.flatMap((m) => Object.keys(m.factors))])].sort();
  panel.replaceChildren(
    panelHead(`Round #${r.round_id} · ${r.queue}`, "round"),
    el("p", { class: "meta", text: `committed ${stamp(r.committed_at)} UTC · trigger ${r.trigger} · pool ${r.pool_size} · ` +
      `seed ${r.seed} · ${r.strategy} · budget ${r.budget} · config ${r.config_hash}` }),
    el("p", { class: "hint" }, "Solve it again, or with other weights: ", el("code", { text: `matchmaker replay ${r.round_id}` })),
    table(["matches", "matched", "left over", "rejected", "cancelled meanwhile", "score", "wait p50 / p90 / max", "solve ms"],
      [[s.matches, s.matched, s.left_over, s.rejected, r.dropped_by_cancel, num(s.score, 4), waits, num(s.solve_ms, 0)]],
      [0, 1, 2, 3, 4, 5, 6, 7]),
    el("h3", { text: plural(r.matches.length, "match", "matches") }),
    table(["match", "score", "teams: player (skill, waited)"],
      r.matches.map((m) => [m.match_id, num(m.score, 4),
        el("div", {}, m.teams.map((team, t) => el("span", { class: "team" }, `team ${t}: `,
          team.flatMap((p, i) => [i ? ", " : "", playerLink(p.player),
            ` (${num(p.skill, 0)}, ${secs(p.waited_s)} s)`]))))]),
      [0, 1]),
    el("h3", { text: "Factors: the round's mean, then each match" }),
    el("div", { class: "scroll" }, table(["factor", "mean", ...r.matches.map((m) => `#${m.match_id}`)],
      factorNames.map((f) => [f, num(s.factors[f], 3), ...r.matches.map((m) => num(m.factors[f], 3))]),
      [1, ...r.matches.map((_, i) => i + 2)])),
    r.left_over.length ? el("h3", { text: `Left over: ${r.left_over.length}` }) : null,
    r.left_over.length ? table(["player", "outcome", "why"],
      r.left_over.map((l) => [playerLink(l.player), el("span", { class: "outcome-left", text: l.outcome }), l.reason])) : null);
}

// ---- a player ----

function queueOf(name) {
  return status && status.queues.find((q) => q.queue === name);
}

// What the player waits for now, if an entry of theirs is queued.
function waitingNow(p) {
  const entry = p.entries.find((e) => e.status === "queued");
  if (!entry) return null;
  const queue = queueOf(entry.queue);
  const next = queue ? `; ${queue.pool_size} waiting, next round ${countdown(queue)}` : "";
  return el("p", { class: "why" }, el("b", { text: "Waiting now: " }),
    `queued in ${entry.queue} since ${stamp(entry.enqueued_at)} UTC${next}.`);
}

function roundOutcome(r) {
  if (r.outcome === "matched") {
    return el("span", { class: "outcome-matched", text: `matched: match ${r.match_id}, team ${r.team}` });
  }
  return el("span", {}, el("span", { class: "outcome-left", text: r.outcome }), `: ${r.reason || "(no reason stored)"}`);
}

async function showPlayer(id) {
  const panel = document.getElementById("player-panel");
  panel.hidden = false;
  document.getElementById("player-id").value = id;
  panel.replaceChildren(panelHead(`Player ${id}`, "player"), el("p", { class: "empty", text: "loading…" }));
  let p;
  try {
    p = await getJSON(`/console/api/player/${encodeURIComponent(id)}`);
  } catch (e) {
    panel.replaceChildren(panelHead(`Player ${id}`, "player"), el("p", { class: "problem", text: e.message }));
    return;
  }
  const parts = [panelHead(`Player ${p.player}`, "player")];
  if (p.rounds.length === 0 && p.entries.length === 0) {
    parts.push(el("p", { class: "empty", text: "No entries and no rounds: this id never enqueued (or its history was pruned)." }));
  } else {
    parts.push(waitingNow(p));
    parts.push(el("h3", { text: `Rounds that pooled them, newest first: ${p.rounds.length}` }));
    parts.push(table(["round", "queue", "at (UTC)", "pool", "what became of them"],
      p.rounds.map((r) => [roundLink(r.round_id), r.queue, stamp(r.committed_at), r.pool_size, roundOutcome(r)]), [3]));
    parts.push(el("h3", { text: "Latest entries" }));
    parts.push(table(["entry", "queue", "status", "since (UTC)", "enqueued", "reason"],
      p.entries.map((e) => [e.entry_id, e.queue, e.status, stamp(e.updated_at), time(e.enqueued_at), e.reason || ""]), [0]));
  }
  if (p.ratings.length) {
    parts.push(el("h3", { text: "Ratings" }));
    parts.push(table(["pool", "login", "rating", "±", "matches", "last results (match: change)"],
      p.ratings.map((r) => [r.pool, r.owner, num(r.rating, 0), num(r.uncertainty, 0), r.matches,
        r.recent.map(([m, before, after, left]) => `${m}: ${after - before >= 0 ? "+" : ""}${num(after - before, 0)}${left ? " (left early)" : ""}`).join(", ") || "none yet"]),
      [2, 3, 4]));
  }
  parts.push(el("details", {}, el("summary", {}, "As ", el("code", { text: `matchmaker explain ${p.player}` }), " prints it"),
    el("pre", { class: "explain-text", text: p.text })));
  panel.replaceChildren(...parts);
}

// ---- wiring ----

let shown = { round: null, player: null };

function route() {
  const chosen = selection();
  for (const key of ["round", "player"]) {
    const value = chosen.get(key);
    if (value === shown[key]) continue;
    shown[key] = value;
    if (value === null || value === "") {
      shown[key] = null;
      document.getElementById(`${key}-panel`).hidden = true;
    } else if (key === "round") {
      showRound(value);
    } else {
      showPlayer(value);
    }
  }
}

document.getElementById("search").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = document.getElementById("player-id").value.trim();
  if (id) choose("player", id);
});
window.addEventListener("hashchange", route);
refresh().then(route);
setInterval(refresh, POLL_MS);
setInterval(tick, 1000);
