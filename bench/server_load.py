#!/usr/bin/env python3
"""Load test for ggdiff-server on loopback: N requests (default 1,000), a share of them
malformed (default 20%), from C concurrent clients (default 8), against the SD1 fixture.

Valid requests go through the three APIs in turn (A1111 txt2img, OpenAI generations,
sd-server async img_gen + polling) with a few seeds; every image must decode as a PNG of
the asked size whose parameters carry its seed, and every image of one seed must be the
same bytes whatever the route. Malformed requests (broken JSON, wrong types, negative
sizes, huge n, bad base64, bad multipart, deep nesting, unknown samplers, ...) must get a
4xx JSON error. The server's RSS is sampled all along; the summary (JSON on stdout) gives
RSS after warm-up, the peak after warm-up and at the end, errors, crashes and timings.

Usage: bench/server_load.py [--requests 1000] [--malformed 0.2] [--concurrency 8]
                            [--steps 1] [--size 64] [--server BIN] [--model FILE]
Exit status 0 only when nothing crashed and every request was answered correctly.
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    build = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--malformed", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--seeds", type=int, default=4, help="distinct seeds among valid requests")
    p.add_argument("--warmup", type=float, default=0.1, help="share of requests counted as warm-up")
    p.add_argument("--server", default=os.path.join(build, "ggdiff-server"))
    p.add_argument("--model", default=os.path.join(build, "fixtures", "sd1_mc32.safetensors"))
    p.add_argument("--tokenizer", default=os.path.join(SHARED, "data", "clip", "merges.txt"))
    p.add_argument("--rng-seed", type=int, default=1)
    return p.parse_args()


class Server:
    def __init__(self, args):
        cmd = [args.server, "-m", args.model, "--tokenizer", args.tokenizer, "--port", "0",
               "--max-queue", str(max(16, 2 * args.concurrency))]
        self.log = open(os.path.join(os.path.dirname(args.server), "server_load.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r":(\d+)\s*$", line)
        if not m:
            raise SystemExit("server did not start: " + line)
        self.port = int(m.group(1))
        deadline = time.time() + 300
        while time.time() < deadline:
            try:
                status, _ = self.request("GET", "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit("server did not become ready")

    def request(self, method, path, body=None, content_type="application/json", timeout=600):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": content_type} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def rss_kib(self):
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            return None
        return None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9


def malformed_cases(size):
    boundary = "XyZ"
    good = {"prompt": "x", "width": size, "height": size, "steps": 1}
    deep = "[" * 200 + "]" * 200
    return [
        ("POST", "/sdapi/v1/txt2img", '{"prompt": "x",', "application/json"),
        ("POST", "/sdapi/v1/txt2img", json.dumps(dict(good, steps="ten")), "application/json"),
        ("POST", "/sdapi/v1/txt2img", json.dumps(dict(good, width=-64)), "application/json"),
        ("POST", "/sdapi/v1/txt2img", json.dumps(dict(good, sampler_name="Warp")), "application/json"),
        ("POST", "/sdapi/v1/txt2img", deep, "application/json"),
        ("POST", "/sdapi/v1/img2img", json.dumps(dict(good, init_images=["%%%%"])), "application/json"),
        ("POST", "/sdapi/v1/img2img", json.dumps(dict(good, init_images=["aGVsbG8="])), "application/json"),
        ("POST", "/v1/images/generations", json.dumps({"prompt": "x", "n": 100000}), "application/json"),
        ("POST", "/v1/images/generations", json.dumps({"prompt": 7}), "application/json"),
        ("POST", "/v1/images/generations", json.dumps({"prompt": "x", "size": "-8x8"}), "application/json"),
        ("POST", "/v1/images/generations", "[]", "application/json"),
        ("POST", "/sdcpp/v1/img_gen", json.dumps({"prompt": "x", "init_image": "iVBORw0KG"}), "application/json"),
        ("POST", "/sdcpp/v1/img_gen", json.dumps({"prompt": "x", "sample_params": {"sample_steps": "a"}}), "application/json"),
        ("POST", "/sdcpp/v1/img_gen", "", "application/json"),
        ("POST", "/v1/images/edits", "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx\r\n--Q" % boundary,
         "multipart/form-data; boundary=" + boundary),
        ("POST", "/v1/images/edits", "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nx\r\n--%s--\r\n" % (boundary, boundary),
         "multipart/form-data; boundary=" + boundary),
        ("POST", "/v1/images/edits", json.dumps({"prompt": "x"}), "application/json"),
    ]


def png_info(data):
    """(width, height, parameters text) of a PNG, or None."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    w = int.from_bytes(data[16:20], "big")
    h = int.from_bytes(data[20:24], "big")
    params = None
    pos = 8
    while pos + 8 <= len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"tEXt" and body.startswith(b"parameters\x00"):
            params = body[len(b"parameters\x00"):].decode("latin-1")
        elif kind == b"iTXt" and body.startswith(b"parameters\x00"):
            params = body.split(b"\x00", 5)[-1].decode("utf-8", "replace")
        pos += 12 + n
    return w, h, params


class Checker:
    def __init__(self, size):
        self.size = size
        self.lock = threading.Lock()
        self.reference = {}  # seed -> base64 of the first image seen
        self.errors = []

    def image(self, seed, b64, route):
        try:
            data = base64.b64decode(b64)
        except Exception as e:  # noqa: BLE001
            return self.fail("%s seed %d: bad base64 (%s)" % (route, seed, e))
        info = png_info(data)
        if info is None:
            return self.fail("%s seed %d: not a PNG" % (route, seed))
        w, h, params = info
        if (w, h) != (self.size, self.size):
            return self.fail("%s seed %d: %dx%d" % (route, seed, w, h))
        if not params or ("Seed: %d," % seed) not in params:
            return self.fail("%s seed %d: parameters %r" % (route, seed, params))
        with self.lock:
            ref = self.reference.setdefault(seed, b64)
        if ref != b64:
            return self.fail("%s seed %d: image differs from the first one of this seed" % (route, seed))
        return True

    def fail(self, message):
        with self.lock:
            self.errors.append(message)
        return False


def run_valid(server, checker, i, seed, args):
    route = ("a1111", "openai", "sdcpp")[i % 3]
    settings = {"prompt": "a red cube on a table", "width": args.size, "height": args.size, "seed": seed}
    if route == "a1111":
        body = dict(settings, steps=args.steps, sampler_name="Euler", cfg_scale=7)
        status, raw = server.request("POST", "/sdapi/v1/txt2img", json.dumps(body))
        if status != 200:
            return checker.fail("a1111: HTTP %d %s" % (status, raw[:200]))
        images = json.loads(raw)["images"]
        return len(images) == 1 and checker.image(seed, images[0], route)
    if route == "openai":
        body = {"prompt": settings["prompt"], "size": "%dx%d" % (args.size, args.size), "seed": seed,
                "steps": args.steps, "sampler": "euler", "cfg_scale": 7}
        status, raw = server.request("POST", "/v1/images/generations", json.dumps(body))
        if status != 200:
            return checker.fail("openai: HTTP %d %s" % (status, raw[:200]))
        data = json.loads(raw)["data"]
        return len(data) == 1 and checker.image(seed, data[0]["b64_json"], route)
    body = dict(settings, sample_params={"sample_method": "euler", "sample_steps": args.steps,
                                          "guidance": {"txt_cfg": 7}})
    status, raw = server.request("POST", "/sdcpp/v1/img_gen", json.dumps(body))
    if status != 202:
        return checker.fail("sdcpp: HTTP %d %s" % (status, raw[:200]))
    job_id = json.loads(raw)["id"]
    while True:
        status, raw = server.request("GET", "/sdcpp/v1/jobs/" + job_id)
        if status != 200:
            return checker.fail("sdcpp poll: HTTP %d" % status)
        job = json.loads(raw)
        if job["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.05)
    if job["status"] != "completed":
        return checker.fail("sdcpp: job %s %s" % (job["status"], job.get("error")))
    images = job["result"]["images"]
    return len(images) == 1 and checker.image(seed, images[0]["b64_json"], route)


def run_malformed(server, checker, case):
    method, path, body, ctype = case
    status, raw = server.request(method, path, body.encode("utf-8"), ctype)
    if not 400 <= status < 500:
        return checker.fail("malformed %s: HTTP %d %s" % (path, status, raw[:200]))
    try:
        json.loads(raw)
    except ValueError:
        return checker.fail("malformed %s: error body is not JSON" % path)
    return True


def main():
    args = parse_args()
    rng = random.Random(args.rng_seed)
    server = Server(args)
    checker = Checker(args.size)
    cases = malformed_cases(args.size)
    plan = []
    for i in range(args.requests):
        if rng.random() < args.malformed:
            plan.append(("bad", rng.choice(cases)))
        else:
            plan.append(("ok", 1 + rng.randrange(args.seeds)))
    warmup_n = int(args.requests * args.warmup)

    done = [0]
    done_lock = threading.Lock()
    samples = []  # (seconds, requests done, rss KiB)
    stop_sampling = threading.Event()
    t0 = time.time()

    def sampler():
        while not stop_sampling.is_set():
            rss = server.rss_kib()
            if rss is not None:
                with done_lock:
                    samples.append((time.time() - t0, done[0], rss))
            stop_sampling.wait(0.2)

    sampler_thread = threading.Thread(target=sampler, daemon=True)
    sampler_thread.start()
    results = {"ok": 0, "bad": 0, "failed": 0}
    latencies = []

    def one(item):
        i, (kind, value) = item
        start = time.time()
        try:
            ok = run_valid(server, checker, i, value, args) if kind == "ok" else run_malformed(server, checker, value)
        except Exception as e:  # noqa: BLE001  (connection refused = a crash)
            ok = checker.fail("%s request %d: %r" % (kind, i, e))
        with done_lock:
            done[0] += 1
            results[kind if ok else "failed"] += 1
            if kind == "ok":
                latencies.append(time.time() - start)

    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        list(pool.map(one, enumerate(plan)))
    elapsed = time.time() - t0
    stop_sampling.set()
    sampler_thread.join()
    alive = server.proc.poll() is None
    health = None
    if alive:
        try:
            health = server.request("GET", "/health")[0]
        except OSError:
            health = None
    exit_code = server.stop() if alive else server.proc.returncode

    after = [s for s in samples if s[1] >= warmup_n]
    rss_warm = after[0][2] if after else None
    peak_after = max((s[2] for s in after), default=None)
    summary = {
        "requests": args.requests,
        "valid": sum(1 for k, _ in plan if k == "ok"),
        "malformed": sum(1 for k, _ in plan if k == "bad"),
        "concurrency": args.concurrency,
        "valid_answered_correctly": results["ok"],
        "malformed_answered_4xx": results["bad"],
        "failures": results["failed"],
        "first_failures": checker.errors[:10],
        "server_alive_at_end": alive,
        "health_at_end": health,
        "server_exit_code": exit_code,
        "seconds": round(elapsed, 1),
        "valid_latency_s": {
            "mean": round(sum(latencies) / len(latencies), 3) if latencies else None,
            "max": round(max(latencies), 3) if latencies else None,
        },
        "rss_mib": {
            "after_warmup": round(rss_warm / 1024, 1) if rss_warm else None,
            "peak_after_warmup": round(peak_after / 1024, 1) if peak_after else None,
            "peak_overall": round(max(s[2] for s in samples) / 1024, 1) if samples else None,
            "at_end": round(samples[-1][2] / 1024, 1) if samples else None,
            "growth_after_warmup": round((peak_after - rss_warm) / 1024, 1) if after else None,
        },
        "rss_samples": len(samples),
    }
    print(json.dumps(summary, indent=2))
    good = results["failed"] == 0 and alive and health == 200 and exit_code == 0
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
