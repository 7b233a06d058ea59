// The web page of ggdiff-server in headless Chromium (Debian's /usr/bin/chromium driven by
// playwright-core): it loads and shows the model's info, generates an image and shows it with
// its settings, and cancels a running generation.
//
// node tests/web/page_test.mjs --server build/ggdiff-server --model FIXTURE --tokenizer MERGES
// (ctest runs it as server_web_page; scripts/setup.sh installs chromium and playwright-core).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const chromiumPath = args.chromium || "/usr/bin/chromium";
const timeoutMs = Number(args.timeout || 240) * 1000;

function fail(message) {
  console.error("FAIL: " + message);
  process.exitCode = 1;
}

let playwright;
try {
  playwright = createRequire(import.meta.url)("playwright-core");
} catch {
  console.error("playwright-core is not installed: run scripts/setup.sh (npm ci in tests/web)");
  process.exit(1);
}
if (!existsSync(chromiumPath)) {
  console.error(chromiumPath + " not found: run scripts/setup.sh (installs Debian's chromium)");
  process.exit(1);
}
for (const k of ["server", "model", "tokenizer"]) {
  if (!args[k]) {
    console.error("usage: page_test.mjs --server BIN --model FILE --tokenizer FILE");
    process.exit(2);
  }
}

// The server on a free loopback port.
let serverLog = "";
const server = spawn(args.server, ["-m", args.model, "--tokenizer", args.tokenizer, "--port", "0"], {
  stdio: ["ignore", "pipe", "pipe"],
});
server.stderr.on("data", (d) => (serverLog += d));
const port = await new Promise((resolve, reject) => {
  let out = "";
  server.stdout.on("data", (d) => {
    out += d;
    const m = out.match(/listening on http:\/\/[^:]+:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on("exit", (code) => reject(new Error("server exited with " + code + "\n" + serverLog)));
  setTimeout(() => reject(new Error("server did not start")), 60000);
});
const base = `http://127.0.0.1:${port}`;

let browser;
try {
  for (let i = 0; ; ++i) {
    const r = await fetch(base + "/health").catch(() => null);
    if (r && r.status === 200) break;
    if (i > 6000) throw new Error("server not ready");
    await sleep(20);
  }
  browser = await playwright.chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(timeoutMs);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(m.text()); });

  // Load: the model's info and the sampler list come from the server.
  await page.goto(base + "/");
  await page.waitForFunction(() => document.getElementById("model-info").textContent.includes("sd1_mc32"));
  const info = await page.textContent("#model-info");
  if (!info.includes("SD1")) fail("model info lacks the family: " + info);
  const samplers = await page.$$eval("#sampler option", (os) => os.map((o) => o.value));
  // "" (the model's default) and the 18 samplers.
  if (samplers.length !== 19 || samplers[0] !== "" || !samplers.includes("dpm++2m_sde")) fail("sampler list: " + samplers);
  const schedulers = await page.$$eval("#scheduler option", (os) => os.map((o) => o.value));
  if (!schedulers.includes("karras")) fail("scheduler list: " + schedulers);

  // Generate: the image appears in the gallery with its settings.
  await page.fill("#prompt", "a red cube on a wooden table");
  await page.fill("#negative", "blurry");
  await page.fill("#width", "64");
  await page.fill("#height", "64");
  await page.fill("#steps", "2");
  await page.selectOption("#sampler", "euler");
  await page.selectOption("#scheduler", "karras");
  await page.fill("#seed", "7");
  await page.fill("#batch", "2");
  await page.click("#generate");
  await page.waitForFunction(() => document.querySelectorAll("#gallery .card img").length === 2);
  await page.waitForFunction(() => document.getElementById("status").textContent.startsWith("done"));
  const cards = await page.$$eval("#gallery .card", (cs) =>
    cs.map((c) => ({
      width: c.querySelector("img").naturalWidth,
      meta: c.querySelector(".meta").textContent,
      settings: c.querySelector(".settings").textContent,
    })));
  const seeds = cards.map((c) => c.settings.match(/Seed: (\d+)/)?.[1]).sort();
  if (seeds.join() !== "7,8") fail("gallery seeds: " + seeds);
  for (const c of cards) {
    if (c.width !== 64) fail("image width " + c.width);
    for (const want of ["a red cube on a wooden table", "Negative prompt: blurry", "Steps: 2", "Sampler: Euler",
                        "Schedule type: Karras", "Size: 64x64"]) {
      if (!c.settings.includes(want)) fail(`settings lack "${want}": ${c.settings}`);
    }
  }
  if (!(await page.isEnabled("#generate"))) fail("Generate stays disabled after a job");

  // Cancel: a long job shows live progress, and Cancel stops it.
  await page.fill("#steps", "150");
  await page.fill("#batch", "1");
  await page.click("#generate");
  await page.waitForFunction(() => /sampling \d+\/150/.test(document.getElementById("status").textContent));
  const progress = await page.$eval("#progress", (e) => e.style.width);
  if (!(await page.isEnabled("#cancel"))) fail("Cancel is not enabled while a job runs");
  await page.click("#cancel");
  await page.waitForFunction(() => document.getElementById("status").textContent.startsWith("cancelled"));
  if ((await page.$$("#gallery .card")).length !== 2) fail("a cancelled job added images");
  if (await page.isEnabled("#cancel")) fail("Cancel stays enabled after the job ended");
  const jobs = await (await fetch(base + "/sdcpp/v1/jobs")).json();
  if (jobs.jobs[0].status !== "cancelled") fail("last job is " + jobs.jobs[0].status);
  if (pageErrors.length) fail("page errors: " + pageErrors.join("; "));
  console.log(`page test: ${cards.length} images shown with settings; progress reached ${progress}; cancel worked`);
} catch (e) {
  fail(e.stack || String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  server.kill("SIGTERM");
  await new Promise((r) => (server.exitCode !== null ? r() : server.on("exit", r)));
  if (process.exitCode) console.error("--- server log ---\n" + serverLog.slice(-4000));
}
