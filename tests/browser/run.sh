#!/usr/bin/env bash
# Runs the web inbox tests in Debian's Chromium (playwright-core) against a Cortex binary.
#
#   CORTEX_BIN=/path/to/cortex tests/browser/run.sh [more node --test arguments]
#
# CHROMIUM overrides the browser (default /usr/bin/chromium, Debian package `chromium`).
# Screenshots and server logs land in tests/browser/artifacts/ (kept, gitignored).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if [[ -z "${CORTEX_BIN:-}" ]]; then
    echo "run.sh: set CORTEX_BIN to the cortex binary" >&2
    exit 2
fi
if [[ ! -x "$CORTEX_BIN" ]]; then
    echo "run.sh: CORTEX_BIN=$CORTEX_BIN is not an executable file" >&2
    exit 2
fi
CORTEX_BIN="$(cd "$(dirname "$CORTEX_BIN")" && pwd)/$(basename "$CORTEX_BIN")"
export CORTEX_BIN

export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [[ ! -x "$CHROMIUM" ]]; then
    echo "run.sh: no Chromium at $CHROMIUM (Debian: apt-get install chromium; scripts/setup --test does)" >&2
    exit 2
fi

NODE="${NODE:-node}"
if ! command -v "$NODE" >/dev/null 2>&1; then
    echo "run.sh: node not found (need Node >= 20; Debian: apt-get install nodejs npm)" >&2
    exit 2
fi
node_major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
if (( node_major < 20 )); then
    echo "run.sh: $("$NODE" --version) is too old; the tests need Node >= 20 (node:test, fetch)" >&2
    exit 2
fi

if [[ ! -d node_modules/playwright-core ]]; then
    npm ci --no-audit --no-fund --prefer-offline
fi

rm -rf artifacts
mkdir -p artifacts
echo "=== web inbox: $("$NODE" --version), $("$CHROMIUM" --version 2>/dev/null | head -n 1)"
# One file, its tests in order (they share one server); each test has its own timeout.
"$NODE" --test --test-reporter=spec --test-concurrency=1 "$@" inbox.test.mjs
echo "=== screenshots: $here/artifacts/"
