#!/usr/bin/python3
"""block_estimate.py RESULTS BLOCKS [UNIT]: a whole step estimated from one- and two-block runs.

RESULTS is the JSON object a bench script gathered, with "ggdiff_1_blocks", "ggdiff_2_blocks"
and, when the reference engine ran, "reference_1_blocks" and "reference_2_blocks" (each with a
"step_seconds" number or list; the minimum of a list counts). One block's time is the
difference of the two; the rest of the one-block step is the one-block time minus it; the
whole step is that rest plus BLOCKS blocks. UNIT names the blocks ("blocks", "double blocks").
Prints RESULTS with a "summary" added.
"""
import json
import sys


def step(run):
    s = (run or {}).get("step_seconds")
    return min(s) if isinstance(s, list) else s


def parts(one, two, blocks):
    block = max(two - one, 0.0)
    rest = one - block
    return {"one_block_step_seconds": round(one, 3), "block_seconds": round(block, 3),
            "rest_of_step_seconds": round(rest, 3),
            "step_estimate_seconds": round(rest + blocks * block, 2)}


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    r = json.loads(sys.argv[1])
    blocks = int(sys.argv[2])
    unit = sys.argv[3] if len(sys.argv) == 4 else "blocks"
    summary = {"whole_step": "%d %s" % (blocks, unit)}
    g1, g2 = step(r.get("ggdiff_1_blocks")), step(r.get("ggdiff_2_blocks"))
    if g1 and g2:
        summary["ggdiff"] = parts(g1, g2, blocks)
    r1, r2 = step(r.get("reference_1_blocks")), step(r.get("reference_2_blocks"))
    if r1 and r2:
        summary["reference"] = parts(r1, r2, blocks)
        if g1 and g2:
            summary["ggdiff_over_reference_block"] = round(
                summary["ggdiff"]["block_seconds"] /
                max(summary["reference"]["block_seconds"], 1e-9), 3)
    r["summary"] = summary
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
