#!/usr/bin/env bash
# peers.sh compares agentctx's token counter with the JavaScript tokenizers
# (tiktoken, gpt-tokenizer, ai-tokenizer, js-tiktoken; versions pinned in
# js/package.json) on the same deterministic 1 MiB mixed text, in one run,
# on one CPU core. It needs Go, node and the npm registry (for the first
# `npm ci`); the packages go to bench/js/node_modules (gitignored).
#
#   bench/peers.sh [-rounds 5] [-seconds 1] [-encodings o200k_base,cl100k_base]
#
# CORE=n picks the core to pin to (default: the last one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ ! -d bench/js/node_modules/tiktoken ]; then
	(cd bench/js && npm ci --no-audit --no-fund --loglevel=error)
fi
mkdir -p bench/out
go build -o bench/out/peers ./bench/cmd/peers
pin=()
if command -v taskset >/dev/null; then
	pin=(taskset -c "${CORE:-$(($(nproc) - 1))}")
fi
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm); nproc $(nproc); $(lscpu 2>/dev/null | grep 'Model name' | sed 's/  */ /g'); $(go version); node $(node --version)"
GOMAXPROCS=1 "${pin[@]}" bench/out/peers "$@"
