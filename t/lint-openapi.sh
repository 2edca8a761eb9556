#!/bin/sh
# Lint openapi.json with Redocly CLI: the recommended rules as configured in
# t/redocly.yaml (t/.redocly.lint-ignore.yaml lists the deliberate
# exceptions).  Needs the test dependencies: npm ci --prefix t.
# t/integration/contract.test.mjs runs the same lint and also fails on
# warnings.  Extra arguments go to "redocly lint" (e.g. --format=json).
set -eu
cd "$(dirname "$0")/.."
cli=t/node_modules/@redocly/cli/bin/cli.js
if [ ! -f "$cli" ]; then
	echo "lint-openapi: $cli is missing: run npm ci --prefix t" >&2
	exit 1
fi
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
	exec node "$cli" lint openapi.json --config t/redocly.yaml "$@"
