#!/usr/bin/env bash
# tests/packaging/deb.sh [BUILD_DIR]: builds the Debian package in BUILD_DIR
# (default build; configured already, or configured here), installs it on
# this machine with dpkg -i, checks what it installed, removes it with
# dpkg --purge and checks that everything is gone. Needs root, dpkg-dev
# (dpkg-shlibdeps) and man-db. The package is removed again on any exit.
#
# Ends with one line "N passed, N failed"; exits 1 if any check failed and 2
# if it could not get as far as checking (no root, rlock already installed).

# The checks are small scripts in single quotes, for bash -c to expand.
# shellcheck disable=SC2016
set -uo pipefail

cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}
passed=0
failed=0
installed=

pass() {
  passed=$((passed + 1))
  printf 'ok: %s\n' "$1"
}

fail() {
  failed=$((failed + 1))
  printf 'FAILED: %s\n' "$1"
}

# check DESCRIPTION COMMAND [ARG...]: one check, its output shown on failure.
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then
    pass "$what"
  else
    fail "$what"
    [[ -n $out ]] && printf '    %s\n' "${out//$'\n'/$'\n'    }"
  fi
}

summary() {
  printf '%d passed, %d failed\n' "$passed" "$failed"
}

cleanup() {
  [[ -n $installed ]] || return 0
  local -i tries
  # Interrupted during dpkg -i, the purge may find dpkg's lock still taken.
  for ((tries = 0; tries < 10; tries++)); do
    dpkg --purge rlock >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "deb.sh: dpkg --purge rlock failed; remove the package by hand" >&2
}

# give_up MESSAGE: stop before the checks could run.
give_up() {
  echo "deb.sh: $*" >&2
  fail "$*"
  summary
  exit 2
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

((EUID == 0)) || give_up "must run as root (it installs the package with dpkg -i)"
for tool in cmake cpack dpkg dpkg-deb dpkg-shlibdeps man; do
  command -v "$tool" >/dev/null || give_up "$tool not found (packaging/install-deps cmake dpkg-dev man-db)"
done
# Never replace or remove an rlock this machine had before.
# package_state: rlock's state in dpkg's database (installed, config-files,
# ...), or not-installed.
package_state() {
  local state
  state=$(dpkg-query -W -f='${db:Status-Status}' rlock 2>/dev/null)
  echo "${state:-not-installed}"
}
if [[ $(package_state) != not-installed ]]; then
  give_up "the package rlock is on this machine already ($(package_state)); remove it first"
fi
files=(
  /usr/bin/rlock
  /usr/share/man/man1/rlock.1.gz
  /usr/share/bash-completion/completions/rlock
  /usr/share/zsh/vendor-completions/_rlock
  /usr/share/fish/vendor_completions.d/rlock.fish
)
for file in "${files[@]}"; do
  [[ -e $file ]] && give_up "$file exists already (not from a package); not overwriting it"
done

# Build.
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S . -B "$build" >/dev/null || give_up "cmake -S . -B $build failed"
fi
cmake --build "$build" -j"$(nproc)" >/dev/null || give_up "cmake --build $build failed"
rm -f "$build"/rlock_*.deb
(cd "$build" && cpack -G DEB) >"$build/cpack-deb.log" 2>&1 ||
  { cat "$build/cpack-deb.log" >&2; give_up "cpack -G DEB failed"; }
debs=("$build"/rlock_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || give_up "cpack made no $build/rlock_*.deb"
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
pass "built $deb (version $version)"

# The package as built.
check "the package holds the binary, the man page and three completions" \
  bash -c 'contents=$(dpkg-deb -c "$1") || exit 1
    for path in ./usr/bin/rlock ./usr/share/man/man1/rlock.1.gz \
      ./usr/share/bash-completion/completions/rlock \
      ./usr/share/zsh/vendor-completions/_rlock \
      ./usr/share/fish/vendor_completions.d/rlock.fish; do
      grep -q " $path\$" <<<"$contents" || { echo "missing: $path"; exit 1; }
    done' bash "$deb"
check "its control says Section utils and Package rlock" \
  bash -c '[[ $(dpkg-deb -f "$1" Section) == utils && $(dpkg-deb -f "$1" Package) == rlock ]]' bash "$deb"

# Install. From here on, cleanup purges the package (even half installed).
installed=1
if dpkg -i "$deb" >"$build/dpkg-install.log" 2>&1; then
  pass "dpkg -i $deb"
else
  fail "dpkg -i $deb"
  sed 's/^/    /' "$build/dpkg-install.log"
fi

check "dpkg -s rlock: installed, Depends names libhiredis" \
  bash -c 'status=$(dpkg -s rlock) || exit 1
    echo "$status"
    grep -q "^Status: install ok installed" <<<"$status" &&
      grep -Eq "^Depends:.*libhiredis" <<<"$status"'
check "/usr/bin/rlock --version says $version" \
  bash -c '[[ $(/usr/bin/rlock --version | head -1) == "rlock $1"* ]]' bash "$version"
check "Recommends names libssl; --version finds it (TLS is loaded on demand)" \
  bash -c 'dpkg -s rlock | grep -Eq "^Recommends:.*libssl3" &&
    /usr/bin/rlock --version | grep -q "^TLS: OpenSSL 3"'
check "/usr/bin/rlock finds its libraries" \
  bash -c '! ldd /usr/bin/rlock | grep -F "not found"'
check "/usr/bin/rlock runs: exit 69 with no server" \
  bash -c '/usr/bin/rlock --url redis://127.0.0.1:1/0 --connect-timeout 0.5s -n x true 2>/dev/null
    [[ $? -eq 69 ]]'
if grep -qs '^path-exclude=/usr/share/man/' /etc/dpkg/dpkg.cfg.d/*; then
  # Minimal images (Docker's debian) tell dpkg to leave out man pages.
  pass "man -w rlock: skipped, /etc/dpkg/dpkg.cfg.d excludes man pages here"
else
  check "man -w rlock finds /usr/share/man/man1/rlock.1.gz" \
    bash -c '[[ $(man -w rlock) == /usr/share/man/man1/rlock.1.gz ]]'
  check "the man page renders" \
    bash -c 'MANWIDTH=80 man rlock 2>&1 | grep -q "run a command while holding a lock in Redis"'
fi
for file in "${files[@]:2}"; do
  check "$file installed" test -s "$file"
done
check "the bash completion registers _rlock" \
  bash --norc --noprofile -c 'source /usr/share/bash-completion/completions/rlock && complete -p rlock'
if command -v zsh >/dev/null; then
  check "the zsh completion parses (zsh -n)" zsh -n /usr/share/zsh/vendor-completions/_rlock
fi
if command -v fish >/dev/null; then
  check "fish loads the completion by itself" \
    bash -c '[[ $(fish -c "complete -C \"rlock --kill-sig\"" | cut -f1) == --kill-signal ]]'
fi

# Remove.
if dpkg --purge rlock >"$build/dpkg-purge.log" 2>&1; then
  installed=
  pass "dpkg --purge rlock"
else
  fail "dpkg --purge rlock"
  sed 's/^/    /' "$build/dpkg-purge.log"
fi
check "dpkg no longer knows rlock" test "$(package_state)" = not-installed
for file in "${files[@]}"; do
  check "$file removed" test ! -e "$file"
done

summary
((failed == 0))
