#!/usr/bin/env bash
#: Sourced by the install scripts: `npm_pkg DIR PACKAGE@VERSION...` installs pinned npm packages
#: under "$cache/DIR" once (a stamp file names what was installed; a new pin installs again).

npm_pkg() { # dir, packages...
  local dir="$cache/$1"
  shift
  local stamp="$dir/.installed-$(echo "$*" | tr ' /@' '___')"
  if [[ ! -f "$stamp" ]]; then
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >&2
    touch "$stamp"
  fi
}
