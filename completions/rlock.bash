# bash completion for rlock(1)                            -*- shell-script -*-
#
# Installed to share/bash-completion/completions/, where bash-completion loads
# it on first use. Without bash-completion (sourced by hand), COMMAND's
# arguments complete as file names and --opt=value is only partly understood.

# Completes the value of option $1 for the word $cur.
_rlock_value()
{
  local durations='500ms 5s 30s 5m 1h'
  local signals='TERM INT HUP QUIT KILL USR1 USR2'
  case $1 in
    -w | --wait | --timeout | -t | --ttl | --kill-after | \
      --connect-timeout | --io-timeout | --hold | --once-per | \
      --min-validity | -i | --interval | --replicas-timeout | \
      --password-refresh)
      mapfile -t COMPREPLY < <(compgen -W "$durations" -- "$cur")
      ;;
    --kill-signal)
      [[ $cur == [Ss][Ii][Gg]* ]] &&
        signals='SIGTERM SIGINT SIGHUP SIGQUIT SIGKILL SIGUSR1 SIGUSR2'
      mapfile -t COMPREPLY < <(compgen -W "$signals" -- "$cur")
      ;;
    --replicas)
      mapfile -t COMPREPLY < <(compgen -W 'auto all 0 1 2' -- "$cur")
      ;;
    --compat)
      mapfile -t COMPREPLY < <(compgen -W 'string shedlock shedlock: redisson' -- "$cur")
      ;;
    --limit)
      mapfile -t COMPREPLY < <(compgen -W '2 3 4' -- "$cur")
      ;;
    --url)
      mapfile -t COMPREPLY < <(compgen -W 'redis:// rediss:// unix:// redis+sentinel:// rediss+sentinel:// redis+cluster:// rediss+cluster://' -- "$cur")
      compopt -o nospace 2>/dev/null
      declare -F __ltrim_colon_completions >/dev/null &&
        __ltrim_colon_completions "$cur"
      ;;
    -c | --command | --password-command)
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      ;;
    --events | --password-file | --sentinel-password-file | --tls-ca | \
      --tls-cert | --tls-key)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      ;;
  esac
  # --prefix, -E and anything else: free text, nothing to offer.
  return 0
}

# Succeeds if rlock's option $1 takes a value.
_rlock_takes_value()
{
  case $1 in
    --url | --prefix | --wait | --timeout | --ttl | --conflict-exit-code | \
      --command | --kill-signal | --kill-after | --connect-timeout | \
      --io-timeout | --hold | --once-per | --limit | --events | --token | \
      --min-validity | --match | --interval | --password-file | --tls-ca | \
      --tls-cert | --tls-key | --tls-server-name | --restart-grace | \
      --sentinel-password-file | --replicas | --replicas-timeout | --quorum | \
      --password-command | --password-refresh | -[wtEci])
      return 0
      ;;
    --compat)
      return 0
      ;;
  esac
  return 1
}

# Adds to COMPREPLY the held lock NAMEs that start with $cur, listed by
# `rlock status --json` from the server the command line names (--url and
# --prefix and the login and TLS options as typed, else the environment).
# Nothing when no server answers
# within 0.3s.
_rlock_names()
{
  local cmd=${words[0]} line name quoted match=${cur//\\/}
  local -a typed args=(status --json --connect-timeout 0.3s --io-timeout 0.3s)
  [[ $cmd == */* && -x $cmd ]] || cmd=rlock
  # The line split at blanks only: COMP_WORDS splits a URL at ':'.
  read -ra typed <<<"${COMP_LINE:0:COMP_POINT}"
  local i v
  for ((i = 1; i < ${#typed[@]}; i++)); do
    case ${typed[i]} in
      --url=* | --prefix=* | --password-file=* | --tls-*=*) v=${typed[i]} ;;
      --tls-insecure) v=${typed[i]} ;;
      --url | --prefix | --password-file | --tls-*)
        v=${typed[i]}=${typed[i + 1]}
        ;;
      *) continue ;;
    esac
    v=${v/=[\'\"]/=}
    args+=("${v%[\'\"]}")
  done
  while IFS= read -r line; do
    # One "name" per lock object, on a line of its own.
    [[ $line =~ ^[[:space:]]*\"name\":[[:space:]]*\"(([^\"\\]|\\.)*)\",?$ ]] ||
      continue
    name=${BASH_REMATCH[1]//\\\"/\"}
    name=${name//\\\\/\\}
    [[ $name == "$match"* ]] || continue
    printf -v quoted '%q' "$name"
    COMPREPLY+=("$quoted")
  done < <("$cmd" "${args[@]}" 2>/dev/null </dev/null)
  declare -F __ltrim_colon_completions >/dev/null &&
    __ltrim_colon_completions "$cur"
  return 0
}

# Prints the index in COMP_WORDS of words[$1]; bash-completion joins words
# that COMP_WORDS splits at '=' or ':', so the two can differ.
_rlock_comp_index()
{
  local k j=0 acc
  for ((k = 0; k < $1; k++)); do
    acc=
    while [[ $acc != "${words[k]}" ]] && ((j < ${#COMP_WORDS[@]})); do
      acc+=${COMP_WORDS[j]}
      ((j++))
    done
  done
  printf '%s\n' "$j"
}

# Completes COMMAND [ARG...] starting at words[$1].
_rlock_command()
{
  if declare -F _command_offset >/dev/null; then
    _command_offset "$(_rlock_comp_index "$1")"
  elif ((cword == $1)); then
    mapfile -t COMPREPLY < <(compgen -c -- "$cur")
  else
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}

# Prints the options of subcommand $1.
_rlock_subcommand_options()
{
  local connection='--url --prefix --connect-timeout --io-timeout
    --password-file --password-command --password-refresh
    --sentinel-password-file --replicas --replicas-timeout
    --quorum --tls-ca --tls-cert --tls-key --tls-server-name --tls-insecure -h --help
    --compat'
  case $1 in
    status) echo "--json --wide --match --watch -i --interval --restart-grace $connection" ;;
    doctor) echo "-t --ttl --restart-grace --json $connection" ;;
    acquire)
      echo "-n --nonblock -w --wait --timeout --fair --restart-grace -t --ttl" \
        "--limit -s --shared -E --conflict-exit-code --json --env -v --verbose -q --quiet" \
        "$connection"
      ;;
    extend) echo "--token -t --ttl -v --verbose -q --quiet $connection" ;;
    release) echo "--token --force -v --verbose -q --quiet $connection" ;;
    check) echo "--token --min-validity -v --verbose -q --quiet $connection" ;;
    wait)
      echo "-w --wait --timeout --restart-grace -E --conflict-exit-code" \
        "-v --verbose -q --quiet $connection"
      ;;
  esac
}

# Completes the arguments of subcommand $1, which starts at words[$2].
_rlock_subcommand()
{
  local i=$(($2 + 1)) w names=0
  while ((i < cword)); do
    w=${words[i]}
    case $w in
      --) return 0 ;;
      -*)
        if _rlock_takes_value "$w"; then
          [[ ${words[i + 1]} == = ]] && ((i++))
          if ((i + 1 == cword)); then
            _rlock_value "$w"
            return 0
          fi
          ((i++))
        fi
        ;;
      *) ((names++)) ;;
    esac
    ((i++))
  done
  if [[ $split == true ]]; then
    _rlock_value "$prev"
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_rlock_subcommand_options "$1")" -- "$cur")
  elif [[ $1 == status ]] || ((names == 0)); then
    # status takes several NAMEs, the others (doctor too) one.
    _rlock_names
  fi
  return 0
}

_rlock()
{
  local cur prev words cword split=
  if declare -F _init_completion >/dev/null; then
    # -s: split --opt=value into prev and cur; -n :: keep URLs whole.
    _init_completion -s -n : || return
  else
    COMPREPLY=()
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${words[cword]}
    prev=${words[cword - 1]}
    # Without bash-completion, --opt=value arrives as three words.
    if [[ $cur == = ]]; then
      cur=
      split=true
    elif [[ $prev == = ]] && ((cword > 1)); then
      prev=${words[cword - 2]}
      split=true
    fi
  fi

  local i=1 w j name=0 has_c=0 opt=
  while ((i < cword)); do
    w=${words[i]}
    case $w in
      --)
        name=$((i + 1))
        break
        ;;
      --command=*)
        has_c=1
        ;;
      --*=*) ;;
      --*)
        if _rlock_takes_value "$w"; then
          [[ $w == --command ]] && has_c=1
          [[ ${words[i + 1]} == = ]] && ((i++))
          if ((i + 1 == cword)); then
            opt=$w
            break
          fi
          ((i++))
        fi
        ;;
      -?*)
        # A cluster such as -nv, -w10 or -nw 10.
        for ((j = 1; j < ${#w}; j++)); do
          case ${w:j:1} in
            [wtEci])
              [[ ${w:j:1} == c ]] && has_c=1
              if ((j == ${#w} - 1)); then
                if ((i + 1 == cword)); then
                  opt=-${w:j:1}
                  break 2
                fi
                ((i++))
              fi
              break
              ;;
          esac
        done
        ;;
      status | acquire | extend | release | check | wait | doctor)
        # The subcommand, unless -- came first.
        _rlock_subcommand "$w" "$i"
        return
        ;;
      *)
        name=$i
        break
        ;;
    esac
    ((i++))
  done

  # The word is the value of one of rlock's options.
  if [[ $opt ]]; then
    _rlock_value "$opt"
    return 0
  fi

  # The word is an option, NAME, or the subcommand.
  if ((name == 0 || name == cword)); then
    if ((name == cword)); then
      _rlock_names
      return 0
    fi
    if [[ $split == true ]]; then
      _rlock_takes_value "$prev" && _rlock_value "$prev"
      return 0
    fi
    local opts=(
      -n --nonblock -w --wait --timeout --fair --restart-grace -t --ttl
      -E --conflict-exit-code -c --command --url --prefix
      --kill-signal --kill-after --connect-timeout --io-timeout
      --password-file --password-command --password-refresh
      --sentinel-password-file --replicas --replicas-timeout
      --quorum --tls-ca --tls-cert --tls-key --tls-server-name
      --tls-insecure --hold --once-per --limit -s --shared --events
      -v --verbose -q --quiet -h --help -V --version
      -x -e --exclusive --nb --nonblocking -o --close
      --compat
    )
    # Not an option: the subcommand or NAME.
    if [[ $cur != -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W 'status acquire extend release check wait doctor' -- "$cur")
      _rlock_names
      return 0
    fi
    mapfile -t COMPREPLY < <(compgen -W "${opts[*]}" -- "$cur")
    return 0
  fi

  # After NAME. With -c before NAME, nothing may follow it.
  ((has_c)) && return 0
  local next=${words[name + 1]}
  if ((cword == name + 1)); then
    if [[ $cur == -* ]]; then
      mapfile -t COMPREPLY < <(compgen -W '-c --command' -- "$cur")
    else
      _rlock_command "$cword"
    fi
    return 0
  fi
  case $next in
    -c | --command)
      ((cword == name + 2)) && _rlock_value -c
      return 0
      ;;
    --command=*) return 0 ;;
  esac
  _rlock_command $((name + 1))
} &&
  complete -F _rlock rlock

# ex: filetype=sh
