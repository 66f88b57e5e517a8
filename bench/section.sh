#!/usr/bin/env bash
# section.sh DIR: one pass through the critical section of P3's kinds of lock
# (a plain lock, --limit 3, --shared; bench/README.md), where more than one
# holder may be inside. Appends "S <epoch> <pid>" to DIR/events on entering
# and "E <epoch> <pid>" on leaving, so that the driver can count the holders
# inside at once; in between, the same two external commands as critical.sh
# (mkdir, rmdir), on a directory of its own: no shared counter, which holders
# that may overlap would corrupt.
dir=$1
printf 'S %s %s\n' "$EPOCHREALTIME" "$$" >>"$dir/events"
mkdir "$dir/inside.$$"
rmdir "$dir/inside.$$"
printf 'E %s %s\n' "$EPOCHREALTIME" "$$" >>"$dir/events"
exit 0
