#compdef rlock
# zsh completion for rlock(1)
#
# Installed as _rlock in a directory of $fpath (share/zsh/vendor-completions),
# where compinit finds it. Sourced by hand after compinit, it registers itself
# with compdef.
#
# Lock NAMEs are completed from `rlock status --json` when the Redis server
# (--url or --prefix as typed, else $RLOCK_URL and the rest of the defaults)
# answers within 0.3s; otherwise NAMEs complete to nothing.

# The options every command shares.
_rlock_connection_options=(
  '*--url=[Redis server (3 or more: a quorum)]:url:_rlock_urls'
  '--prefix=[key prefix ($RLOCK_PREFIX, rlock:)]:prefix: '
  '--connect-timeout=[limit per connection attempt (2s)]:duration:_rlock_durations'
  '--io-timeout=[limit per reply (5s)]:duration:_rlock_durations'
  '--password-file=[password: the first line of FILE]:file:_files'
  '--password-command=[password: the first line a shell command prints]:command:_cmdstring'
  '--password-refresh=[run the password command this often (5m)]:duration:_rlock_durations'
  '--sentinel-password-file=[the sentinels'\''s password: the first line of FILE]:file:_files'
  '--replicas=[replicas that must confirm each acquire and renewal]:replicas:(auto all 0 1 2)'
  '--replicas-timeout=[wait at most D for them (1s)]:duration:_rlock_durations'
  '--quorum=[with several --url\: how many must agree (a majority)]:servers: '
  '--tls-ca=[rediss\://: CA certificates (PEM) to verify the server with]:file:_files'
  '--tls-cert=[rediss\://: client certificate (PEM)]:file:_files'
  '--tls-key=[rediss\://: the client certificate'\''s private key]:file:_files'
  '--tls-server-name=[rediss\://: name to verify (the URL'\''s host)]:name:_hosts'
  '--tls-insecure[rediss\://: do not verify the server (unsafe)]'
  '--compat=[keep the lock as an application'\''s library does]:style:(string shedlock shedlock\: redisson)'
)
_rlock_output_options=(
  '(-v --verbose -q --quiet)'{-v,--verbose}'[lifecycle lines on stderr]'
  '(-v --verbose -q --quiet)'{-q,--quiet}'[nothing but errors on stderr]'
)
_rlock_help_option=(
  '(- *)'{-h,--help}'[print the help and exit]'
)
_rlock_wait_options=(
  '(-n --nonblock -w --wait --timeout)'{-n,--nonblock}'[fail at once if the lock is held]'
  '--fair[wait in line: first come, first served]'
  '--restart-grace=[take no lock from a server up less than D (30s)]:duration:_rlock_durations'
  '(-n --nonblock -w --wait --timeout)'{-w+,--wait=,--timeout=}'[give up after D; -w 0 is -n]:duration:_rlock_durations'
  '(-E --conflict-exit-code)'{-E+,--conflict-exit-code=}'[exit code when not acquired, 0..255 (75)]:exit code:(75 0 1)'
)

_rlock_subcommands=(
  'status:show who holds which lock'
  'acquire:take the lock for a script; print the token'
  'extend:extend a lock taken with acquire'
  'release:release a lock taken with acquire'
  'check:tell whether the token still holds the lock'
  'wait:wait until the lock is free, without taking it'
  'doctor:check that Redis keeps locks safe'
)

_rlock_durations() {
  local expl
  _wanted durations expl 'duration (500ms, 30s, 5m, 1h; bare number: seconds)' \
    compadd -- 500ms 5s 30s 5m 1h
}

_rlock_signals() {
  local expl
  local -a signals=(TERM INT HUP QUIT KILL USR1 USR2)
  [[ $PREFIX == [Ss][Ii][Gg]* ]] && signals=(SIG$^signals)
  # Names are case-insensitive: sigterm is SIGTERM.
  _wanted signals expl 'signal (name or number 1..64)' \
    compadd -M 'm:{a-z}={A-Z}' -- $signals
}

_rlock_urls() {
  local expl
  _wanted urls expl 'Redis URL' compadd -S '' -- redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster://
}

_rlock_subcommand_names() {
  _describe -t subcommands 'subcommand' _rlock_subcommands
}

# The held locks, from the server the command line points at. Uses
# $_rlock_cmd, $_rlock_url, $_rlock_prefix and $_rlock_login (the password
# and TLS options), set by _rlock.
_rlock_names() {
  local expl out line
  local -a names args
  setopt localoptions extendedglob
  args=(status --json --connect-timeout 0.3s --io-timeout 0.3s)
  [[ -n $_rlock_url ]] && args+=(--url=$_rlock_url)
  [[ -n $_rlock_prefix ]] && args+=(--prefix=$_rlock_prefix)
  args+=($_rlock_login)
  out=$(command $_rlock_cmd $args 2>/dev/null </dev/null) || return 1
  # One "name" per lock object, on a line of its own; the value is a JSON
  # string, which (Q) unquotes (names hold only printable characters).
  for line in ${(f)out}; do
    [[ $line == (#b)[[:space:]]#\"name\":[[:space:]]#(\"*\")(|,) ]] &&
      names+=(${(Q)match[1]})
  done
  (( $#names )) || return 1
  _wanted locks expl 'lock name' compadd -a names
}

# The word after rlock's own options: a subcommand or NAME.
_rlock_first() {
  if (( _rlock_dashdash )); then
    _rlock_names
  else
    _alternative \
      'subcommands:subcommand:_rlock_subcommand_names' \
      'locks:lock name:_rlock_names'
  fi
}

# Succeeds if option $1 takes a value (in the next word, or glued on).
_rlock_takes_value() {
  case $1 in
    (--url|--prefix|--wait|--timeout|--ttl|--conflict-exit-code|--command|\
--kill-signal|--kill-after|--connect-timeout|--io-timeout|--hold|--once-per|\
--limit|--events|--token|--min-validity|--match|--interval|--password-file|--tls-ca|\
--tls-cert|--tls-key|--tls-server-name|--restart-grace|\
--sentinel-password-file|--replicas|--replicas-timeout|--quorum|\
--password-command|--password-refresh|-[wtEci])
      return 0 ;;
    (--compat)
      return 0 ;;
  esac
  return 1
}

_rlock_subcommand() {
  local sub=$words[1]
  local -a opts
  curcontext=${curcontext%:*:*}:rlock-$sub:
  case $sub in
    (doctor)
      opts=(
        '(-t --ttl)'{-t+,--ttl=}'[judge the round trip against a D lease (30s)]:duration:_rlock_durations'
        '--restart-grace=[judge the hold-back after a restart against D (30s)]:duration:_rlock_durations'
        '--json[print a JSON object]'
        '1: :_rlock_names'
      ) ;;
    (status)
      opts=(
        '(--wide)--json[print a JSON array]'
        '(--json)--wide[never cut the COMMAND column]'
        '--match=[only NAMEs matching a glob]:glob: '
        '--watch[redraw until interrupted]'
        '(-i --interval)'{-i+,--interval=}'[redraw every D (2s)]:duration:_rlock_durations'
        '--restart-grace=[say whether a server up less than D holds locks back (30s)]:duration:_rlock_durations'
        '*: :_rlock_names'
      ) ;;
    (acquire)
      opts=(
        '(-t --ttl)'{-t+,--ttl=}'[lease length, not renewed (5m)]:duration:_rlock_durations'
        '(-s --shared)--limit=[a semaphore: at most N holders at once (slot printed)]:N:(2 3 4)'
        '(--limit -s --shared)'{-s,--shared}'[a shared (read) lock: shared holders together, a plain one alone]'
        $_rlock_wait_options
        '(--env)--json[print {name, key, token, fence, ttl_ms}]'
        '(--json)--env[print RLOCK_* assignments for eval]'
        $_rlock_output_options
        '1: :_rlock_names'
      ) ;;
    (extend)
      opts=(
        '(-t --ttl)'{-t+,--ttl=}'[new lease length (the one it was taken with)]:duration:_rlock_durations'
        '--token=[the holder'\''s token ($RLOCK_TOKEN)]:token: '
        $_rlock_output_options
        '1: :_rlock_names'
      ) ;;
    (release)
      opts=(
        '(--force)--token=[the holder'\''s token ($RLOCK_TOKEN)]:token: '
        '(--token)--force[break the lock, whoever holds it]'
        $_rlock_output_options
        '1: :_rlock_names'
      ) ;;
    (check)
      opts=(
        '--token=[the holder'\''s token ($RLOCK_TOKEN)]:token: '
        '--min-validity=[succeed only with at least D left (0)]:duration:_rlock_durations'
        $_rlock_output_options
        '1: :_rlock_names'
      ) ;;
    (wait)
      opts=(
        '(-w --wait --timeout)'{-w+,--wait=,--timeout=}'[give up after D; -w 0 is -n]:duration:_rlock_durations'
        '--restart-grace=[take no lock from a server up less than D (30s)]:duration:_rlock_durations'
        '(-E --conflict-exit-code)'{-E+,--conflict-exit-code=}'[exit code when -w runs out, 0..255 (75)]:exit code:(75 0 1)'
        $_rlock_output_options
        '1: :_rlock_names'
      ) ;;
  esac
  _arguments -s -S : $opts $_rlock_connection_options $_rlock_help_option
}

_rlock() {
  local curcontext=$curcontext ret=1
  local _rlock_cmd=${(Q)words[1]} _rlock_url= _rlock_prefix=
  local -a _rlock_login
  local -i _rlock_dashdash=0 name=0 has_c=0 i j
  local w
  [[ $_rlock_cmd == '~/'* ]] && _rlock_cmd=$HOME/${_rlock_cmd#'~/'}
  (( $+commands[$_rlock_cmd] )) || [[ -x $_rlock_cmd ]] || _rlock_cmd=rlock

  # Find NAME (or the subcommand): the first word that is no option and no
  # option's value. Note --url and --prefix on the way.
  for (( i = 2; i < CURRENT; i++ )); do
    w=${(Q)words[i]}
    case $w in
      (--)
        _rlock_dashdash=1
        name=$(( i + 1 ))
        break ;;
      (--url=*) _rlock_url=${w#--url=} ;;
      (--prefix=*) _rlock_prefix=${w#--prefix=} ;;
      (--password-file=*|--tls-*=*|--tls-insecure) _rlock_login+=($w) ;;
      (--command=*) has_c=1 ;;
      (--*=*) ;;
      (--*)
        if _rlock_takes_value $w; then
          [[ $w == --command ]] && has_c=1
          [[ $w == --url ]] && _rlock_url=${(Q)words[i+1]}
          [[ $w == --prefix ]] && _rlock_prefix=${(Q)words[i+1]}
          [[ $w == (--password-file|--tls-*) ]] &&
            _rlock_login+=($w=${(Q)words[i+1]})
          (( i++ ))
        fi ;;
      (-?*)
        # A cluster such as -nv, -w10 or -nw 10.
        for (( j = 2; j <= $#w; j++ )); do
          if [[ $w[j] == [wtEci] ]]; then
            [[ $w[j] == c ]] && has_c=1
            (( j == $#w )) && (( i++ ))
            break
          fi
        done ;;
      (*)
        name=$i
        break ;;
    esac
  done

  # The word is an option, an option's value, NAME or the subcommand.
  if (( name == 0 || name >= CURRENT )); then
    local -a first=('1: :_rlock_first')
    (( name == CURRENT && _rlock_dashdash )) && first=('1: :_rlock_names')
    _arguments -s -S : \
      '(-t --ttl)'{-t+,--ttl=}'[lease length, renewed every TTL/3 (30s)]:duration:_rlock_durations' \
      '(-c --command)'{-c+,--command=}'[run STR with $SHELL -c (/bin/sh)]:shell command:_cmdstring' \
      '--kill-signal=[to the command'\''s group on lock loss (TERM)]:signal:_rlock_signals' \
      '--kill-after=[then SIGKILL after D (TTL/6, at most 10s)]:duration:_rlock_durations' \
      '--hold=[keep the lock at least D after acquiring it]:duration:_rlock_durations' \
      '--once-per=[at most one successful run per D-long slot]:duration:_rlock_durations' \
      '(-s --shared)--limit=[a semaphore: at most N holders at once, each $RLOCK_SLOT in 0..N-1]:N:(2 3 4)' \
      '(-s --shared --limit -x -e --exclusive)'{-s,--shared}'[a shared (read) lock: shared holders run together, a plain one alone]' \
      $_rlock_wait_options \
      $_rlock_connection_options \
      $_rlock_output_options \
      $_rlock_help_option \
      '--events=[lifecycle events as JSON lines to FILE (- for stderr)]:file:_files' \
      '(- *)'{-V,--version}'[print the version and exit]' \
      '(-x -e --exclusive -s --shared)'{-x,-e,--exclusive}'[accepted: exclusive is the default]' \
      '(-n --nonblock --nb --nonblocking -w --wait --timeout)'{--nb,--nonblocking}'[the same as -n]' \
      '(-o --close)'{-o,--close}'[accepted: COMMAND gets no lock descriptor]' \
      $first && ret=0
    return ret
  fi

  # A subcommand, unless -- came before it.
  if (( ! _rlock_dashdash )) &&
    [[ ${(Q)words[name]} == (status|acquire|extend|release|check|wait|doctor) ]]; then
    # Its options may come before it: the connection options from there on.
    for (( i = name + 1; i < CURRENT; i++ )); do
      w=${(Q)words[i]}
      case $w in
        (--url=*) _rlock_url=${w#--url=} ;;
        (--prefix=*) _rlock_prefix=${w#--prefix=} ;;
        (--url) _rlock_url=${(Q)words[i+1]} ;;
        (--prefix) _rlock_prefix=${(Q)words[i+1]} ;;
        (--password-file=*|--tls-*=*|--tls-insecure) _rlock_login+=($w) ;;
        (--password-file|--tls-*) _rlock_login+=($w=${(Q)words[i+1]}) ;;
      esac
    done
    shift $(( name - 1 )) words
    (( CURRENT -= name - 1 ))
    _rlock_subcommand
    return
  fi

  # After NAME in run mode. With -c before NAME, nothing may follow it.
  (( has_c )) && return 1
  local next=${(Q)words[name+1]}
  if (( CURRENT == name + 1 )); then
    if [[ $PREFIX == -* ]]; then
      local -a c_opts=('-c:run STR with $SHELL -c (/bin/sh)' '--command:run STR with $SHELL -c (/bin/sh)')
      _describe -t options 'option' c_opts
    else
      _command_names -e
    fi
    return
  fi
  case $next in
    (-c|--command)
      (( CURRENT == name + 2 )) && _cmdstring
      return ;;
    (--command=*)
      return 1 ;;
  esac
  # COMMAND [ARG...], completed as if typed on its own.
  shift $name words
  (( CURRENT -= name ))
  _normal
}

if [[ $funcstack[1] == _rlock ]]; then
  _rlock "$@"
else
  compdef _rlock rlock
fi
