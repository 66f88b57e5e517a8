#!/usr/bin/env bash
# child.sh LOG ID HOLD [GATE]: the command a lock tool runs in the handoff
# benchmarks. Appends "S <epoch> ID" when it starts and "E <epoch> ID" just
# before it exits; in between it sleeps HOLD seconds, or, with GATE, waits
# (at most 120 s) until the file GATE exists.
log=$1 id=$2 hold=$3 gate=${4-}
printf 'S %s %s\n' "$EPOCHREALTIME" "$id" >>"$log"
if [[ -n $gate ]]; then
  for ((i = 0; i < 12000; i++)); do
    [[ -e $gate ]] && break
    sleep 0.01
  done
else
  sleep "$hold"
fi
printf 'E %s %s\n' "$EPOCHREALTIME" "$id" >>"$log"
