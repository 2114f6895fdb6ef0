#!/usr/bin/env bash
# gen-reference.sh regenerates the reference data that `go test ./tokens`
# checks against: the Unicode character classes of tiktoken's regex engine
# (tokens/internal/gen/unicode_classes.json, then tokens/data/*.bin via
# go generate) and the golden token counts and ids
# (tokens/testdata/reference.jsonl.gz). It needs node and npm (the npm
# registry) once; the tests themselves need neither.
set -euo pipefail
cd "$(dirname "$0")"
(cd js && npm ci --no-audit --no-fund --loglevel=error)
node js/unicode-probe.mjs
(cd ../tokens && go generate .)
mkdir -p out
go run ./cmd/mixtext > out/mixed.txt
node js/reference.mjs out/mixed.txt
