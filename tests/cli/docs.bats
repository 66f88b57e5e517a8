#!/usr/bin/env bats
#
# One source of truth: the options `rlock --help` and `rlock SUBCOMMAND
# --help` list are exactly the options of the man page (man/rlock.1.scd) and
# of the bash, zsh and fish completions, per subcommand. Then the completions
# themselves, run the way each shell runs them: bash through _rlock with
# COMP_WORDS, zsh at a prompt in a pseudo-terminal (zsh/zpty), fish with
# `complete -C`; and lock NAMEs completed from a live server. README.md and
# the pages of docs/ it links to name every synopsis, option, exit status,
# environment variable and event that --help and the man page do, and their
# links resolve.
#
# zsh and fish come from Debian (packaging/install-deps zsh fish); without
# them their tests are skipped, except under CI=true or RLOCK_REQUIRE_REDIS=1.

# `run` sets output and status (SC2154), also when the helpers below the
# tests that shellcheck takes for subshells call it (SC2030, SC2031).
# shellcheck disable=SC2154,SC2030,SC2031

bats_require_minimum_version 1.5.0

load helpers

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
# The subcommands, as `rlock --help` lists them (from the command table).
mapfile -t COMMANDS < <("$RLOCK" --help 2>/dev/null |
  sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
MODES=(run "${COMMANDS[@]}")
# The option names in a line of --help: "  -w,--wait,--timeout D   text".
HELP_OPTION='s/^  \(-[^ ]*\).*/\1/p'
# The same, for options that take a value (a placeholder such as D follows;
# after a long option name it ends the line).
HELP_VALUE_OPTION='s/^  \(-[^ ]*\) [A-Z][A-Z]*\( .*\)\{0,1\}$/\1/p'

setup_file() {
  if [[ ! -x $RLOCK ]]; then
    echo "rlock binary not found or not executable: '$RLOCK' (set RLOCK=/abs/path)" >&2
    return 1
  fi
  local dir=$BATS_FILE_TMPDIR mode
  mkdir -p "$dir/help" "$dir/bin" "$dir/zsh-functions" "$dir/fish-completions"
  # The completions run `rlock status`: it must be this binary.
  ln -s "$RLOCK" "$dir/bin/rlock"
  cp "$ROOT/completions/rlock.zsh" "$dir/zsh-functions/_rlock"
  cp "$ROOT/completions/rlock.fish" "$dir/fish-completions/rlock.fish"
  for mode in "${MODES[@]}"; do
    help_of "$mode" | sed -n "$HELP_OPTION" | tr ',' '\n' | sort -u \
      >"$dir/help/$mode"
    help_of "$mode" | sed -n "$HELP_VALUE_OPTION" | tr ',' '\n' | sort -u \
      >"$dir/help/$mode.values"
  done
  sort -u "${MODES[@]/#/$dir/help/}" >"$dir/help/all"
  write_zsh_capture "$dir/capture.zsh"
  # A server for the NAMEs; the tests that need it skip without one.
  common_setup_file
}

teardown_file() {
  common_teardown_file
}

setup() {
  export PATH=$BATS_FILE_TMPDIR/bin:$PATH
  unset REDIS_URL RLOCK_PREFIX
  # By default the completions find no server, and never a real one on 6379.
  RLOCK_URL=redis://127.0.0.1:$(closed_port)/0
  export RLOCK_URL
  cd "$BATS_TEST_TMPDIR" || return 1
}

# help_of MODE: the --help of run mode or of a subcommand.
help_of() {
  if [[ $1 == run ]]; then
    "$RLOCK" --help
  else
    "$RLOCK" "$1" --help
  fi
}

# same_options WHAT EXPECTED ACTUAL: succeeds when the two sorted files list
# the same options; otherwise prints the differences and fails.
same_options() {
  local missing extra
  missing=$(comm -23 "$2" "$3" | tr '\n' ' ')
  extra=$(comm -13 "$2" "$3" | tr '\n' ' ')
  [[ -z $missing && -z $extra ]] && return 0
  [[ -n $missing ]] && echo "$1 lacks: $missing"
  [[ -n $extra ]] && echo "$1 has, but --help does not list: $extra"
  return 1
}

# need_shell NAME: skip the test when shell NAME is not installed (fail in CI).
need_shell() {
  command -v "$1" >/dev/null && return 0
  if redis_skip_allowed; then
    skip "$1 not installed (packaging/install-deps $1)"
  fi
  echo "$1 not installed, and CI requires it (packaging/install-deps $1)" >&2
  return 1
}

# need_redis: skip the test without redis-server (common_setup_file decided).
need_redis() {
  if [[ -n ${RLOCK_TEST_SKIP_REDIS:-} ]]; then
    skip "redis-server not found (set CI=true or RLOCK_REQUIRE_REDIS=1 to fail instead)"
  fi
  export RLOCK_URL=redis://127.0.0.1:$REDIS_PORT/0
  [[ $(redis_cli flushall) == OK ]]
}

# The line that lists the options of MODE, in every shell.
options_line() {
  if [[ $1 == run ]]; then
    echo 'rlock -'
  else
    echo "rlock $1 -"
  fi
}

# only_options: the lines of stdin that are options, sorted.
only_options() {
  grep -- '^-' | sed 's/=$//' | sort -u
}

# ---------------------------------------------------------------------------
# Completing a command line in each shell. Each prints the candidates for
# LINE, with the cursor at its end, one per line.

# bash_complete [--bash-completion] LINE: runs _rlock as bash does on TAB:
# COMP_WORDS split as readline splits it (blanks, and =/: words of their own).
# --bash-completion loads the bash-completion package first, as a login shell
# with it installed does.
bash_complete() {
  local init=
  if [[ $1 == --bash-completion ]]; then
    init=/usr/share/bash-completion/bash_completion
    shift
  fi
  # shellcheck disable=SC2016 # for the inner bash to expand
  timeout 20 bash --norc --noprofile -c '
    init=$1 file=$2
    COMP_LINE=$3
    COMP_POINT=${#COMP_LINE}
    [[ -n $init ]] && source "$init"
    source "$file"
    COMP_WORDS=()
    word=
    for ((i = 0; i < ${#COMP_LINE}; i++)); do
      c=${COMP_LINE:i:1}
      if [[ $c == "\\" ]]; then
        word+=${COMP_LINE:i:2}
        ((i++))
      elif [[ $c == [[:blank:]] ]]; then
        [[ -n $word ]] && COMP_WORDS+=("$word")
        word=
      elif [[ $c == [=:] ]]; then
        [[ -n $word && $word != *[=:] ]] && COMP_WORDS+=("$word") && word=
        word+=$c
      else
        [[ $word == *[=:] ]] && COMP_WORDS+=("$word") && word=
        word+=$c
      fi
    done
    COMP_WORDS+=("$word")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_TYPE=9
    _rlock rlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"
  ' bash "$init" "$ROOT/completions/rlock.bash" "$1" 2>/dev/null
}

# zsh_complete LINE: types LINE and TAB at an interactive zsh with compinit
# and the completion under test first in $fpath; prints what it offers.
zsh_complete() {
  local work
  work=$(mktemp -d "$BATS_TEST_TMPDIR/zsh.XXXXXX")
  timeout 30 zsh -f "$BATS_FILE_TMPDIR/capture.zsh" "$BATS_FILE_TMPDIR/zsh-functions" \
    "$BATS_FILE_TMPDIR/zcompdump" "$work" "$1"
}

# fish_complete LINE: `complete -C LINE` with the completion under test
# found the way fish finds an installed one.
fish_complete() {
  # shellcheck disable=SC2016 # for fish to expand
  timeout 20 fish -N -c '
    set fish_complete_path $argv[1] $__fish_data_dir/completions
    complete -C $argv[2]' "$BATS_FILE_TMPDIR/fish-completions" "$1" | cut -f1
}

# write_zsh_capture FILE: the zsh side of zsh_complete. Usage:
#   zsh -f FILE FPATH_DIR DUMP WORKDIR LINE
# A zsh in a pseudo-terminal runs compinit; compadd is wrapped to write the
# matches it is given to a file, and completion ends by exiting the shell.
write_zsh_capture() {
  cat >"$1" <<'EOF'
zmodload zsh/zpty || { print -u2 'zsh/zpty is not available'; exit 3 }
local dir=$1 dump=$2 work=$3 line=$4
local init=$work/init.zsh out=$work/out done=$work/done ready=$work/ready
integer n
: >$out
cat >$init <<INIT
PROMPT=
fpath=(${(q)dir} \$fpath)
autoload -Uz compinit && compinit -u -d ${(q)dump}
bindkey '^I' complete-word
bindkey '^M' undefined
bindkey '^J' undefined
zstyle ':completion:*' insert-tab false
compadd() {
  # zsh's own helpers collect matches with -O/-A/-D: leave those alone.
  if [[ \${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "\$@"
    return
  fi
  local -a __hits
  builtin compadd -O __hits "\$@"
  (( \$#__hits )) && print -rl -- \$__hits >>${(q)out}
  builtin compadd "\$@"
}
_capture_done() { : >${(q)done}; exit }
comppostfuncs=(_capture_done)
: >${(q)ready}
INIT
zpty capture zsh -f -i
zpty -w capture "source ${(q)init}"
for (( n = 0; n < 400; n++ )); do [[ -e $ready ]] && break; sleep 0.05; done
if [[ ! -e $ready ]]; then
  print -u2 "zsh did not start"; zpty -d capture; exit 2
fi
zpty -w -n capture "$line"$'\t'
for (( n = 0; n < 400; n++ )); do [[ -e $done ]] && break; sleep 0.05; done
zpty -d capture
if [[ ! -e $done ]]; then
  print -u2 "zsh did not finish completing '$line'"; exit 2
fi
sort -u $out
EOF
}

# ---------------------------------------------------------------------------
# The options, everywhere.

@test "--help lists the options of run mode and of every subcommand" {
  local mode
  for mode in "${MODES[@]}"; do
    echo "$mode: $(tr '\n' ' ' <"$BATS_FILE_TMPDIR/help/$mode")"
    # An empty list would make every comparison below pass.
    [ "$(wc -l <"$BATS_FILE_TMPDIR/help/$mode")" -ge 8 ]
    [ "$(wc -l <"$BATS_FILE_TMPDIR/help/$mode.values")" -ge 4 ]
  done
  [ "$(wc -l <"$BATS_FILE_TMPDIR/help/run")" -ge 25 ]
  grep -qx -- --kill-signal "$BATS_FILE_TMPDIR/help/run"
  grep -qx -- --interval "$BATS_FILE_TMPDIR/help/status"
}

# synopsis_options TEXT: the options of a synopsis, in order, one per line
# ("[-n|-w D] [--fair]" and "[*-n*|*-w* _duration_] [*--fair*]" alike).
synopsis_options() {
  tr -d '*' <<<"$1" | grep -oE -- '(^|[[ |])-[-a-z]+' | tr -d '[ |'
}

@test "every command's synopsis: the same in rlock --help, rlock CMD --help and the man page" {
  local command top sub man
  top=$("$RLOCK" --help)
  [ "${#COMMANDS[@]}" -ge 7 ]
  for command in "${COMMANDS[@]}"; do
    sub=$("$RLOCK" "$command" --help | sed -n 's/^Usage: //p')
    echo "$command: $sub"
    [[ $sub == "rlock $command "* ]]
    # rlock --help lists it as is.
    grep -qxF -- "       $sub" <<<"$top"
    # The man page's SYNOPSIS has the same options in the same order.
    man=$(grep -m1 "^\*rlock $command\*" "$ROOT/man/rlock.1.scd")
    [ -n "$man" ]
    [ "$(synopsis_options "$man")" = "$(synopsis_options "$sub")" ]
  done
}

# man_run_synopses: the man page's run-mode synopses, written as help writes
# them ("*rlock* [_options_] _name_ *-c* _shell-command_" becomes
# "rlock [OPTIONS] NAME -c 'SHELL COMMAND'").
man_run_synopses() {
  grep '^\*rlock\* \[_options_\]' "$ROOT/man/rlock.1.scd" |
    sed -e 's/_shell-command_/'"'"'SHELL COMMAND'"'"'/g' \
      -e 's/_options_/OPTIONS/g; s/_name_/NAME/g; s/_command_/COMMAND/g' \
      -e 's/_argument_/ARG/g; s/\*//g'
}

@test "run mode's synopses: the same in rlock --help and the man page" {
  local help
  help=$("$RLOCK" --help | sed -n 's/^\(Usage:\|      \) \(rlock \[OPTIONS\] .*\)$/\2/p')
  echo "$help"
  [ "$(wc -l <<<"$help")" -ge 4 ]
  [ "$help" = "$(man_run_synopses)" ]
}

@test "every command --help lists is in the man page and in each completion" {
  local command file
  for command in "${COMMANDS[@]}"; do
    grep -q "^\*rlock $command\*" "$ROOT/man/rlock.1.scd"
    for file in rlock.bash rlock.zsh rlock.fish; do
      grep -qw -- "$command" "$ROOT/completions/$file" ||
        { echo "$command missing from completions/$file"; return 1; }
    done
  done
}

@test "the man page documents exactly the options --help lists" {
  # Every *-x* or *--long* that starts a bold span: "*-w* _duration_",
  # "*-w 0*", "*--json*|*--env*"; never a bare "*--*".
  grep -oE '(^|[^[:alnum:]_*])\*--?[[:alpha:]][[:alnum:]-]*' "$ROOT/man/rlock.1.scd" |
    sed 's/.*\*//' | sort -u >man-options
  same_options "man/rlock.1.scd" "$BATS_FILE_TMPDIR/help/all" man-options
}

# ---------------------------------------------------------------------------
# README.md and docs/: the front page and the pages it links to. A fact that
# moved from the README to a page of docs/ is looked for in all of them.

# doc_files: README.md and every page of docs/, one path per line.
doc_files() {
  printf '%s\n' "$ROOT/README.md" "$ROOT"/docs/*.md
}

# doc_text: their text, one after the other.
doc_text() {
  local file
  while read -r file; do
    cat "$file"
  done < <(doc_files)
}

# man_section TITLE: the lines of the man page's section TITLE.
man_section() {
  sed -n "/^# $1\$/,/^# /p" "$ROOT/man/rlock.1.scd" | sed '1d;$d'
}

# table_codes FILE...: the first cell of every table row in FILE...,
# split at " / " and ", " ("| 126 / 127 | ..." gives 126 and 127).
table_codes() {
  sed -n 's/^| *\([^|]*[^| ]\) *|.*/\1/p' "$@" | sed 's| / |\n|g; s|, |\n|g'
}

@test "README opens with the two set-up commands: make demo and make test" {
  # The first code block of README.md, within its first 15 lines.
  local first
  first=$(head -15 "$ROOT/README.md" | awk '/^```/ { n++; next } n == 1')
  echo "first code block: $first"
  [ "$(wc -l <<<"$first")" -eq 2 ]
  [[ $(sed -n 1p <<<"$first") == 'make demo '* ]]
  [[ $(sed -n 2p <<<"$first") == 'make test '* ]]
  grep -q '^demo:' "$ROOT/Makefile"
  grep -q '^test:' "$ROOT/Makefile"
}

@test "README and docs/: every command's synopsis as --help gives it" {
  local command sub line text
  text=$(doc_text)
  for command in "${COMMANDS[@]}"; do
    sub=$("$RLOCK" "$command" --help | sed -n 's/^Usage: //p')
    [ -n "$sub" ]
    grep -qxF -- "$sub" <<<"$text" || {
      echo "no line of README.md or docs/*.md is this synopsis: $sub"
      return 1
    }
  done
  while read -r line; do
    grep -qxF -- "$line" <<<"$text" || {
      echo "no line of README.md or docs/*.md is this synopsis: $line"
      return 1
    }
  done < <("$RLOCK" --help | sed -n 's/^\(Usage:\|      \) \(rlock \[OPTIONS\] .*\)$/\2/p')
}

@test "README and docs/: every option --help lists, and no rlock option it does not" {
  local option failed=0 text
  text=$(doc_text)
  [ "$(wc -l <"$BATS_FILE_TMPDIR/help/all")" -ge 40 ]
  while read -r option; do
    grep -qE -- "(^|[^[:alnum:]-])$option([^[:alnum:]-]|\$)" <<<"$text" || {
      echo "README.md and docs/*.md never mention $option"
      failed=1
    }
  done <"$BATS_FILE_TMPDIR/help/all"
  # The options in `code spans`; those --help does not list must be another
  # program's: flock's refused -u/--unlock and -F/--no-fork and its -en, an
  # abbreviation rlock refuses (--time), redis-cli --cluster, redis-server
  # --tls-port, consul's -child-exit-code and -timeout, ctest -L, ls -l, and
  # the --tls-* family.
  # shellcheck disable=SC2016 # backquotes, not an expansion
  grep -oE '`[^`]*`' <<<"$text" |
    grep -oE -- '(^|[ `[|(])--?[[:alpha:]][[:alnum:]-]*' | sed 's/^[ `[|(]//' |
    sort -u >mentioned
  printf '%s\n' --unlock -u --no-fork -F -en --time --cluster --tls-port \
    -child-exit-code -timeout -L -l --tls- | sort >others
  comm -23 mentioned "$BATS_FILE_TMPDIR/help/all" | comm -23 - others >unknown
  if [[ -s unknown ]]; then
    echo "README.md or docs/*.md mention options --help does not list: $(tr '\n' ' ' <unknown)"
    failed=1
  fi
  [ "$failed" -eq 0 ]
}

@test "README and docs/: every exit status of the man page, in the README's table and in docs/" {
  local code failed=0
  man_section 'EXIT STATUS' | sed -n 's/^\*\([0-9][^ ]*\)\*\(, \*\([0-9]*\)\*\)\{0,1\}$/\1\n\3/p' |
    tr -d '*' | grep . >codes
  echo "the man page's codes: $(tr '\n' ' ' <codes)"
  [ "$(wc -l <codes)" -ge 10 ]
  grep -qx '0..125' codes
  grep -qx '128+N' codes
  table_codes "$ROOT/README.md" >readme-codes
  table_codes "$ROOT"/docs/*.md >docs-codes
  while read -r code; do
    grep -qxF -- "$code" readme-codes || {
      echo "README.md's exit status table lacks $code"
      failed=1
    }
    grep -qxF -- "$code" docs-codes || {
      echo "no exit status table in docs/*.md lists $code"
      failed=1
    }
  done <codes
  [ "$failed" -eq 0 ]
}

@test "README and docs/: every variable of the man page's ENVIRONMENT" {
  local name failed=0 text
  text=$(doc_text)
  man_section ENVIRONMENT | sed -n 's/^\*\([A-Z][A-Z_]*\)\*.*/\1/p' >names
  echo "the man page's variables: $(tr '\n' ' ' <names)"
  [ "$(wc -l <names)" -ge 14 ]
  grep -qx RLOCK_RUN_ names
  while read -r name; do
    grep -qw -- "$name" <<<"$text" || grep -qF -- "${name}<token>" <<<"$text" || {
      echo "README.md and docs/*.md never mention $name"
      failed=1
    }
  done <names
  [ "$failed" -eq 0 ]
}

@test "README and docs/: every --events event of the man page" {
  local event failed=0 text
  text=$(doc_text)
  # "...lifecycle event: waiting, busy, ... and release-failed, each".
  man_section OPTIONS | sed -n '/^\*--events\*/,/^; -/p' | tr '\n\t' '  ' | tr -s ' ' |
    sed -n 's/.*lifecycle event: \(.*\), each .*/\1/p' | sed 's/ and /, /' |
    tr -d ' ' | tr ',' '\n' | grep . >events
  echo "the man page's events: $(tr '\n' ' ' <events)"
  [ "$(wc -l <events)" -ge 9 ]
  while read -r event; do
    grep -qF -- "\`$event\`" <<<"$text" || {
      echo "README.md and docs/*.md never name the event \`$event\`"
      failed=1
    }
  done <events
  [ "$failed" -eq 0 ]
}

# slugs FILE: the anchors of FILE's headings, as GitHub makes them
# ("## Shared locks: `--shared`" is #shared-locks---shared), outside code.
slugs() {
  awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ /, ""); print }' "$1" |
    tr '[:upper:]' '[:lower:]' | sed 's/[^[:alnum:] _-]//g; s/ /-/g'
}

@test "README links every page of docs/, and every relative link in README and docs/ resolves" {
  local page file link target anchor failed=0
  for page in "$ROOT"/docs/*.md; do
    grep -qF "](docs/${page##*/}" "$ROOT/README.md" || {
      echo "README.md does not link docs/${page##*/}"
      failed=1
    }
  done
  [ "$(doc_files | wc -l)" -ge 8 ]
  while read -r file; do
    while read -r link; do
      case $link in http://* | https://* | mailto:*) continue ;; esac
      target=${link%%#*}
      anchor=
      [[ $link == *#* ]] && anchor=${link#*#}
      if [[ -z $target ]]; then
        target=$file
      else
        target=$(dirname "$file")/$target
      fi
      if [[ ! -e $target ]]; then
        echo "${file#"$ROOT"/}: the link ($link) goes nowhere"
        failed=1
      elif [[ -n $anchor ]] && ! slugs "$target" | grep -qxF -- "$anchor"; then
        echo "${file#"$ROOT"/}: the link ($link): no such heading in ${target#"$ROOT"/}"
        failed=1
      fi
    done < <(grep -oE '\]\([^)]+\)' "$file" | sed 's/^](//; s/)$//')
  done < <(doc_files)
  [ "$failed" -eq 0 ]
}

# completes_options SHELL-FUNCTION [ARG...]: for run mode and each subcommand,
# the options the completion offers are those --help lists.
completes_options() {
  local mode status=0
  for mode in "${MODES[@]}"; do
    "$@" "$(options_line "$mode")" | only_options >"options.$mode"
    same_options "$* '$(options_line "$mode")'" "$BATS_FILE_TMPDIR/help/$mode" \
      "options.$mode" || status=1
  done
  return "$status"
}

# skips_values SHELL-FUNCTION [ARG...]: the completion knows which options
# of run mode take a value: after "OPTION VALUE NAME" (or "FLAG NAME") comes
# COMMAND. (-c is another case: nothing may follow its NAME; see below.)
skips_values() {
  local option line status=0 values=$BATS_FILE_TMPDIR/help/run.values
  while read -r option; do
    case $option in -h | --help | -V | --version | -c | --command) continue ;; esac
    if grep -qx -- "$option" "$values"; then
      line="rlock $option x nightly mkd"
    else
      line="rlock $option nightly mkd"
    fi
    "$@" "$line" | grep -qx mkdir || {
      echo "$* '$line' does not offer mkdir: does it know whether $option takes a value?"
      status=1
    }
  done <"$BATS_FILE_TMPDIR/help/run"
  return "$status"
}

@test "bash completion: exactly the options --help lists, per subcommand" {
  completes_options bash_complete
  skips_values bash_complete
}

@test "bash completion with bash-completion loaded: the same options" {
  need_file /usr/share/bash-completion/bash_completion bash-completion
  completes_options bash_complete --bash-completion
  skips_values bash_complete --bash-completion
}

@test "zsh completion: exactly the options --help lists, per subcommand" {
  need_shell zsh
  completes_options zsh_complete
  skips_values zsh_complete
}

@test "fish completion: exactly the options --help lists, per subcommand" {
  need_shell fish
  completes_options fish_complete
  skips_values fish_complete
}

# ---------------------------------------------------------------------------
# Syntax.

@test "bash completion: bash -n, and it registers _rlock for rlock" {
  bash -n "$ROOT/completions/rlock.bash"
  run bash --norc --noprofile -c 'source "$1"; complete -p rlock' bash "$ROOT/completions/rlock.bash"
  [ "$status" -eq 0 ]
  [[ $output == *"-F _rlock rlock" ]]
}

@test "zsh completion: zsh -n, and a #compdef rlock header" {
  need_shell zsh
  zsh -n "$ROOT/completions/rlock.zsh"
  [ "$(head -1 "$ROOT/completions/rlock.zsh")" = "#compdef rlock" ]
}

@test "fish completion: fish -n" {
  need_shell fish
  fish -n "$ROOT/completions/rlock.fish"
}

# ---------------------------------------------------------------------------
# A few command lines in each shell.

# offers SHELL-FUNCTION [ARG...] LINE -- WORD...: the candidates for LINE are
# exactly WORD... (in any order).
offers() {
  local -a cmd=() want=()
  while [[ $1 != -- ]]; do
    cmd+=("$1")
    shift
  done
  shift
  want=("$@")
  run "${cmd[@]}"
  echo "offered: $(sort <<<"$output" | tr '\n' ' ')"
  echo "wanted:  $(printf '%s\n' "${want[@]}" | sort | tr '\n' ' ')"
  [ "$status" -eq 0 ]
  [ "$(sort <<<"$output" | grep -v '^$')" = "$(printf '%s\n' "${want[@]}" | sort)" ]
}

# offers_some SHELL-FUNCTION [ARG...] LINE -- WORD...: WORD... are among the
# candidates for LINE.
offers_some() {
  local -a cmd=()
  local word
  while [[ $1 != -- ]]; do
    cmd+=("$1")
    shift
  done
  shift
  run "${cmd[@]}"
  [ "$status" -eq 0 ]
  for word; do
    grep -qxF -- "$word" <<<"$output" || {
      echo "'$word' not offered; offered: $(tr '\n' ' ' <<<"$output")"
      return 1
    }
  done
}

# offers_none SHELL-FUNCTION [ARG...] LINE -- WORD...: none of WORD... is
# among the candidates for LINE.
offers_none() {
  local -a cmd=()
  local word
  while [[ $1 != -- ]]; do
    cmd+=("$1")
    shift
  done
  shift
  run "${cmd[@]}"
  [ "$status" -eq 0 ]
  for word; do
    if grep -qxF -- "$word" <<<"$output"; then
      echo "'$word' offered; offered: $(tr '\n' ' ' <<<"$output")"
      return 1
    fi
  done
}

# common_cases SHELL-FUNCTION [ARG...]: what every shell must complete alike.
common_cases() {
  offers "$@" 'rlock ' -- "${COMMANDS[@]}"
  offers "$@" 'rlock doctor --j' -- --json
  offers "$@" 'rlock doctor -t ' -- 500ms 5s 30s 5m 1h
  offers "$@" 'rlock -v st' -- status
  offers "$@" 'rlock --kill-signal ' -- TERM INT HUP QUIT KILL USR1 USR2
  offers "$@" 'rlock --kill-signal SIGU' -- SIGUSR1 SIGUSR2
  offers "$@" 'rlock -w ' -- 500ms 5s 30s 5m 1h
  offers "$@" 'rlock --ttl ' -- 500ms 5s 30s 5m 1h
  offers "$@" 'rlock --url ' -- redis+cluster:// redis+sentinel:// redis:// rediss+cluster:// rediss+sentinel:// rediss:// unix://
  offers "$@" 'rlock check --min-validity ' -- 500ms 5s 30s 5m 1h
  offers "$@" 'rlock status -i ' -- 500ms 5s 30s 5m 1h
  offers "$@" 'rlock release --f' -- --force
  offers "$@" 'rlock acquire --e' -- --env
  offers "$@" 'rlock -n nightly -' -- -c --command
  offers_some "$@" 'rlock -n nightly mkd' -- mkdir
  offers_some "$@" 'rlock nightly -c mkd' -- mkdir
  touch events.jsonl
  offers "$@" 'rlock -c true nightly ' --
  offers "$@" 'rlock --command true nightly ' --
  offers "$@" 'rlock -- stat' --
  # After NAME, everything is COMMAND's: rlock's options are not offered.
  run "$@" 'rlock nightly ls --w'
  if grep -qx -- --wait <<<"$output"; then
    echo "'rlock nightly ls --w' offers rlock's --wait"
    return 1
  fi
  # --events takes a file.
  touch events.jsonl
  offers_some "$@" 'rlock --events ev' -- events.jsonl
}

@test "bash completion: subcommands, option values, COMMAND" {
  common_cases bash_complete
  # --opt=value, as readline splits it.
  offers bash_complete 'rlock --kill-signal=SIGT' -- SIGTERM
}

@test "bash completion with bash-completion loaded: the same" {
  need_file /usr/share/bash-completion/bash_completion bash-completion
  common_cases bash_complete --bash-completion
  offers bash_complete --bash-completion 'rlock --kill-signal=SIGT' -- SIGTERM
  offers bash_complete --bash-completion 'rlock --url=re' -- redis+cluster:// redis+sentinel:// redis:// rediss+cluster:// rediss+sentinel:// rediss://
}

@test "zsh completion: subcommands, option values, COMMAND" {
  need_shell zsh
  common_cases zsh_complete
  offers zsh_complete 'rlock --kill-signal=SIGT' -- SIGTERM
  # Signal names in any case.
  offers zsh_complete 'rlock --kill-signal sigk' -- SIGKILL
  # Options that exclude each other.
  run zsh_complete 'rlock release --force --'
  if grep -qx -- --token <<<"$output"; then
    echo "'rlock release --force --' offers --token"
    return 1
  fi
}

@test "fish completion: subcommands, option values, COMMAND" {
  need_shell fish
  common_cases fish_complete
  offers fish_complete 'rlock --kill-signal sigk' -- SIGKILL
  # COMMAND's own completion takes over after NAME.
  offers_some fish_complete 'rlock nightly timeout --pre' -- --preserve-status
}

# ---------------------------------------------------------------------------
# Lock NAMEs, from the server.

# hold NAME [ARG...]: take NAME for five minutes.
hold() {
  "$RLOCK" acquire -t 5m "$@" >/dev/null
}

# names_cases SHELL-FUNCTION [ARG...]: NAMEs where each shell offers them.
# $SPACED is how the shell offers the NAME 'deploy staging'.
names_cases() {
  local port=$REDIS_PORT all=(backup deploy-prod "$SPACED")
  offers "$@" 'rlock dep' -- deploy-prod "$SPACED"
  offers "$@" 'rlock ' -- status acquire extend release check wait doctor "${all[@]}"
  offers "$@" 'rlock --fair -w 5s b' -- backup
  offers "$@" 'rlock -- ' -- "${all[@]}"
  offers "$@" 'rlock -- stat' --
  offers "$@" 'rlock status ' -- "${all[@]}"
  offers "$@" 'rlock status backup ' -- "${all[@]}"
  offers "$@" 'rlock release b' -- backup
  offers "$@" 'rlock --verbose release --force b' -- backup
  offers "$@" 'rlock check --min-validity 5s b' -- backup
  offers "$@" 'rlock extend --token abc b' -- backup
  offers "$@" 'rlock status --match x -i 5s b' -- backup
  # A step takes one NAME; after it, at most options.
  offers_none "$@" 'rlock release backup ' -- "${all[@]}"
  # doctor takes one NAME, like a step.
  offers "$@" 'rlock doctor ' -- "${all[@]}"
  offers "$@" 'rlock doctor --json b' -- backup
  offers_none "$@" 'rlock doctor backup ' -- "${all[@]}"
  offers "$@" 'rlock backup ls nope' --
  # --prefix and --url as typed.
  offers "$@" 'rlock --prefix other: status ' -- elsewhere
  offers "$@" 'rlock status --prefix=other: ' -- elsewhere
  offers "$@" 'rlock --prefix other: e' -- elsewhere extend
  RLOCK_URL=redis://127.0.0.1:$(closed_port)/0
  offers "$@" 'rlock wait b' --
  offers "$@" "rlock --url redis://127.0.0.1:$port/0 wait b" -- backup
  offers "$@" "rlock wait --url=redis://127.0.0.1:$port/0 b" -- backup
  offers "$@" "rlock --url=redis://127.0.0.1:$port/0 b" -- backup
}

# names_setup: the locks names_cases expects.
names_setup() {
  need_redis
  hold backup
  hold deploy-prod
  hold 'deploy staging'
  hold --prefix other: elsewhere
}

@test "bash completion: lock NAMEs from the server" {
  grep -q '^_rlock_names()' "$ROOT/completions/rlock.bash" || {
    echo "completions/rlock.bash does not complete NAMEs from the server (no _rlock_names)"
    return 1
  }
  names_setup
  SPACED='deploy\ staging' names_cases bash_complete --bash-completion
}

@test "zsh completion: lock NAMEs from the server" {
  need_shell zsh
  names_setup
  SPACED='deploy staging' names_cases zsh_complete
}

@test "fish completion: lock NAMEs from the server" {
  need_shell fish
  names_setup
  SPACED='deploy staging' names_cases fish_complete
}

# quiet_when_stuck SHELL-FUNCTION [ARG...]: with a server that accepts
# connections but does not answer (stopped with SIGSTOP), NAMEs complete to
# nothing, within a second or two.
quiet_when_stuck() {
  local start
  STOPPED_PID=$(<"$REDIS_PIDFILE")
  kill -STOP "$STOPPED_PID"
  start=$(now_ms)
  run "$@" 'rlock status b'
  kill -CONT "$STOPPED_PID"
  STOPPED_PID=
  echo "$* took $(($(now_ms) - start)) ms: '$output'"
  [ -z "$output" ]
  (($(now_ms) - start < 3000))
}

teardown() {
  if [[ -n ${STOPPED_PID:-} ]]; then
    kill -CONT "$STOPPED_PID"
  fi
}

@test "NAMEs: nothing, and quickly, when the server does not answer" {
  names_setup
  local shells=(bash_complete)
  command -v zsh >/dev/null && shells+=(zsh_complete)
  command -v fish >/dev/null && shells+=(fish_complete)
  local shell
  for shell in "${shells[@]}"; do
    if [[ $shell == bash_complete ]] && ! grep -q '^_rlock_names()' "$ROOT/completions/rlock.bash"; then
      continue
    fi
    quiet_when_stuck "$shell"
  done
}

@test "the least-privilege ACL rule in README, docs/servers.md and the man page is the tested one" {
  # shellcheck source=tests/cli/acl.bash disable=SC1091
  source "$BATS_TEST_DIRNAME/acl.bash"
  local root=$BATS_TEST_DIRNAME/../.. file
  for file in README.md docs/servers.md man/rlock.1.scd; do
    grep -qF "ACL SETUSER rlock on >PASSWORD $RLOCK_ACL_RULE" "$root/$file" || {
      echo "$file does not give the rule of tests/cli/acl.bash"
      false
    }
  done
}
