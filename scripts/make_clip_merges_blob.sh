#!/bin/sh
# Writes data/clip/merges.txt.gz (the built-in CLIP vocabulary) from a CLIP merges.txt,
# reproducibly (no name or time stamp in the gzip header).
# Usage: scripts/make_clip_merges_blob.sh ../shared/data/clip/merges.txt
set -eu
src=${1:?usage: $0 MERGES.TXT}
head -n 1 "$src" | grep -q '^#version' || { echo "$src: not a merges.txt" >&2; exit 1; }
out=$(dirname "$0")/../data/clip/merges.txt.gz
gzip -9nc "$src" > "$out"
echo "wrote $out ($(wc -c < "$out") bytes); sha256 of the list: $(sha256sum "$src" | cut -d' ' -f1)"
