#!/usr/bin/env bash
# Rebuild three-flock3d.min.js from three.js on npm (not run by the tests or CI; the result is
# committed). three.js no longer ships a minified module build, and its module build is two
# files (three.module.js imports three.core.js, 2.1 MB together): esbuild bundles the names
# three-entry.mjs exports, tree-shaken and minified, into one classic script that an HTML page
# can inline as it is (no module loader, importmap or blob: URLs, and it runs from file://).
set -euo pipefail
THREE_VERSION=0.187.0
ESBUILD_VERSION=0.28.2
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund "three@$THREE_VERSION" "esbuild@$ESBUILD_VERSION" >/dev/null
cp "$here/three-entry.mjs" entry.mjs
npx esbuild entry.mjs --bundle --minify --format=iife --global-name=FLOCK3D_THREE \
  --legal-comments=none --target=es2020 \
  --banner:js="/* three.js $THREE_VERSION (https://threejs.org), copyright three.js authors, MIT licence (LICENSE beside this file); bundled for flock3d by build.sh */" \
  --outfile="$here/three-flock3d.min.js"
cp node_modules/three/LICENSE "$here/LICENSE"
