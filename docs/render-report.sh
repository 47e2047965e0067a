#!/usr/bin/env bash
# Builds a round report (`matchmaker report`) and renders it in headless Chromium to a
# PNG, to check by eye what an operator's browser shows: plots drawn, labels readable and
# apart, nothing cut off. Not part of the test suite (CI does not need a browser).
#
# Usage:
#   docs/render-report.sh [REPORT ARGS...]
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/mm docs/render-report.sh --queue ranked_3v3
#
# The arguments go to `matchmaker report` (--queue, --from, --to, --database-url); the
# database is $DATABASE_URL, else the private PostgreSQL of a local `matchmaker run`.
# Rounds to look at come from e.g. `DATABASE_URL=... matchmaker-lab demo --duration 6m`.
#
# Environment:
#   OUT_DIR   where report.html and report.png go (default: target/report)
#   WIDTH     browser window width in CSS pixels (default: 1100)
#   HEIGHT    window height; the screenshot is this tall (default: enough for every plot)
#   CHROMIUM  the browser binary (default: chromium; Debian: apt-get install chromium)
set -euo pipefail

cd "$(dirname "$0")/.."
out_dir=${OUT_DIR:-target/report}
width=${WIDTH:-1100}
browser=${CHROMIUM:-chromium}

if ! command -v "$browser" >/dev/null; then
    echo "error: $browser not found (Debian/Ubuntu: apt-get install -y chromium)" >&2
    exit 1
fi

mkdir -p "$out_dir"
cargo build --release --quiet
target/release/matchmaker report "$@" --out "$out_dir/report.html"

# One plot is about 430 px tall with its caption at this width; the summary, headings and
# notes take about 700 px more.
svgs=$(grep -o '<svg' "$out_dir/report.html" | wc -l)
height=${HEIGHT:-$((700 + 430 * svgs))}

# --no-sandbox: Chromium refuses to run as root with its sandbox (containers, CI boxes).
# A throwaway profile keeps the run from touching the user's own.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$profile" --window-size="$width,$height" \
    --screenshot="$out_dir/report.png" "file://$(realpath "$out_dir/report.html")" \
    2> "$out_dir/chromium.log" || {
    echo "error: chromium failed; its log: $out_dir/chromium.log" >&2
    exit 1
}
echo "screenshot: $out_dir/report.png (${width}x${height}); page: $out_dir/report.html"
