#!/usr/bin/env python3
"""The web page of ggdiff-server in headless Chromium.

Debian's chromium is driven through chromedriver (package chromium-driver) by Debian's
python3-selenium: the page loads and shows the model's info and the sampler lists, generates a
batch and shows each image with its settings, cancels a running generation, shows live previews
while a job samples, runs img2img on an uploaded image (and shows the server's 413 for one over
--max-upload-pixels), and hides the model picker when the server offers one model.

  python3 tests/web/page_test.py --server build/ggdiff-server --model FIXTURE --tokenizer MERGES

With --models-dir DIR the server is also started with --models-dir DIR, and the model picker
(GET /sdcpp/v1/models) is checked: it lists the model files of DIR, and a job on the second one
names that model in its settings (A1111's "Model: NAME"). DIR needs two model files or more,
e.g. two links to the fixture under different names.

ctest runs it as server_web_page; scripts/setup.sh installs chromium, chromium-driver and
python3-selenium.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message, file=sys.stderr)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True, help="ggdiff-server binary")
    p.add_argument("--model", required=True, help="model file the server loads")
    p.add_argument("--tokenizer", required=True, help="CLIP merges file")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    p.add_argument("--timeout", type=float, default=240, help="seconds per wait")
    p.add_argument("--models-dir", help="also check the model picker with this --models-dir")
    return p.parse_args()


# The server's limit on uploaded images in this test: 64x64 fits, 300x300 answers 413.
MAX_UPLOAD_PIXELS = 128 * 128
MODEL_EXTENSIONS = (".safetensors", ".sft", ".gguf", ".ckpt", ".pt", ".pth", ".bin")


def model_files(directory):
    return sorted(f for f in os.listdir(directory)
                  if f.lower().endswith(MODEL_EXTENSIONS) and not f.startswith("."))


def stem(name):
    base = os.path.basename(name)
    for ext in MODEL_EXTENSIONS:
        if base.lower().endswith(ext):
            return base[:-len(ext)]
    return base


def write_png(path, size):
    """A colour gradient of size x size pixels, so img2img has something to start from."""
    import numpy as np
    from PIL import Image
    ramp = np.linspace(0, 255, size, dtype=np.uint8)
    rgb = np.stack([np.tile(ramp, (size, 1)), np.tile(ramp[:, None], (1, size)),
                    np.full((size, size), 128, np.uint8)], axis=-1)
    Image.fromarray(rgb, "RGB").save(path)
    return path


def start_server(args):
    """Starts the server on a free loopback port; returns (process, base URL, log lines)."""
    command = [args.server, "-m", args.model, "--tokenizer", args.tokenizer, "--port", "0",
               "--max-upload-pixels", str(MAX_UPLOAD_PIXELS)]
    if args.models_dir:
        command += ["--models-dir", args.models_dir]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    port = None
    deadline = time.time() + 60
    for line in proc.stdout:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
        if time.time() > deadline:
            break
    if port is None:
        proc.kill()
        raise RuntimeError("server did not start:\n" + "".join(log))
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    base = "http://127.0.0.1:%d" % port
    for _ in range(3000):
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return proc, base, log
        except OSError:
            pass
        time.sleep(0.02)
    proc.kill()
    raise RuntimeError("server not ready:\n" + "".join(log))


def check_model_picker(args, driver, wait, by_id, text_of, fill, cards, generate_and_wait):
    """The picker lists the model files of --models-dir; a job on the second one names it."""
    from selenium.webdriver.support.ui import Select
    files = model_files(args.models_dir)
    if len(files) < 2:
        fail("--models-dir %s has %d model files; the picker check needs two" %
             (args.models_dir, len(files)))
        return
    wait.until(lambda d: by_id("model").is_displayed())
    options = [(o.get_attribute("value"), o.text) for o in Select(by_id("model")).options]
    offered = {stem(v) for v, _ in options}
    missing = [f for f in files if stem(f) not in offered]
    if missing:
        fail("the model picker lacks %s: %s" % (missing, options))
        return
    name = next(v for v, _ in options if stem(v) == stem(files[1]))
    # Changing the model reloads its capabilities (and defaults): fill the form after that.
    driver.execute_script("window.statusSeen = new Set();"
                          "new MutationObserver(() => window.statusSeen.add("
                          "document.getElementById('status').textContent))"
                          ".observe(document.getElementById('status'),"
                          "{childList: true, characterData: true, subtree: true});")
    Select(by_id("model")).select_by_value(name)
    wait.until(lambda d: d.execute_script(
        "return document.getElementById('model-info').dataset.model") == name)
    fill("width", 64)
    fill("height", 64)
    fill("steps", 2)
    fill("batch", 1)
    before = len(cards())
    after = generate_and_wait(before)
    statuses = driver.execute_script("return [...window.statusSeen]")
    if len(after) != before + 1:
        fail("a job on model %s: %s" % (name, text_of("status")))
        return
    want = "Model: " + stem(name)
    if want not in after[0]["settings"]:
        fail('settings of a job on %s lack "%s": %s' % (name, want, after[0]["settings"]))
    loading = [t for t in statuses if t.startswith("loading model")]
    print("model picker: %d models offered; a job on %s names it%s"
          % (len(options), name, "; status showed \"%s\"" % loading[0] if loading else ""))


def main():
    args = parse_args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select, WebDriverWait
    except ImportError as e:
        print("python3-selenium is missing (%s): run scripts/setup.sh" % e, file=sys.stderr)
        return 1
    for path in (args.chromium, args.chromedriver):
        if not os.path.exists(path):
            print(path + " not found: run scripts/setup.sh (installs chromium and chromium-driver)",
                  file=sys.stderr)
            return 1

    server, base, server_log = start_server(args)
    driver = None
    try:
        options = webdriver.ChromeOptions()
        options.binary_location = args.chromium
        for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"):
            options.add_argument(a)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(args.chromedriver), options=options)
        wait = WebDriverWait(driver, args.timeout)

        def by_id(name):
            return driver.find_element(By.ID, name)

        def text_of(name):
            return driver.execute_script("return document.getElementById(arguments[0]).textContent",
                                         name)

        def fill(name, value):
            e = by_id(name)
            e.clear()
            e.send_keys(str(value))

        def page_errors(allowed=None):
            """The browser's SEVERE console messages since the last call, less `allowed`."""
            return [e["message"] for e in driver.get_log("browser")
                    if e.get("level") == "SEVERE"
                    and not (allowed and re.search(allowed, e["message"]))]

        def cards():
            return driver.execute_script(
                "return [...document.querySelectorAll('#gallery .card')].map(c => ({"
                "width: c.querySelector('img').naturalWidth,"
                "loaded: c.querySelector('img').complete,"
                "meta: c.querySelector('.meta').textContent,"
                "settings: c.querySelector('.settings').textContent}))")

        def generate_and_wait(count_before):
            by_id("generate").click()
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#gallery .card"))
                       > count_before or text_of("status").startswith("failed"))
            wait.until(lambda d: text_of("status").startswith(("done", "failed")))
            wait.until(lambda d: d.execute_script(
                "return [...document.querySelectorAll('#gallery .card img')]"
                ".every(i => i.complete && i.naturalWidth > 0)"))
            return cards()

        # Load: the model's info and the sampler lists come from the server.
        driver.get(base + "/")
        wait.until(lambda d: "sd1_mc32" in text_of("model-info"))
        info = text_of("model-info")
        if "SD1" not in info:
            fail("model info lacks the family: " + info)
        samplers = [o.get_attribute("value") for o in Select(by_id("sampler")).options]
        # "" (the model's default) and the 18 samplers.
        if len(samplers) != 19 or samplers[0] != "" or "dpm++2m_sde" not in samplers:
            fail("sampler list: %s" % samplers)
        schedulers = [o.get_attribute("value") for o in Select(by_id("scheduler")).options]
        if "karras" not in schedulers:
            fail("scheduler list: %s" % schedulers)
        # The model picker waits for GET /sdcpp/v1/models: hidden with one model, or without
        # the route (its 404 is then an expected console error).
        wait.until(lambda d: d.execute_script(
            "return document.getElementById('model-info').dataset.model !== undefined"))
        if not args.models_dir and by_id("model").is_displayed():
            fail("the model picker shows for a server with one model")
        errors = page_errors(r"/sdcpp/v1/models .*\b404\b")
        if errors:
            fail("page errors while loading: " + "; ".join(errors))
        if by_id("init-box").is_displayed() or by_id("preview").is_displayed():
            fail("image controls or preview show before they are used")
        if not by_id("live-preview").is_selected():
            fail("live preview is not on by default")

        # Generate: the images appear in the gallery with their settings.
        fill("prompt", "a red cube on a wooden table")
        fill("negative", "blurry")
        fill("width", 64)
        fill("height", 64)
        fill("steps", 2)
        Select(by_id("sampler")).select_by_value("euler")
        Select(by_id("scheduler")).select_by_value("karras")
        fill("seed", 7)
        fill("batch", 2)
        by_id("generate").click()
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#gallery .card img")) == 2)
        wait.until(lambda d: text_of("status").startswith("done"))
        # naturalWidth is 0 until the image has decoded.
        wait.until(lambda d: d.execute_script(
            "return [...document.querySelectorAll('#gallery .card img')]"
            ".every(i => i.complete && i.naturalWidth > 0)"))
        shown = cards()
        seeds = sorted(m.group(1) for c in shown for m in [re.search(r"Seed: (\d+)", c["settings"])] if m)
        if seeds != ["7", "8"]:
            fail("gallery seeds: %s" % seeds)
        for c in shown:
            if c["width"] != 64:
                fail("image width %s" % c["width"])
            for want in ("a red cube on a wooden table", "Negative prompt: blurry", "Steps: 2",
                         "Sampler: Euler", "Schedule type: Karras", "Size: 64x64"):
                if want not in c["settings"]:
                    fail('settings lack "%s": %s' % (want, c["settings"]))
        if not by_id("generate").is_enabled():
            fail("Generate stays disabled after a job")

        # Cancel: a long job shows live progress, and Cancel stops it.
        fill("steps", 150)
        fill("batch", 1)
        by_id("generate").click()
        wait.until(lambda d: re.search(r"sampling \d+/150", text_of("status")))
        progress = driver.execute_script("return document.getElementById('progress').style.width")
        if not by_id("cancel").is_enabled():
            fail("Cancel is not enabled while a job runs")
        by_id("cancel").click()
        wait.until(lambda d: text_of("status").startswith("cancelled"))
        if len(driver.find_elements(By.CSS_SELECTOR, "#gallery .card")) != 2:
            fail("a cancelled job added images")
        if by_id("cancel").is_enabled():
            fail("Cancel stays enabled after the job ended")
        with urllib.request.urlopen(base + "/sdcpp/v1/jobs", timeout=30) as r:
            jobs = json.load(r)
        if jobs["jobs"][0]["status"] != "cancelled":
            fail("last job is " + jobs["jobs"][0]["status"])
        errors = page_errors()
        if errors:
            fail("page errors: " + "; ".join(errors))
        print("page test: %d images shown with settings; progress reached %s; cancel worked"
              % (len(shown), progress))

        # Live preview: while a job samples, <img id=preview> shows the latest preview (a data:
        # PNG from the job's preview events); it goes when the job ends. An observer records
        # every change, so a fast job cannot slip between two polls.
        fill("steps", 12)
        driver.execute_script("""
            const el = document.getElementById('preview');
            window.previewSeen = [];
            window.previewObserver = new MutationObserver(() => {
              if (!el.hidden && el.src.startsWith('data:image/png;base64,'))
                window.previewSeen.push(el.title);
            });
            window.previewObserver.observe(el, {attributes: true});""")
        polled = set()
        by_id("generate").click()
        deadline = time.time() + args.timeout
        while not text_of("status").startswith(("done", "failed")) and time.time() < deadline:
            src, shown_now = driver.execute_script(
                "const e = document.getElementById('preview'); return [e.src, !e.hidden]")
            if shown_now and src.startswith("data:image/png;base64,"):
                polled.add(src[-40:])
            time.sleep(0.01)
        seen = driver.execute_script("window.previewObserver.disconnect(); return window.previewSeen")
        if not text_of("status").startswith("done"):
            fail("the live preview job did not finish: " + text_of("status"))
        if not seen:
            fail("no live preview was shown during a 12-step job")
        if by_id("preview").is_displayed() or by_id("preview").get_attribute("src"):
            fail("the live preview stays after the job ended")
        print("live preview: %d previews shown (%s), %d seen by polling"
              % (len(seen), ", ".join(seen[:3]) + (" ..." if len(seen) > 3 else ""), len(polled)))

        # img2img: an uploaded image goes to the server as init_image with its strength; the
        # card says so and the server's settings text has A1111's "Denoising strength".
        tmp = tempfile.mkdtemp(prefix="ggdiff-page-")
        small = write_png(os.path.join(tmp, "start.png"), 64)
        big = write_png(os.path.join(tmp, "big.png"), 300)  # over MAX_UPLOAD_PIXELS
        if by_id("strength").is_displayed():
            fail("Strength shows before an image is chosen")
        by_id("init-image").send_keys(small)
        wait.until(lambda d: by_id("strength").is_displayed())
        wait.until(lambda d: text_of("init-size") == "64x64")
        if by_id("strength").get_attribute("value") != "0.75":
            fail("default strength " + by_id("strength").get_attribute("value"))
        if by_id("as-ref").is_displayed():
            fail("the reference-image choice shows for a model without reference images")
        fill("strength", 0.6)
        fill("steps", 5)
        fill("seed", 11)
        before = len(cards())
        after = generate_and_wait(before)
        if len(after) != before + 1:
            fail("img2img added %d cards: %s" % (len(after) - before, text_of("status")))
        else:
            card = after[0]
            if "img2img, strength 0.6" not in card["meta"]:
                fail("the img2img card does not say so: " + card["meta"])
            for want in ("Denoising strength: 0.6", "Seed: 11", "Size: 64x64"):
                if want not in card["settings"]:
                    fail('img2img settings lack "%s": %s' % (want, card["settings"]))
            if card["width"] != 64:
                fail("img2img image width %s" % card["width"])
        with urllib.request.urlopen(base + "/sdcpp/v1/jobs", timeout=30) as r:
            kind = json.load(r)["jobs"][0].get("kind")
        print("img2img: card says \"%s\"; job kind %s" % (after[0]["meta"], kind))

        # A file over the server's --max-upload-pixels: its 413 error shows in the status line.
        by_id("init-image").send_keys(big)
        wait.until(lambda d: text_of("init-size") == "300x300")
        before = len(cards())
        by_id("generate").click()
        wait.until(lambda d: "error" in (by_id("status").get_attribute("class") or ""))
        status = text_of("status")
        if "init_image" not in status:
            fail("the 413 for a large upload is not shown: " + status)
        if not by_id("generate").is_enabled():
            fail("Generate stays disabled after a refused request")
        if len(cards()) != before:
            fail("a refused request added images")
        errors = page_errors(r"/sdcpp/v1/img_gen .*\b413\b")
        if errors:
            fail("page errors around the 413: " + "; ".join(errors))
        print("large upload: " + status)

        # Clear: the image controls go and the next job is txt2img again.
        by_id("init-clear").click()
        if by_id("init-box").is_displayed() or by_id("init-image").get_attribute("value"):
            fail("clear leaves the chosen image")

        if args.models_dir:
            check_model_picker(args, driver, wait, by_id, text_of, fill, cards, generate_and_wait)

        errors = page_errors()
        if errors:
            fail("page errors: " + "; ".join(errors))
    except Exception as e:  # a timeout or a driver error is a failure with its reason
        fail("%s: %s" % (type(e).__name__, e))
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        if failures:
            print("--- server log ---\n" + "".join(server_log)[-4000:], file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
