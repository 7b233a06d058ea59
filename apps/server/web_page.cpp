// The page talks to the server's own async API: GET /sdcpp/v1/models (the model picker; hidden
// when the route is absent or lists one model), GET /sdcpp/v1/capabilities[?model=NAME] (model,
// samplers, schedulers, defaults, limits, features), POST /sdcpp/v1/img_gen (txt2img, img2img
// with init_image, edits with ref_images, live previews), events from /sdcpp/v1/jobs/{id}/events
// (falling back to polling), POST .../cancel. Uploads are read in the browser as data URLs: the
// page's Content-Security-Policy allows data: images, not blob: ones.
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
[hidden] { display:none !important; }
body { margin:0; font:14px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--text); }
header { display:flex; align-items:baseline; gap:16px; padding:12px 20px; border-bottom:1px solid var(--line); }
header h1 { font-size:18px; margin:0; }
#model-info { color:var(--dim); font-size:13px; }
main { display:grid; grid-template-columns: 340px 1fr; gap:20px; padding:20px; }
form { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:14px; display:flex; flex-direction:column; gap:10px; align-self:start; }
label { display:flex; flex-direction:column; gap:4px; color:var(--dim); font-size:12px; }
textarea, input, select { background:#0f1114; color:var(--text); border:1px solid var(--line); border-radius:5px; padding:6px 8px; font:inherit; }
textarea { resize:vertical; min-height:60px; }
.row { display:grid; grid-template-columns:minmax(0, 1fr) minmax(0, 1fr); gap:8px; }
.buttons { display:flex; gap:8px; }
button { flex:1; padding:8px; border:0; border-radius:5px; font:inherit; cursor:pointer; background:var(--accent); color:#fff; }
button:disabled { opacity:.45; cursor:default; }
#cancel { background:#555b66; }
#progress-wrap { height:8px; background:#0f1114; border-radius:4px; overflow:hidden; }
#progress { height:100%; width:0; background:var(--accent); transition:width .2s; }
#status { color:var(--dim); min-height:1.4em; }
label.check { flex-direction:row; align-items:center; gap:6px; color:var(--text); font-size:13px; }
label.check input { margin:0; }
input[type=file] { padding:4px; font-size:12px; }
#init-box { display:grid; grid-template-columns:72px 1fr; gap:8px; align-items:start; }
#init-thumb { width:72px; height:72px; object-fit:cover; border-radius:5px; background:#000; }
#init-side { display:flex; flex-direction:column; gap:6px; }
#init-size { color:var(--dim); font-size:12px; }
#init-clear { flex:none; padding:4px 10px; background:#555b66; align-self:start; }
#preview { width:100%; max-height:320px; object-fit:contain; border-radius:5px; background:#000; }
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
  <label id="model-row" hidden>Model<select id="model"></select></label>
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
  <label>Image (img2img)<input id="init-image" type="file" accept="image/png,image/jpeg,image/webp"></label>
  <div id="init-box" hidden>
    <img id="init-thumb" alt="chosen image">
    <div id="init-side">
      <span id="init-size"></span>
      <label id="strength-row">Strength<input id="strength" type="number" min="0" max="1" step="any" value="0.75"></label>
      <label id="ref-row" class="check" hidden><input id="as-ref" type="checkbox"> use as reference image (edit)</label>
      <button id="init-clear" type="button">clear</button>
    </div>
  </div>
  <label class="check"><input id="live-preview" type="checkbox" checked> live preview</label>
  <div class="buttons">
    <button id="generate" type="submit">Generate</button>
    <button id="cancel" type="button" disabled>Cancel</button>
  </div>
  <div id="progress-wrap"><div id="progress"></div></div>
  <div id="status"></div>
  <img id="preview" alt="live preview" hidden>
</form>
<section id="gallery"></section>
</main>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const MIME = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" };
let currentJob = null;
let caps = null;     // capabilities of the chosen model
let capsSeq = 0;     // a newer capabilities request makes older answers stale
let upload = null;   // the chosen image: {b64, name}
let uploadSeq = 0;
const jobs = {};     // job id -> what the page asked for: {mode, strength, model, preview}

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
    const err = new Error(typeof msg === "string" ? msg : JSON.stringify(msg));
    err.status = res.status;
    throw err;
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

// The model picker: GET /sdcpp/v1/models. Hidden when the server has no such route (404) or
// one model; otherwise it keeps the user's choice and refreshes each model's state.
function modelLabel(m) {
  let text = m.title || m.name;
  if (m.family) text += " \u00b7 " + m.family;
  if (m.state && m.state !== "loaded") text += " (" + m.state + ")";
  return text;
}

async function loadModels() {
  let list = null;
  try { list = await api("/sdcpp/v1/models"); } catch (e) { list = null; }
  const models = list && Array.isArray(list.models) ? list.models : [];
  const select = $("model");
  $("model-row").hidden = models.length < 2;
  if (models.length < 2) return null;
  const keep = select.value;
  select.innerHTML = "";
  for (const m of models) {
    const o = document.createElement("option");
    o.value = m.name;
    o.textContent = modelLabel(m);
    select.appendChild(o);
  }
  const names = models.map((m) => m.name);
  const current = (models.find((m) => m.current) || {}).name || list.current;
  select.value = names.includes(keep) ? keep : names.includes(current) ? current : names[0];
  return select.value;
}

function chosenModel() {
  return $("model-row").hidden ? null : $("model").value || null;
}

async function loadCapabilities(model) {
  const seq = ++capsSeq;
  try {
    const c = await api("/sdcpp/v1/capabilities" + (model ? "?model=" + encodeURIComponent(model) : ""));
    if (seq !== capsSeq) return;
    caps = c;
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
    if (d.strength != null && !upload) $("strength").value = d.strength;
    const lim = caps.limits || {};
    if (lim.max_width) { $("width").max = lim.max_width; $("height").max = lim.max_height; }
    if (lim.max_batch_count) $("batch").max = lim.max_batch_count;
  } catch (e) {
    if (seq !== capsSeq) return;
    caps = null;
    $("model-info").textContent = "model info unavailable: " + e.message;
  }
  // Which model the form now describes (tests wait for it after a change).
  $("model-info").dataset.model = model || "";
  updateImageControls();
}

// The image for img2img (init_image + strength) or, for a model that takes reference images
// (capabilities.features.ref_images), an edit (ref_images).
function updateImageControls() {
  const refs = !!(caps && caps.features && caps.features.ref_images);
  if (!refs) $("as-ref").checked = false;
  $("init-box").hidden = !upload;
  $("ref-row").hidden = !upload || !refs;
  $("strength-row").hidden = !upload || $("as-ref").checked;
}

function clearImage() {
  uploadSeq++;
  upload = null;
  $("init-image").value = "";
  $("init-thumb").removeAttribute("src");
  $("init-size").textContent = "";
  updateImageControls();
}

$("init-image").addEventListener("change", () => {
  const file = $("init-image").files[0];
  if (!file) return clearImage();
  const seq = ++uploadSeq;
  const reader = new FileReader();
  reader.onload = () => {
    if (seq !== uploadSeq) return;
    const url = String(reader.result);
    upload = { b64: url.slice(url.indexOf(",") + 1), name: file.name };
    const thumb = $("init-thumb");
    thumb.onload = () => { $("init-size").textContent = thumb.naturalWidth + "x" + thumb.naturalHeight; };
    thumb.onerror = () => { $("init-size").textContent = file.name; };
    thumb.src = url;
    updateImageControls();
  };
  reader.onerror = () => { if (seq === uploadSeq) setStatus("cannot read " + file.name, true); };
  reader.readAsDataURL(file);
});
$("init-clear").addEventListener("click", clearImage);
$("as-ref").addEventListener("change", updateImageControls);
$("model").addEventListener("change", () => loadCapabilities(chosenModel()));

function showProgress(job) {
  const p = job.progress || {};
  $("progress").style.width = Math.round((p.fraction || 0) * 100) + "%";
  let text = job.status;
  if (job.status === "queued") text = "queued (position " + job.queue_position + ")";
  else if (job.status === "loading") {
    const asked = jobs[job.id] && jobs[job.id].model;
    text = "loading model " + (job.model || asked || "");
  } else if (job.status === "generating") {
    text = p.phase ? p.phase + (p.total ? " " + p.step + "/" + p.total : "") : "starting";
    if (p.batch > 1) text += " \u00b7 image " + Math.min(p.images_done + 1, p.batch) + "/" + p.batch;
    if (p.eta_seconds != null) text += " \u00b7 ETA " + p.eta_seconds.toFixed(1) + " s";
  }
  if (job.cancel_requested && job.status !== "queued") text += " \u00b7 cancelling";
  setStatus(text, false);
}

// The latest live preview of the running job, next to the progress bar.
function showPreview(id, p) {
  const asked = jobs[id];
  if (!p || !p.b64_json || id !== currentJob || (asked && !asked.preview)) return;
  const el = $("preview");
  el.src = "data:" + (MIME[p.output_format] || "image/png") + ";base64," + p.b64_json;
  el.title = "preview, step " + p.step + "/" + p.total;
  el.hidden = false;
}

function hidePreview() {
  $("preview").hidden = true;
  $("preview").removeAttribute("src");
  $("preview").title = "";
}

function addToGallery(job) {
  const result = job.result;
  if (!result || !result.images) return;
  const mime = MIME[result.output_format] || "image/png";
  const asked = jobs[job.id] || {};
  let mode = "";
  if (asked.mode === "img2img") mode = "img2img, strength " + asked.strength;
  else if (asked.mode === "edit") mode = "edit (reference image)";
  else if (job.kind === "img2img") mode = "img2img";
  for (const img of result.images) {
    const card = document.createElement("div");
    card.className = "card";
    const el = document.createElement("img");
    el.src = "data:" + mime + ";base64," + img.b64_json;
    el.alt = "seed " + img.seed;
    const meta = document.createElement("div");
    meta.className = "meta";
    meta.textContent = [img.width + "x" + img.height, "seed " + img.seed, mode, asked.model]
      .filter(Boolean).join(" \u00b7 ");
    const settings = document.createElement("div");
    settings.className = "settings";
    settings.textContent = img.parameters || "";
    card.append(el, meta, settings);
    $("gallery").prepend(card);
  }
}

function finish(job) {
  currentJob = null;
  hidePreview();
  $("generate").disabled = false;
  $("cancel").disabled = true;
  $("progress").style.width = job.status === "completed" ? "100%" : "0";
  addToGallery(job);
  if (job.status === "completed") setStatus("done: " + (job.result ? job.result.images.length : 0) + " image(s)", false);
  else if (job.status === "cancelled") setStatus("cancelled" + (job.result ? " (" + job.result.images.length + " image(s) kept)" : ""), false);
  else setStatus("failed: " + (job.error ? job.error.message : "unknown error"), true);
  delete jobs[job.id];
  if (!$("model-row").hidden) loadModels();  // a model may have loaded or unloaded
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
        showPreview(id, job.preview);
      } catch (e) { setStatus(e.message, true); }
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  if (!window.EventSource) return poll();
  const es = new EventSource("/sdcpp/v1/jobs/" + id + "/events", { withCredentials: true });
  es.addEventListener("progress", (ev) => showProgress(JSON.parse(ev.data)));
  es.addEventListener("preview", (ev) => { if (!done) showPreview(id, JSON.parse(ev.data)); });
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
  const asked = { mode: "txt2img", model: chosenModel(), preview: $("live-preview").checked };
  if (asked.model) body.model = asked.model;
  if (upload && $("as-ref").checked) {
    asked.mode = "edit";
    body.ref_images = [upload.b64];
  } else if (upload) {
    asked.mode = "img2img";
    asked.strength = num("strength");
    body.init_image = upload.b64;
    body.strength = asked.strength;
  }
  body.preview = asked.preview;
  if (asked.preview) body.preview_interval = 1;
  const text = JSON.stringify(body);
  $("generate").disabled = true;
  hidePreview();
  setStatus("submitting", false);
  try {
    const job = await api("/sdcpp/v1/img_gen", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: text
    });
    jobs[job.id] = asked;
    currentJob = job.id;
    $("cancel").disabled = false;
    showProgress(job);
    follow(job.id);
  } catch (e) {
    $("generate").disabled = false;
    // A body over --max-body-mb may be cut off before the server's 413 can be read.
    const limit = caps && caps.limits && caps.limits.max_body_bytes;
    if (e instanceof TypeError && limit && text.length > limit) {
      setStatus("request body larger than the limit of " + Math.round(limit / 1048576) + " MiB", true);
    } else {
      setStatus(e.message, true);
    }
  }
});

$("cancel").addEventListener("click", async () => {
  if (!currentJob) return;
  $("cancel").disabled = true;
  try { await api("/sdcpp/v1/jobs/" + currentJob + "/cancel", { method: "POST" }); }
  catch (e) { setStatus(e.message, true); }
});

loadModels().then(loadCapabilities);
</script>
</body>
</html>
)HTML";
}

}  // namespace ggdiff::server
