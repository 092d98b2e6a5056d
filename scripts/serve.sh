#!/usr/bin/env bash
# serve.sh: installs the build dependencies, builds mcp-execd (release) and runs it on stdio.
# Configuration comes from the MCP_EXEC_* environment variables (see mcp-execd(8)); arguments are
# passed through (--help, --version).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
"$src/scripts/deps.sh" >&2
build="$src/build-release"
[ -f "$build/build.ninja" ] || meson setup "$build" "$src" --buildtype=release -Dtests=false >&2
ninja -C "$build" daemon/mcp-execd >&2
exec "$build/daemon/mcp-execd" "$@"
