#!/usr/bin/env bash
# Render a simforge HTML report in headless Chromium and save a PNG screenshot: the check that
# the self-contained report (inline SVG, no network) really renders.
#   scripts/screenshot_report.sh REPORT.html OUT.png [WIDTHxHEIGHT]
set -euo pipefail
html="$(realpath "$1")"
out="$(realpath -m "$2")"
size="${3:-1280x2400}"
browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [ -z "$browser" ]; then
  echo "no chromium found (Debian: apt-get install -y chromium)" >&2
  exit 3
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --disable-background-networking --no-first-run --hide-scrollbars \
  --user-data-dir="$profile" --window-size="${size/x/,}" \
  --screenshot="$out" "file://$html" >/dev/null 2>&1
test -s "$out"
echo "$out"
