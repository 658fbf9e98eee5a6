#!/usr/bin/env bash
# Installs the pinned Codex CLI for the real-host tier's Codex scenarios
# (tests/real_host/codex.rs) into a cache outside the repository, when it is missing, and
# prints the path of its native binary on stdout. Exit 0 with the path; exit 1 with one
# line on stderr when the CLI is absent and cannot be installed (no npm, no registry).
#
#   tests/real_host/codex_install.sh            # install if missing, print the binary's path
#   tests/real_host/codex_install.sh --check    # only print the path; exit 1 when not installed
#
# The cache is $ABCD_CODEX_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/abcd/codex-<version>.
set -euo pipefail

# The one version the tier is written against (docs/real-host.md says how to move it).
VERSION=0.171.0
# The download is about 170 MB and the install 424 MB; a slow registry mirror takes a while.
INSTALL_TIMEOUT_SECS=900

CACHE="${ABCD_CODEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/abcd/codex-$VERSION}"

# The wrapper's optional dependency per platform (an npm alias, @openai/codex-linux-x64 ->
# @openai/codex@<version>-linux-x64) carries a statically linked (musl) native binary; the
# tier runs it directly, so Node is needed only for npm. node_modules/.bin/codex is a Node
# wrapper that execs the same file.
binary() {
  local found
  for found in "$CACHE"/node_modules/@openai/codex-linux-*/vendor/*-unknown-linux-musl/bin/codex; do
    if [ -x "$found" ]; then
      echo "$found"
      return 0
    fi
  done
  return 1
}

installed() {
  local bin version scratch
  bin=$(binary) || return 1
  # Even --version creates $CODEX_HOME/tmp; a throwaway CODEX_HOME keeps ~/.codex untouched.
  scratch=$(mktemp -d)
  version=$(CODEX_HOME="$scratch" "$bin" --version 2>/dev/null) || { rm -rf "$scratch"; return 1; }
  rm -rf "$scratch"
  # Anything but the pinned version is a stale cache.
  [ "$version" = "codex-cli $VERSION" ] || return 1
  echo "$bin"
}

if installed; then
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "the Codex CLI $VERSION is not installed in $CACHE; run tests/real_host/codex_install.sh" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not on PATH, so the Codex CLI $VERSION cannot be installed into $CACHE" >&2
  exit 1
fi
echo "installing @openai/codex@$VERSION into $CACHE (first run only, about 170 MB to fetch, 424 MB on disk)" >&2
mkdir -p "$CACHE"
started=$(date +%s)
if ! timeout "$INSTALL_TIMEOUT_SECS" npm install --prefix "$CACHE" --no-audit --no-fund --no-save \
  "@openai/codex@$VERSION" >&2; then
  echo "npm could not install @openai/codex@$VERSION into $CACHE" >&2
  exit 1
fi
if ! installed; then
  echo "npm installed @openai/codex@$VERSION into $CACHE, but no runnable native binary answers --version with codex-cli $VERSION" >&2
  exit 1
fi
echo "installed in $(($(date +%s) - started)) s" >&2
