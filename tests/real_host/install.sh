#!/usr/bin/env bash
# Installs the pinned Claude Code client for the real-host test tier (tests/real_host/real_host.rs)
# into a cache outside the repository, when it is missing, and prints the path of its
# native binary on stdout. Exit 0 with the path; exit 1 with one line on stderr when the
# client is absent and cannot be installed (no npm, no registry).
#
#   tests/real_host/install.sh            # install if missing, print the binary's path
#   tests/real_host/install.sh --check    # only print the path; exit 1 when not installed
#
# The cache is $ABCD_CLAUDE_CODE_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/abcd/claude-code-<version>.
set -euo pipefail

# The one version the tier is written against (docs/real-host.md says how to move it).
VERSION=2.1.332
# npm may take a while on a slow registry mirror; the first install is about 400 MB.
INSTALL_TIMEOUT_SECS=900

CACHE="${ABCD_CLAUDE_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/abcd/claude-code-$VERSION}"

# The platform package carries the native binary; the wrapper's postinstall hard-links it
# over bin/claude.exe, but only when npm runs install scripts, so the platform binary is
# the one to run.
binary() {
  local native="$CACHE/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
  local wrapper="$CACHE/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
  if [ -x "$native" ]; then
    echo "$native"
  elif [ -x "$wrapper" ] && head -c 4 "$wrapper" | grep -q ELF; then
    echo "$wrapper"
  else
    return 1
  fi
}

installed() {
  local bin version
  bin=$(binary) || return 1
  # --version answers offline; anything but the pinned version is a stale cache.
  version=$("$bin" --version 2>/dev/null) || return 1
  [[ "$version" == "$VERSION "* ]] || return 1
  echo "$bin"
}

if installed; then
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "the Claude Code client $VERSION is not installed in $CACHE; run tests/real_host/install.sh" >&2
  exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not on PATH, so the Claude Code client $VERSION cannot be installed into $CACHE" >&2
  exit 1
fi
echo "installing @anthropic-ai/claude-code@$VERSION into $CACHE (first run only, about 400 MB)" >&2
mkdir -p "$CACHE"
started=$(date +%s)
# The version is pinned on purpose: Node here is 20 and $VERSION declares node>=22, so an
# unpinned install silently picks an older release. With the pin npm only warns
# (EBADENGINE); the client is a native binary and does not run on Node.
if ! timeout "$INSTALL_TIMEOUT_SECS" npm install --prefix "$CACHE" --no-audit --no-fund --no-save \
  --engine-strict=false "@anthropic-ai/claude-code@$VERSION" >&2; then
  echo "npm could not install @anthropic-ai/claude-code@$VERSION into $CACHE" >&2
  exit 1
fi
if ! installed; then
  echo "npm installed @anthropic-ai/claude-code@$VERSION into $CACHE, but no runnable native binary answers --version with $VERSION" >&2
  exit 1
fi
echo "installed in $(($(date +%s) - started)) s" >&2
