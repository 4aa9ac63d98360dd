// hydra-vr page: ask / ground with live steps, and a browser of eval runs.
// Plain JS, no build step, no network beyond this server. Traces are rendered defensively:
// fields that exist are shown, unknown ones go under "more", nothing is assumed present.
"use strict";

const PALETTE = ["#2f6fde", "#e8710a", "#9334e6", "#d01884", "#0f9d9a", "#b06000", "#5f6368", "#188038"];
const KNOWN_STEP_KEYS = new Set(["step", "options", "probabilities", "choice", "replans", "instruction", "action",
  "attempts", "code", "result", "feedback", "observation", "decision", "guess", "seconds", "llm", "usage", "role",
  "depth", "boxes", "extra"]);

// ------------------------------------------------------------------ token and fetch
// A server started with --token: open the page as /?token=... once; the token stays in this tab only.
(function keepToken() {
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    sessionStorage.setItem("hydra-vr-token", params.get("token"));
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }
})();

function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  const token = sessionStorage.getItem("hydra-vr-token");
  if (token) headers["Authorization"] = "Bearer " + token;
  return headers;
}

async function api(url, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = authHeaders(opts.headers);
  const res = await fetch(url, opts);
  if (!res.ok) {
    let detail = res.status + " " + res.statusText;
    try { const body = await res.json(); if (body && body.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail); } catch (e) { /* not JSON */ }
    const err = new Error(detail);
    err.status = res.status;
    throw err;
  }
  return res;
}

async function apiJSON(url, options) { return (await api(url, options)).json(); }

// Images through fetch, so that a bearer token can be sent with them.
async function showImage(img, url) {
  const blob = await (await api(url)).blob();
  if (img.dataset.objectUrl) URL.revokeObjectURL(img.dataset.objectUrl);
  const objectUrl = URL.createObjectURL(blob);
  img.dataset.objectUrl = objectUrl;
  await new Promise((resolve, reject) => { img.onload = resolve; img.onerror = () => reject(new Error("the image did not load")); img.src = objectUrl; });
}

// Server-Sent Events over fetch (EventSource cannot send an Authorization header).
async function streamEvents(url, onEvent) {
  const res = await api(url, { headers: { Accept: "text/event-stream" } });
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data += line.slice(5).trim();
      }
      if (data) onEvent(name, JSON.parse(data));
    }
  }
}

// ------------------------------------------------------------------ small DOM helpers
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "style") node.setAttribute("style", v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const fmt = (v) => (v === null || v === undefined) ? "-" : (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : (typeof v === "string" ? v : JSON.stringify(v)));

function keyValues(obj, keys) {
  const dl = el("dl", { class: "kv" });
  for (const k of keys || Object.keys(obj)) {
    if (!(k in obj)) continue;
    dl.append(el("dt", {}, k.replace(/_/g, " ")), el("dd", {}, fmt(obj[k])));
  }
  return dl;
}

// ------------------------------------------------------------------ boxes
function boxesText(boxes) {
  const list = (Array.isArray(boxes) ? boxes : []).filter(asBox);
  return list.length ? list.map((b) => "[" + b.map((v) => Math.round(v)).join(", ") + "]").join(" ") : "no box";
}

function asBox(b) {
  return Array.isArray(b) && b.length === 4 && b.every((v) => typeof v === "number" && isFinite(v)) ? b : null;
}

// Boxes a step found: a common `boxes` field, patch variables (box / boxes), or the final answer.
function stepBoxes(step) {
  const out = [], seen = new Set();
  const add = (b) => { const box = asBox(b); if (box && !seen.has(box.join())) { seen.add(box.join()); out.push(box); } };
  const fromValue = (v) => {
    if (Array.isArray(v)) { if (asBox(v)) add(v); else v.forEach(fromValue); }
    else if (isObj(v)) { if (v.box) add(v.box); if (Array.isArray(v.boxes)) v.boxes.forEach(add); }
  };
  if (Array.isArray(step.boxes)) step.boxes.forEach(fromValue);
  const result = isObj(step.result) ? step.result : {};
  if (Array.isArray(result.variables)) result.variables.forEach(fromValue);
  fromValue(result.final_answer);
  return out;
}

// A step's whole-image patch (image_patch = ImagePatch(image)) is no finding: neither drawn nor counted.
function shownBoxes(g, w, h) {
  return g.kind ? g.boxes : g.boxes.filter(([x1, y1, x2, y2]) => !(x1 <= 1 && y1 <= 1 && x2 >= w - 1 && y2 >= h - 1));
}

function drawBoxes(svg, img, groups) {
  svg.replaceChildren();
  const w = img.naturalWidth, h = img.naturalHeight;
  if (!w || !h) return;
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const perPixel = w / (img.clientWidth || w);  // image pixels per screen pixel: labels stay readable
  const ns = "http://www.w3.org/2000/svg";
  for (const g of groups) {
    for (const [x1, y1, x2, y2] of shownBoxes(g, w, h)) {
      const left = Math.min(x1, x2), top = Math.min(y1, y2);
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("class", "box " + (g.kind || ""));
      rect.setAttribute("x", left); rect.setAttribute("y", top);
      rect.setAttribute("width", Math.abs(x2 - x1)); rect.setAttribute("height", Math.abs(y2 - y1));
      if (g.color) rect.setAttribute("stroke", g.color);
      rect.setAttribute("data-label", g.label);
      svg.append(rect);
      const tag = document.createElementNS(ns, "text");
      tag.setAttribute("class", "tag");
      tag.setAttribute("font-size", 12 * perPixel);
      tag.setAttribute("stroke-width", 3 * perPixel);
      tag.setAttribute("x", left + 3 * perPixel);
      // above the box when there is room, else just inside its top edge; the ground truth's label
      // goes under its box, since a good prediction's label sits at nearly the same top corner
      const bottom = Math.max(y1, y2);
      const y = g.kind === "gt" ? (bottom + 16 * perPixel < h ? bottom + 14 * perPixel : bottom - 4 * perPixel)
        : (top > 16 * perPixel ? top - 4 * perPixel : top + 14 * perPixel);
      tag.setAttribute("y", y);
      tag.setAttribute("fill", g.color || "#12a150");
      tag.textContent = g.label;
      svg.append(tag);
    }
  }
}

function legend(node, img, groups) {
  const counted = groups.map((g) => [g, shownBoxes(g, img.naturalWidth, img.naturalHeight).length]).filter(([, n]) => n);
  node.replaceChildren(...counted.map(([g, n]) => el("span", {},
    el("span", { class: "swatch", style: `background:${g.color || "#12a150"}` }), `${g.label}: ${n} box${n > 1 ? "es" : ""}`)));
}

// ------------------------------------------------------------------ one step
function renderStep(step, index) {
  if (!isObj(step)) return el("div", { class: "step" }, el("pre", {}, JSON.stringify(step, null, 2)));
  // HYDRA's planner round sits in `extra` in the common step format, at the top level in older traces.
  const ex = isObj(step.extra) ? step.extra : {};
  const choice = step.choice !== undefined ? step.choice : ex.choice;
  const color = PALETTE[index % PALETTE.length];
  const n = step.step !== undefined ? step.step : index + 1;
  const title = step.instruction || step.action || "";
  const card = el("div", { class: "step", style: `--step-color:${color}`, "data-step": n });
  const head = el("div", { class: "step-head" }, el("span", { class: "n" }, `Step ${n}`), el("span", { class: "instr" }, title));
  if (step.role) head.append(el("span", { class: "badge" }, step.role));
  if (step.depth !== undefined) head.append(el("span", { class: "badge" }, `depth ${step.depth}`));
  if (step.decision) head.append(el("span", { class: "badge" + (step.decision === "answer" ? " answer" : "") }, step.decision));
  const seconds = isObj(step.seconds) ? step.seconds.total : (typeof step.seconds === "number" ? step.seconds : undefined);
  if (typeof seconds === "number") head.append(el("span", { class: "muted" }, `${seconds.toFixed(2)} s`));
  card.append(head);

  const options = Array.isArray(step.options) ? step.options : (Array.isArray(ex.options) ? ex.options : []);
  const probabilities = Array.isArray(step.probabilities) ? step.probabilities : [];
  if (options.length) {
    card.append(el("h3", {}, "Planner options"));
    const ol = el("ol", { class: "options" });
    options.forEach((o, i) => {
      const text = isObj(o) ? (o.instruction || JSON.stringify(o)) : String(o);
      const p = isObj(o) && typeof o.probability === "number" ? o.probability
        : (typeof probabilities[i] === "number" ? probabilities[i] : null);
      const bar = el("div", { class: "prob" }, el("i", { style: `width:${p === null ? 0 : Math.round(p * 100)}%` }), el("span", {}, p === null ? "?" : p.toFixed(2)));
      ol.append(el("li", { class: i === choice ? "chosen" : "" }, bar, el("span", {}, (i === choice ? "\u25B6 " : "") + text)));
    });
    card.append(ol);
  }

  const attempts = Array.isArray(step.attempts) ? step.attempts : [];
  if (attempts.length) {
    attempts.forEach((a, i) => {
      if (!isObj(a)) return;
      const label = (a.fallback ? "fallback program" : (attempts.length > 1 ? `program, attempt ${i + 1}` : "program"));
      const ok = a.ok !== false;
      card.append(el("h3", {}, label, " ", el("span", { class: "attempt-status" + (ok ? "" : " bad") }, ok ? "ran" : `${a.error_kind || "error"}: ${a.error || ""}`)));
      if (a.code) card.append(el("pre", { class: "code" }, a.code));
    });
  } else if (step.code) {
    card.append(el("h3", {}, "program"), el("pre", { class: "code" }, step.code));
  }
  const observation = step.feedback !== undefined ? step.feedback : step.observation;
  if (observation) card.append(el("h3", {}, "what the tools found"), el("pre", {}, typeof observation === "string" ? observation : JSON.stringify(observation, null, 2)));
  if (step.guess) card.append(el("div", { class: "muted" }, `guess: ${step.guess}`));
  const usage = isObj(step.llm) ? step.llm : (isObj(step.usage) ? step.usage : null);
  if (usage && Object.keys(usage).length) {
    card.append(el("div", { class: "muted" }, Object.entries(usage).map(([k, v]) => `${k.replace(/_/g, " ")} ${fmt(v)}`).join(" \u00B7 ")));
  }
  const boxes = stepBoxes(step);
  if (boxes.length) card.append(el("div", { class: "muted" }, `boxes: ${boxesText(boxes)}`));
  const extra = {};
  for (const [k, v] of Object.entries(step)) if (!KNOWN_STEP_KEYS.has(k)) extra[k] = v;
  const exRest = Object.fromEntries(Object.entries(ex).filter(([k]) => !["options", "choice", "probabilities"].includes(k)));
  if (Object.keys(exRest).length) extra.extra = exRest;
  if (isObj(step.result)) extra.result = step.result;
  if (Object.keys(extra).length) card.append(el("details", {}, el("summary", {}, "more"), el("pre", {}, JSON.stringify(extra, null, 2))));
  return card;
}

function stepGroups(steps) {
  return steps.map((s, i) => ({ label: `step ${isObj(s) && s.step !== undefined ? s.step : i + 1}`, color: PALETTE[i % PALETTE.length], boxes: isObj(s) ? stepBoxes(s) : [] }));
}

// ------------------------------------------------------------------ ask view
const askState = { file: null, steps: [], finalBoxes: [], running: false };

function setStatus(text, error) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", !!error);
}

function redrawAsk() {
  const groups = stepGroups(askState.steps);
  if (askState.finalBoxes.length) groups.push({ label: "answer", color: "#d93025", kind: "final", boxes: askState.finalBoxes });
  drawBoxes($("ask-boxes"), $("ask-image"), groups);
  legend($("ask-legend"), $("ask-image"), groups);
}

async function previewAskImage() {
  askState.steps = []; askState.finalBoxes = [];
  $("steps").replaceChildren(); $("answer").hidden = true;
  try {
    if (askState.file) {
      const url = URL.createObjectURL(askState.file);
      await new Promise((resolve) => { $("ask-image").onload = resolve; $("ask-image").onerror = resolve; $("ask-image").src = url; });
    } else if ($("sample").value) {
      await showImage($("ask-image"), `/v1/samples/${encodeURIComponent($("sample").value)}/image`);
    }
  } catch (e) { setStatus(`image: ${e.message}`, true); }
  redrawAsk();
}

async function loadStrategies() {
  try {
    const { strategies } = await apiJSON("/v1/strategies");
    $("strategy").replaceChildren(...strategies.map((s) => el("option", { value: s.name, title: s.summary }, s.name)));
    $("strategy").value = "hydra";
  } catch (e) { setStatus(`strategies: ${e.message}`, true); }
}

async function loadSamples() {
  try {
    const { samples } = await apiJSON("/v1/samples");
    $("sample").replaceChildren(...samples.map((s) => el("option", { value: s }, s)));
    if (samples.includes("bus")) $("sample").value = "bus";
    await previewAskImage();
  } catch (e) { setStatus(`samples: ${e.message}`, true); }
}

function pickFile(file) {
  if (!file) return;
  askState.file = file;
  $("file-name").textContent = `${file.name} (${Math.round(file.size / 1024)} KB)`;
  previewAskImage();
}

function showAnswer(event) {
  const box = $("answer");
  box.hidden = false;
  const result = event.result || {};
  const failed = event.status === "failed";
  box.classList.toggle("failed", failed);
  const parts = [el("span", { class: "label" }, failed ? "failed" : (result.task === "grounding" ? "boxes" : "answer"))];
  if (failed) parts.push(el("span", { id: "answer-text" }, event.error || "the job failed"));
  else if (result.task === "grounding") parts.push(el("span", { id: "answer-text" }, boxesText(result.boxes)));
  else parts.push(el("span", { id: "answer-text" }, result.answer === null || result.answer === undefined ? "(no answer)" : String(result.answer)));
  if (typeof result.seconds === "number") parts.push(el("div", { class: "muted", style: "font-size:12px" }, `${result.seconds.toFixed(2)} s, ${(result.steps || []).length} step(s)`));
  box.replaceChildren(...parts);
}

async function submitAsk(ev) {
  ev.preventDefault();
  if (askState.running) return;
  const query = $("query").value.trim();
  if (!query) { setStatus("type a question first", true); return; }
  const task = document.querySelector("input[name=task]:checked").value;
  const form = new FormData();
  form.append("query", query);
  if (askState.file) form.append("image", askState.file); else form.append("sample", $("sample").value);
  form.append("strategy", $("strategy").value);
  if ($("mode").value) form.append("mode", $("mode").value);
  askState.running = true; $("send").disabled = true;
  askState.steps = []; askState.finalBoxes = [];
  $("steps").replaceChildren(); $("answer").hidden = true; redrawAsk();
  try {
    const job = await apiJSON(`/v1/${task}`, { method: "POST", body: form });
    setStatus(`job ${job.id.slice(0, 8)} queued`);
    await streamEvents(job.events_url, (name, data) => {
      if (name === "running") setStatus(`job ${job.id.slice(0, 8)} running...`);
      else if (name === "step") {
        askState.steps.push(data.step);
        $("steps").append(renderStep(data.step, askState.steps.length - 1));
        redrawAsk();
      } else if (name === "result") {
        askState.finalBoxes = ((data.result || {}).boxes || []).filter(asBox);
        redrawAsk();
        showAnswer(data);
        setStatus(data.status === "done" ? `done: job ${job.id.slice(0, 8)}` : `failed: ${data.error}`, data.status !== "done");
      }
    });
  } catch (e) {
    setStatus(e.status === 429 ? `busy: ${e.message}` : e.message, true);
  } finally {
    askState.running = false; $("send").disabled = false;
  }
}

function setupAsk() {
  $("ask-form").addEventListener("submit", submitAsk);
  $("sample").addEventListener("change", () => { askState.file = null; $("file-name").textContent = ""; $("file").value = ""; previewAskImage(); });
  $("file").addEventListener("change", (e) => pickFile(e.target.files[0]));
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); pickFile(e.dataTransfer.files[0]); });
  window.addEventListener("resize", redrawAsk);
}

// ------------------------------------------------------------------ runs view
const runsState = { run: null, offset: 0, limit: 25, total: 0 };

function table(header, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, header.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

async function loadRuns() {
  const list = $("runs-list");
  try {
    const { runs } = await apiJSON("/v1/runs");
    if (!runs.length) { list.textContent = "No eval runs in the runs folder (start the server with --runs-dir DIR)."; return; }
    list.replaceChildren(table(["run", "dataset", "mode", "n", "score"], runs.map((r) =>
      el("tr", { class: "click", "data-run": r.name, onclick: () => openRun(r.name) },
        el("td", {}, r.name), el("td", {}, fmt(r.dataset)), el("td", {}, fmt(r.mode)), el("td", { class: "num" }, fmt(r.n)),
        el("td", { class: "num" }, r.score === null || r.score === undefined ? "-" : `${fmt(r.score)} ${r.main_metric || ""}`)))));
    list.classList.remove("muted");
  } catch (e) { list.textContent = `runs: ${e.message}`; }
}

// A report section: {group: {score, n, ...}} becomes a table, anything else a key/value list.
function renderSection(name, value) {
  if (!isObj(value) || !Object.keys(value).length) return null;
  const rows = Object.entries(value);
  if (rows.every(([, v]) => isObj(v) && Object.values(v).every((x) => !isObj(x) && !Array.isArray(x)))) {
    const cols = [...new Set(rows.flatMap(([, v]) => Object.keys(v)))];
    return [el("h3", {}, name.replace(/_/g, " ")), table([""].concat(cols), rows.map(([k, v]) => el("tr", {}, el("td", {}, k), cols.map((c) => el("td", { class: "num" }, fmt(v[c]))))))];
  }
  if (rows.every(([, v]) => !isObj(v) && !Array.isArray(v))) return [el("h3", {}, name.replace(/_/g, " ")), keyValues(value)];
  return [el("h3", {}, name.replace(/_/g, " ")), ...rows.map(([k, v]) => renderSection(`${name} / ${k}`, v) || keyValues({ [k]: v })).flat()];
}

async function openRun(name) {
  runsState.run = name; runsState.offset = 0;
  document.querySelectorAll("#runs-list tr").forEach((tr) => tr.classList.toggle("selected", tr.dataset.run === name));
  const panel = $("run-report");
  panel.hidden = false;
  panel.replaceChildren(el("h2", {}, `Report: ${name}`), el("div", { class: "muted" }, "loading..."));
  try {
    const data = await apiJSON(`/v1/runs/${encodeURIComponent(name)}`);
    const report = isObj(data.report) ? data.report : {};
    const parts = [el("h2", {}, `Report: ${name}`)];
    if (data.built_from_results) parts.push(el("div", { class: "muted" }, "no report.json yet: built from results.jsonl"));
    parts.push(keyValues(report, ["dataset", "split", "mode", "n", "n_scored", "errors", "crashed", "main_metric", "score"]));
    const scalar = new Set(["dataset", "split", "mode", "n", "n_scored", "errors", "crashed", "main_metric", "score", "mixed_settings", "settings", "prediction_files"]);
    for (const [k, v] of Object.entries(report)) {
      if (scalar.has(k)) continue;
      if (k === "breakdowns" && isObj(v)) { for (const [bk, bv] of Object.entries(v)) { const s = renderSection(`by ${bk}`, bv); if (s) parts.push(...s); } continue; }
      const s = renderSection(k, v);
      if (s) parts.push(...s);
    }
    if (isObj(report.settings)) parts.push(el("details", {}, el("summary", {}, "settings"), el("pre", {}, JSON.stringify(report.settings, null, 2))));
    panel.replaceChildren(...parts);
  } catch (e) { panel.replaceChildren(el("h2", {}, `Report: ${name}`), el("div", { class: "status error" }, e.message)); }
  $("run-samples").hidden = false;
  $("run-sample").hidden = true;
  await loadSamplesPage();
}

function gtText(gt) {
  if (!isObj(gt)) return fmt(gt);
  if (gt.answer !== undefined) return String(gt.answer);
  if (Array.isArray(gt.answers)) return [...new Set(gt.answers)].slice(0, 4).join(" / ");
  if (asBox(gt.box)) return boxesText([gt.box]);
  return JSON.stringify(gt);
}

async function loadSamplesPage() {
  const params = new URLSearchParams({ offset: runsState.offset, limit: runsState.limit });
  if ($("filter-correct").value) params.set("correct", $("filter-correct").value);
  if ($("filter-q").value.trim()) params.set("q", $("filter-q").value.trim());
  const holder = $("samples-table");
  try {
    const page = await apiJSON(`/v1/runs/${encodeURIComponent(runsState.run)}/samples?${params}`);
    runsState.total = page.total;
    holder.replaceChildren(table(["", "id", "question", "prediction", "ground truth", "score"], page.items.map((s) =>
      el("tr", { class: "click", "data-sample": s.id, onclick: () => openSample(s.id) },
        el("td", { class: s.correct ? "ok" : (s.correct === false ? "ko" : "") }, s.correct ? "\u2713" : (s.correct === false ? "\u2717" : "?")),
        el("td", {}, s.id), el("td", {}, s.query || ""),
        el("td", {}, s.error ? `error: ${s.error}` : (s.task === "grounding" ? boxesText(s.boxes) : fmt(s.prediction))),
        el("td", {}, gtText(s.gt)), el("td", { class: "num" }, fmt(s.score))))));
    const end = Math.min(page.offset + page.items.length, page.total);
    $("page-info").textContent = page.total ? `${page.offset + 1}-${end} of ${page.total}` : "no sample matches";
    $("prev").disabled = page.offset === 0;
    $("next").disabled = end >= page.total;
  } catch (e) { holder.replaceChildren(el("div", { class: "status error" }, e.message)); }
}

async function openSample(id) {
  document.querySelectorAll("#samples-table tr").forEach((tr) => tr.classList.toggle("selected", tr.dataset.sample === id));
  const panel = $("run-sample");
  panel.hidden = false;
  $("sample-title").textContent = `Sample ${id}`;
  $("sample-steps").replaceChildren();
  $("sample-record").replaceChildren(el("div", { class: "muted" }, "loading..."));
  try {
    const data = await apiJSON(`/v1/runs/${encodeURIComponent(runsState.run)}/samples/${encodeURIComponent(id)}`);
    const record = isObj(data.record) ? data.record : {};
    const trace = isObj(data.trace) ? data.trace : {};
    const steps = Array.isArray(trace.steps) ? trace.steps : [];
    $("sample-record").replaceChildren(
      keyValues(Object.assign({}, record, { ground_truth: gtText(record.gt), right: record.correct },
        record.task === "grounding" ? { prediction: boxesText(record.boxes) } : {}),
        ["query", "task", "prediction", "ground_truth", "right", "metric", "score", "steps", "seconds", "mode", "error"]),
      steps.length ? el("h3", {}, "trace") : el("div", { class: "muted" }, "this sample has no trace"));
    $("sample-steps").replaceChildren(...steps.map((s, i) => renderStep(s, i)));
    const groups = stepGroups(steps);
    const predicted = (Array.isArray(record.boxes) ? record.boxes : []).filter(asBox);
    if (predicted.length) groups.push({ label: "prediction", color: "#d93025", kind: "final", boxes: predicted });
    const gtBox = isObj(record.gt) ? asBox(record.gt.box) : null;
    if (gtBox) groups.push({ label: "ground truth", kind: "gt", boxes: [gtBox] });
    try {
      await showImage($("run-image"), `/v1/runs/${encodeURIComponent(runsState.run)}/samples/${encodeURIComponent(id)}/image`);
    } catch (e) { $("run-legend").textContent = `image: ${e.message}`; }
    drawBoxes($("run-boxes"), $("run-image"), groups);
    legend($("run-legend"), $("run-image"), groups);
  } catch (e) { $("sample-record").replaceChildren(el("div", { class: "status error" }, e.message)); }
}

function setupRuns() {
  $("sample-filter").addEventListener("submit", (e) => { e.preventDefault(); runsState.offset = 0; loadSamplesPage(); });
  $("filter-correct").addEventListener("change", () => { runsState.offset = 0; loadSamplesPage(); });
  $("prev").addEventListener("click", () => { runsState.offset = Math.max(0, runsState.offset - runsState.limit); loadSamplesPage(); });
  $("next").addEventListener("click", () => { runsState.offset += runsState.limit; loadSamplesPage(); });
}

// ------------------------------------------------------------------ tabs and health
let runsLoaded = false;
function route() {
  const runs = location.hash === "#runs";
  $("view-ask").hidden = runs; $("view-runs").hidden = !runs;
  $("tab-ask").classList.toggle("active", !runs); $("tab-runs").classList.toggle("active", runs);
  if (runs && !runsLoaded) { runsLoaded = true; loadRuns(); }
}

async function health() {
  try {
    const h = await apiJSON("/healthz");
    $("health").textContent = `${h.ready_workers}/${h.workers} worker(s) ready \u00B7 queued ${h.jobs.queued} \u00B7 running ${h.jobs.running} \u00B7 done ${h.jobs.done} \u00B7 failed ${h.jobs.failed}`;
  } catch (e) { $("health").textContent = e.status === 401 ? "token needed: open /?token=..." : "server unreachable"; }
}

window.addEventListener("hashchange", route);
setupAsk();
setupRuns();
route();
loadStrategies();
loadSamples();
health();
setInterval(health, 5000);
