#!/bin/sh
# The console's browser test needs Debian's chromium (playwright-core drives it and downloads no
# browser of its own). Installs it with apt-get when it is missing and this user may (root, or
# sudo without a password); otherwise says what to do. Never lets the suite skip silently.
set -eu
browser="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$browser" ] && exit 0
if [ -n "${CHROMIUM_PATH:-}" ]; then
  echo "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable browser" >&2
  exit 1
fi
if [ "$(id -u)" = "0" ]; then as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root="sudo"
else
  echo "the console tests need Debian's chromium: run 'sudo apt-get install chromium' (or set CHROMIUM_PATH)" >&2
  exit 1
fi
echo "installing Debian's chromium for the console's browser tests" >&2
$as_root apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y -q --no-install-recommends chromium >&2
