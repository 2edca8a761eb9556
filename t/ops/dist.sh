#!/usr/bin/env bash
# The release tarball (`make dist`) holds every file of the repository
# but the CI's own: a package or a test run from it has what the
# repository's would (the maintainer scripts, the contract the tests
# import, the linters' settings, the benchmarks).
# Needs a configured tree and git; no server.
#   t/ops/dist.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/waitlist-dist.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

make -C "$repo" -s distdir distdir="$tmp/tree" >/dev/null
(cd "$tmp/tree" && find . -type f | sed 's|^\./||' | sort) >"$tmp/dist"
git -C "$repo" ls-files | grep -v -x -e .ci/run -e .gitignore | sort >"$tmp/git"
missing=$(comm -13 "$tmp/dist" "$tmp/git")
if [ -n "$missing" ]; then
	echo "dist: FAIL: not in the release tarball:" >&2
	printf '  %s\n' $missing >&2
	exit 1
fi
echo "dist: ok ($(wc -l <"$tmp/git") files)"
