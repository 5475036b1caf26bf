#!/usr/bin/env bash
# Build the HTML report of an output JSON and screenshot it with headless Chromium (the PNG
# records the sha256 of the output it shows). scripts/regen_examples.sh runs it for the shipped
# example after regenerating the example output.
#
#   scripts/render_report.sh [OUTPUT_JSON] [PNG] [LANG]
#
# OUTPUT_JSON defaults to ragcheck_local/examples/example_output.json, PNG to
# ragcheck_local/examples/report.png, LANG to en.
# Set HTML_OUT=path to keep the HTML (default: a temp file). Needs the `chromium` binary
# (Debian: apt-get install -y chromium; add fonts-noto-cjk for Japanese). No network is used:
# the report is self-contained and Chromium runs with background networking disabled.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
input="${1:-$here/ragcheck_local/examples/example_output.json}"
png="${2:-$here/ragcheck_local/examples/report.png}"
lang="${3:-en}"
width="${WINDOW_WIDTH:-1280}"
height="${WINDOW_HEIGHT:-2000}"
python="${PYTHON:-python3}"
if [[ -x "$here/.venv/bin/python" && -z "${PYTHON:-}" ]]; then
    python="$here/.venv/bin/python"
fi

if [[ ! -f "$input" ]]; then
    echo "render_report.sh: no such output file: $input" >&2
    exit 2
fi
chrome="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$chrome" ]]; then
    echo "render_report.sh: chromium not found (apt-get install -y chromium)" >&2
    exit 2
fi

mkdir -p "$(dirname "$png")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
html="$(realpath -m "${HTML_OUT:-$work/report.html}")"
input="$(realpath "$input")"
(cd "$here" && "$python" -m ragcheck_local report "$input" --html "$html" --lang "$lang")

profile="$work/profile"
tmp_png="$work/shot.png"
"$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$profile" --screenshot="$tmp_png" \
    --window-size="$width,$height" "file://$(realpath "$html")" >/dev/null 2>&1
if [[ ! -s "$tmp_png" ]]; then
    echo "render_report.sh: chromium wrote no screenshot" >&2
    exit 1
fi
# Record which output the picture shows (its sha256, in a PNG text chunk): a test then tells a
# stale screenshot without a browser (ragcheck_local.dev.examples.screenshot_staleness).
(cd "$here" && "$python" -c 'import sys
from ragcheck_local.dev.examples import stamp_png
stamp_png(sys.argv[1], sys.argv[2])' "$tmp_png" "$input")
chmod 644 "$tmp_png"
mv "$tmp_png" "$png"
echo "wrote $png${HTML_OUT:+ and $HTML_OUT}"
