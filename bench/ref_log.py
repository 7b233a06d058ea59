#!/usr/bin/python3
"""ref_log.py LOG START END STEPS [PER_STEP]: the timing of one reference-engine run as JSON.

LOG is what stable-diffusion.cpp printed; START and END are `date +%s.%N` around the run. Prints
{"wall_seconds", "sampling_seconds", "step_seconds"}, or {"wall_seconds", "error"} when the log
has no "sampling completed" line. step_seconds is the sampling time over STEPS, or with
PER_STEP=1 the list of the progress bar's per-step times after the first one (the first step
also loads the weights lazily), when the bar shows more than one.
"""
import json
import re
import sys


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    text = open(sys.argv[1], errors="replace").read()
    steps = int(sys.argv[4])
    per_step = len(sys.argv) == 6 and sys.argv[5] == "1"
    out = {"wall_seconds": round(float(sys.argv[3]) - float(sys.argv[2]), 1)}
    m = re.search(r"sampling completed, taking ([\d.]+)s", text)
    if not m:
        out["error"] = "no 'sampling completed' line: " + " | ".join(text.strip().splitlines()[-3:])
        print(json.dumps(out))
        return
    out["sampling_seconds"] = float(m.group(1))
    out["step_seconds"] = round(float(m.group(1)) / steps, 3)
    if per_step:
        # The progress bar's per-step rates ("2/3 - 2.60s/it").
        rates = [float(v) if unit == "s/it" else 1.0 / float(v)
                 for v, unit in re.findall(r"\d+/\d+ - ([\d.]+)(s/it|it/s)", text)]
        if len(rates) > 1:
            out["step_seconds"] = rates[1:]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
