#!/usr/bin/env bash
# critical.sh DIR: one pass through the contended critical section. mkdir is
# atomic, so a second holder inside at the same time fails it and is counted
# in DIR/overlaps; DIR/counter is bumped by read-modify-write, which loses
# updates when two holders overlap.
dir=$1
if ! mkdir "$dir/inside" 2>/dev/null; then
  echo overlap >>"$dir/overlaps"
fi
read -r n <"$dir/counter"
echo $((n + 1)) >"$dir/counter"
rmdir "$dir/inside" 2>/dev/null
exit 0
