// The page talks to the server's own async API: GET /sdcpp/v1/capabilities (model, samplers,
// schedulers, defaults, limits), POST /sdcpp/v1/img_gen, events from
// /sdcpp/v1/jobs/{id}/events (falling back to polling), POST .../cancel.
#include "web_page.h"

namespace ggdiff::server {

const char* web_page_html() {
    return R"HTML(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ggdiff</title>
<link rel="icon" href="data:,">
<style>
:root { --bg:#14161a; --panel:#1d2026; --line:#2e323a; --text:#e6e6e6; --dim:#9aa0aa; --accent:#4f8cff; --bad:#ff6b6b; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--text); }
header { display:flex; align-items:baseline; gap:16px; padding:12px 20px; border-bottom:1px solid var(--line); }
header h1 { font-size:18px; margin:0; }
#model-info { color:var(--dim); font-size:13px; }
main { display:grid; grid-template-columns: 340px 1fr; gap:20px; padding:20px; }
form { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:14px; display:flex; flex-direction:column; gap:10px; align-self:start; }
label { display:flex; flex-direction:column; gap:4px; color:var(--dim); font-size:12px; }
textarea, input, select { background:#0f1114; color:var(--text); border:1px solid var(--line); border-radius:5px; padding:6px 8px; font:inherit; }
textarea { resize:vertical; min-height:60px; }
.row { display:grid; grid-template-columns:1fr 1fr; gap:8px; }
.buttons { display:flex; gap:8px; }
button { flex:1; padding:8px; border:0; border-radius:5px; font:inherit; cursor:pointer; background:var(--accent); color:#fff; }
button:disabled { opacity:.45; cursor:default; }
#cancel { background:#555b66; }
#progress-wrap { height:8px; background:#0f1114; border-radius:4px; overflow:hidden; }
#progress { height:100%; width:0; background:var(--accent); transition:width .2s; }
#status { color:var(--dim); min-height:1.4em; }
#status.error { color:var(--bad); }
#gallery { display:grid; grid-template-columns:repeat(auto-fill, minmax(260px, 1fr)); gap:14px; align-content:start; }
.card { background:var(--panel); border:1px solid var(--line); border-radius:8px; overflow:hidden; }
.card img { width:100%; display:block; image-rendering:auto; background:#000; }
.card .settings { padding:8px 10px; font-size:12px; color:var(--dim); white-space:pre-wrap; word-break:break-word; }
.card .meta { padding:6px 10px 0; font-size:12px; }
@media (max-width: 760px) { main { grid-template-columns:1fr; } }
</style>
</head>
<body>
<header><h1>ggdiff</h1><span id="model-info">loading model info...</span></header>
<main>
<form id="form" autocomplete="off">
  <label>Prompt<textarea id="prompt" rows="3">a photograph of an astronaut riding a horse</textarea></label>
  <label>Negative prompt<textarea id="negative" rows="2"></textarea></label>
  <div class="row">
    <label>Width<input id="width" type="number" min="8" step="8" value="512"></label>
    <label>Height<input id="height" type="number" min="8" step="8" value="512"></label>
  </div>
  <div class="row">
    <label>Steps<input id="steps" type="number" min="1" value="20"></label>
    <label>CFG scale<input id="cfg" type="number" step="0.5" value="7"></label>
  </div>
  <div class="row">
    <label>Sampler<select id="sampler"></select></label>
    <label>Scheduler<select id="scheduler"></select></label>
  </div>
  <div class="row">
    <label>Seed (-1: random)<input id="seed" type="number" value="-1"></label>
    <label>Batch<input id="batch" type="number" min="1" value="1"></label>
  </div>
  <div class="buttons">
    <button id="generate" type="submit">Generate</button>
    <button id="cancel" type="button" disabled>Cancel</button>
  </div>
  <div id="progress-wrap"><div id="progress"></div></div>
  <div id="status"></div>
</form>
<section id="gallery"></section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
let currentJob = null;

function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

async function api(path, options) {
  const res = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok && res.status !== 202) {
    const msg = body && (body.error && (body.error.message || body.error)) || res.statusText;
    throw new Error(typeof msg === "string" ? msg : JSON.stringify(msg));
  }
  return body;
}

function fillSelect(select, names, chosen) {
  select.innerHTML = "";
  const auto = document.createElement("option");
  auto.value = ""; auto.textContent = "(model default)";
  select.appendChild(auto);
  for (const n of names) {
    const o = document.createElement("option");
    o.value = n; o.textContent = n;
    if (n === chosen) o.selected = true;
    select.appendChild(o);
  }
}

async function loadCapabilities() {
  try {
    const caps = await api("/sdcpp/v1/capabilities");
    const m = caps.model || {};
    $("model-info").textContent = [m.stem || m.name, m.family, m.vae ? "VAE " + m.vae : null, caps.version]
      .filter(Boolean).join(" \u00b7 ");
    const d = caps.defaults || {};
    const sp = d.sample_params || {};
    fillSelect($("sampler"), caps.samplers || [], sp.sample_method);
    fillSelect($("scheduler"), caps.schedulers || [], sp.scheduler);
    if (d.width) $("width").value = d.width;
    if (d.height) $("height").value = d.height;
    if (sp.sample_steps) $("steps").value = sp.sample_steps;
    if (sp.guidance && sp.guidance.txt_cfg != null) $("cfg").value = sp.guidance.txt_cfg;
    if (d.seed != null) $("seed").value = d.seed;
    const lim = caps.limits || {};
    if (lim.max_width) { $("width").max = lim.max_width; $("height").max = lim.max_height; }
    if (lim.max_batch_count) $("batch").max = lim.max_batch_count;
  } catch (e) {
    $("model-info").textContent = "model info unavailable: " + e.message;
  }
}

function showProgress(job) {
  const p = job.progress || {};
  $("progress").style.width = Math.round((p.fraction || 0) * 100) + "%";
  let text = job.status;
  if (job.status === "queued") text = "queued (position " + job.queue_position + ")";
  else if (job.status === "generating") {
    text = p.phase ? p.phase + (p.total ? " " + p.step + "/" + p.total : "") : "starting";
    if (p.batch > 1) text += " \u00b7 image " + Math.min(p.images_done + 1, p.batch) + "/" + p.batch;
    if (p.eta_seconds != null) text += " \u00b7 ETA " + p.eta_seconds.toFixed(1) + " s";
    if (job.cancel_requested) text += " \u00b7 cancelling";
  }
  setStatus(text, false);
}

function addToGallery(job) {
  const result = job.result;
  if (!result || !result.images) return;
  const mime = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" }[result.output_format] || "image/png";
  for (const img of result.images) {
    const card = document.createElement("div");
    card.className = "card";
    const el = document.createElement("img");
    el.src = "data:" + mime + ";base64," + img.b64_json;
    el.alt = "seed " + img.seed;
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = img.width + "x" + img.height + " \u00b7 seed " + img.seed;
    const settings = document.createElement("div");
    settings.className = "settings";
    settings.textContent = img.parameters || "";
    card.append(el, meta, settings);
    $("gallery").prepend(card);
  }
}

function finish(job) {
  currentJob = null;
  $("generate").disabled = false;
  $("cancel").disabled = true;
  $("progress").style.width = job.status === "completed" ? "100%" : "0";
  addToGallery(job);
  if (job.status === "completed") setStatus("done: " + (job.result ? job.result.images.length : 0) + " image(s)", false);
  else if (job.status === "cancelled") setStatus("cancelled" + (job.result ? " (" + job.result.images.length + " image(s) kept)" : ""), false);
  else setStatus("failed: " + (job.error ? job.error.message : "unknown error"), true);
}

function follow(id) {
  let done = false;
  const terminal = (j) => ["completed", "failed", "cancelled"].includes(j.status);
  const poll = async () => {
    while (!done) {
      try {
        const job = await api("/sdcpp/v1/jobs/" + id);
        if (terminal(job)) { done = true; finish(job); return; }
        showProgress(job);
      } catch (e) { setStatus(e.message, true); }
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  if (!window.EventSource) return poll();
  const es = new EventSource("/sdcpp/v1/jobs/" + id + "/events", { withCredentials: true });
  es.addEventListener("progress", (ev) => showProgress(JSON.parse(ev.data)));
  for (const name of ["completed", "failed", "cancelled"]) {
    es.addEventListener(name, (ev) => { done = true; es.close(); finish(JSON.parse(ev.data)); });
  }
  es.onerror = () => { if (!done) { es.close(); poll(); } };
}

$("form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const num = (id) => Number($(id).value);
  const body = {
    prompt: $("prompt").value,
    negative_prompt: $("negative").value,
    width: num("width"), height: num("height"),
    seed: num("seed"), batch_count: num("batch"),
    sample_params: {
      sample_method: $("sampler").value || undefined, scheduler: $("scheduler").value || undefined,
      sample_steps: num("steps"), guidance: { txt_cfg: num("cfg") }
    },
    output_format: "png"
  };
  $("generate").disabled = true;
  setStatus("submitting", false);
  try {
    const job = await api("/sdcpp/v1/img_gen", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body)
    });
    currentJob = job.id;
    $("cancel").disabled = false;
    showProgress(job);
    follow(job.id);
  } catch (e) {
    $("generate").disabled = false;
    setStatus(e.message, true);
  }
});

$("cancel").addEventListener("click", async () => {
  if (!currentJob) return;
  $("cancel").disabled = true;
  try { await api("/sdcpp/v1/jobs/" + currentJob + "/cancel", { method: "POST" }); }
  catch (e) { setStatus(e.message, true); }
});

loadCapabilities();
</script>
</body>
</html>
)HTML";
}

}  // namespace ggdiff::server
