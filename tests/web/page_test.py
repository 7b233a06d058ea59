#!/usr/bin/env python3
"""The web page of ggdiff-server in headless Chromium.

Debian's chromium is driven through chromedriver (package chromium-driver) by Debian's
python3-selenium: the page loads and shows the model's info and the sampler lists, generates a
batch and shows each image with its settings, and cancels a running generation.

  python3 tests/web/page_test.py --server build/ggdiff-server --model FIXTURE --tokenizer MERGES

ctest runs it as server_web_page; scripts/setup.sh installs chromium, chromium-driver and
python3-selenium.
"""

import argparse
import json
import os
import re
import subprocess
import sys
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
    return p.parse_args()


def start_server(args):
    """Starts the server on a free loopback port; returns (process, base URL, log lines)."""
    proc = subprocess.Popen(
        [args.server, "-m", args.model, "--tokenizer", args.tokenizer, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
        cards = driver.execute_script(
            "return [...document.querySelectorAll('#gallery .card')].map(c => ({"
            "width: c.querySelector('img').naturalWidth,"
            "settings: c.querySelector('.settings').textContent}))")
        seeds = sorted(m.group(1) for c in cards for m in [re.search(r"Seed: (\d+)", c["settings"])] if m)
        if seeds != ["7", "8"]:
            fail("gallery seeds: %s" % seeds)
        for c in cards:
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
        errors = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        if errors:
            fail("page errors: " + "; ".join(errors))
        print("page test: %d images shown with settings; progress reached %s; cancel worked"
              % (len(cards), progress))
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
