# fish completion for rlock(1)
#
# Installed to share/fish/vendor_completions.d/, where fish loads it the first
# time rlock is completed.
#
# Lock NAMEs are completed from `rlock status --json` when the Redis server
# (--url or --prefix as typed, else $RLOCK_URL and the rest of the defaults)
# answers within 0.3s; otherwise NAMEs complete to nothing.

# Succeeds if option $argv[1] takes a value (in the next word, or glued on).
function __rlock_takes_value
    switch $argv[1]
        case --url --prefix --wait --timeout --ttl --conflict-exit-code \
            --command --kill-signal --kill-after --connect-timeout \
            --io-timeout --hold --once-per --limit --events --token --min-validity \
            --match --interval --password-file --tls-ca --tls-cert \
            --tls-key --tls-server-name --restart-grace \
            --sentinel-password-file --replicas --replicas-timeout --quorum \
            --password-command --password-refresh -w -t -E -c -i
            return 0
        case --compat
            return 0
    end
    return 1
end

# Prints where the word being completed stands, as one line:
#   options          among rlock's options (or their values), NAME or subcommand
#   name             NAME, after --
#   SUBCOMMAND N     after SUBCOMMAND and N of its NAMEs
#   after-name       right after NAME in run mode: COMMAND, or -c
#   shell-command    the STR of NAME -c STR
#   command I        COMMAND [ARG...], which starts at word I
#   none             nothing may follow (-c came before NAME)
function __rlock_state
    set -l words (commandline -opc)
    set -l n (count $words)
    set -l i 2
    set -l name 0
    set -l has_c 0
    while test $i -le $n
        set -l w $words[$i]
        switch $w
            case --
                set name (math $i + 1)
                test $name -gt $n; and echo name; and return
                break
            case '--command=*'
                set has_c 1
            case '--*=*'
            case '--*'
                if __rlock_takes_value $w
                    test $w = --command; and set has_c 1
                    set i (math $i + 1)
                end
            case '-?*'
                # A cluster such as -nv, -w10 or -nw 10.
                set -l letters (string split '' -- (string sub -s 2 -- $w))
                for j in (seq (count $letters))
                    if contains -- $letters[$j] w t E c i
                        test $letters[$j] = c; and set has_c 1
                        test $j -eq (count $letters); and set i (math $i + 1)
                        break
                    end
                end
            case status acquire extend release check wait doctor
                # Count the NAMEs given after it so far.
                set -l k (math $i + 1)
                set -l names 0
                while test $k -le $n
                    switch $words[$k]
                        case '-*=*'
                        case '-*'
                            __rlock_takes_value $words[$k]; and set k (math $k + 1)
                        case '*'
                            set names (math $names + 1)
                    end
                    set k (math $k + 1)
                end
                echo $w $names
                return
            case '*'
                set name $i
                break
        end
        set i (math $i + 1)
    end
    if test $name -eq 0
        echo options
    else if test $has_c -eq 1
        echo none
    else if test $n -eq $name
        echo after-name
    else
        switch $words[(math $name + 1)]
            case -c --command
                if test $n -eq (math $name + 1)
                    echo shell-command
                else
                    echo none
                end
            case '--command=*'
                echo none
            case '*'
                echo command (math $name + 1)
        end
    end
end

# Succeeds if the word being completed stands where __rlock_state says $argv.
function __rlock_at
    set -l state (string split ' ' -- (__rlock_state))
    test "$state[1]" = "$argv[1]"; or return 1
    # "SUBCOMMAND need-name": status takes several NAMEs, the others (doctor
    # too) one.
    if test "$argv[2]" = need-name
        test "$state[1]" = status; or test "$state[2]" -eq 0
    end
end

# The held locks, one per line, from the server the command line points at.
function __rlock_names
    set -l words (commandline -opc)
    set -l cmd $words[1]
    command -q -- $cmd; or set cmd rlock
    command -q -- $cmd; or return
    set -l args status --json --connect-timeout 0.3s --io-timeout 0.3s
    # --url, --prefix and the login and TLS options as typed, before NAME or
    # anywhere in a subcommand.
    set -l i 2
    while test $i -le (count $words)
        switch $words[$i]
            case '--url=*' '--prefix=*' '--password-file=*' '--tls-*=*' \
                --tls-insecure
                set -a args $words[$i]
            case --url --prefix --password-file --tls-ca --tls-cert --tls-key \
                --tls-server-name
                set -a args $words[$i]=$words[(math $i + 1)]
        end
        set i (math $i + 1)
    end
    set -l json (command $cmd $args 2>/dev/null </dev/null); or return
    # One "name" per lock object, on a line of its own; its value is a JSON
    # string (names hold only printable characters).
    for value in (string replace -rf -- '^\s*"name":\s*("(?:[^"\\\\]|\\\\.)*"),?$' '$1' $json)
        string unescape -- $value
    end
end

# Signal names for --kill-signal, with SIG in front once that is typed.
function __rlock_signals
    set -l prefix
    string match -qir -- '^(--kill-signal=)?sig' (commandline -ct); and set prefix SIG
    printf "$prefix%s\tsignal\n" TERM INT HUP QUIT KILL USR1 USR2
end

# Examples of durations, and of Redis URLs.
function __rlock_durations
    printf '%s\tduration\n' 500ms 5s 30s 5m 1h
end

function __rlock_urls
    printf '%s\t%s\n' redis:// 'redis://[user[:pass]@]host[:port][/db]' \
        rediss:// 'rediss://...: TLS' unix:// 'unix:///path.sock[?db=N]' \
        redis+sentinel:// 'redis+sentinel://host[:port][,...]/MASTER[/DB]' \
        rediss+sentinel:// 'rediss+sentinel://...: TLS' \
        redis+cluster:// 'redis+cluster://host[:port][,...]' \
        rediss+cluster:// 'rediss+cluster://...: TLS'
end

# -c and --command, the options that may follow NAME, once - is typed.
function __rlock_c_option
    string match -q -- '-*' (commandline -ct); and printf '%s\n' -c --command
end

# COMMAND [ARG...] from word $argv[1] on, completed as if typed on its own.
function __rlock_complete_command
    set -l words (commandline -opc)
    set words $words[$argv[1]..-1]
    set -l line (string escape -- $words) (commandline -ct)
    complete -C (string join ' ' -- $line)
end

set -l durations '(__rlock_durations)'
set -l urls '(__rlock_urls)'

complete -c rlock -f

# Before NAME: the subcommands, NAME, and the options of run mode.
set -l opts '__rlock_at options'
complete -c rlock -n $opts -a status -d 'show who holds which lock'
complete -c rlock -n $opts -a acquire -d 'take the lock for a script; print the token'
complete -c rlock -n $opts -a extend -d 'extend a lock taken with acquire'
complete -c rlock -n $opts -a release -d 'release a lock taken with acquire'
complete -c rlock -n $opts -a check -d 'tell whether the token still holds the lock'
complete -c rlock -n $opts -a wait -d 'wait until the lock is free, without taking it'
complete -c rlock -n $opts -a doctor -d 'check that Redis keeps locks safe'
complete -c rlock -n $opts -a '(__rlock_names)' -d 'lock'
complete -c rlock -n '__rlock_at name' -a '(__rlock_names)' -d 'lock'

complete -c rlock -n $opts -s t -l ttl -x -a $durations -d 'lease length, renewed every TTL/3 (30s)'
complete -c rlock -n $opts -s c -l command -x -a '(__fish_complete_command)' -d 'run STR with $SHELL -c (/bin/sh)'
complete -c rlock -n $opts -l kill-signal -x -a '(__rlock_signals)' -d 'to the command\'s group on lock loss (TERM)'
complete -c rlock -n $opts -l kill-after -x -a $durations -d 'then SIGKILL after D (TTL/6, at most 10s)'
complete -c rlock -n $opts -l hold -x -a $durations -d 'keep the lock at least D after acquiring it'
complete -c rlock -n $opts -l once-per -x -a $durations -d 'at most one successful run per D-long slot'
complete -c rlock -n $opts -l limit -x -a '2 3 4' -d 'a semaphore: at most N holders at once, each $RLOCK_SLOT in 0..N-1'
complete -c rlock -n $opts -s s -l shared -d 'a shared (read) lock: shared holders run together, a plain one alone'
complete -c rlock -n $opts -s n -l nonblock -d 'fail at once if the lock is held'
complete -c rlock -n $opts -l fair -d 'wait in line: first come, first served'
complete -c rlock -n $opts -l restart-grace -x -a $durations -d 'take no lock from a server up less than D (30s)'
complete -c rlock -n $opts -s w -l wait -x -a $durations -d 'give up after D; -w 0 is -n (forever)'
complete -c rlock -n $opts -l timeout -x -a $durations -d 'alias of --wait'
complete -c rlock -n $opts -s E -l conflict-exit-code -x -d 'exit code when not acquired, 0..255 (75)'
complete -c rlock -n $opts -l url -x -a $urls -d 'redis://[user[:pass]@]host[:port][/db] or unix:///path.sock[?db=N]'
complete -c rlock -n $opts -l prefix -x -d 'key prefix ($RLOCK_PREFIX, rlock:)'
complete -c rlock -n $opts -l connect-timeout -x -a $durations -d 'per connection attempt (2s)'
complete -c rlock -n $opts -l io-timeout -x -a $durations -d 'per reply (5s)'
complete -c rlock -n $opts -l password-file -r -F -d 'password: the first line of FILE'
complete -c rlock -n $opts -l password-command -x -a '(__fish_complete_command)' -d 'password: the first line a shell command prints'
complete -c rlock -n $opts -l password-refresh -x -a $durations -d 'run the password command this often (5m)'
complete -c rlock -n $opts -l sentinel-password-file -r -F -d 'the sentinels\' password: the first line of FILE'
complete -c rlock -n $opts -l replicas -x -a 'auto all 0 1 2' -d 'replicas that must confirm each acquire and renewal'
complete -c rlock -n $opts -l replicas-timeout -x -a $durations -d 'wait at most D for them (1s)'
complete -c rlock -n $opts -l quorum -x -a '2 3 4' -d 'with several --url: how many must agree (a majority)'
complete -c rlock -n $opts -l tls-ca -r -F -d 'rediss://: CA certificates (PEM) to verify the server with'
complete -c rlock -n $opts -l tls-cert -r -F -d 'rediss://: client certificate (PEM)'
complete -c rlock -n $opts -l tls-key -r -F -d 'rediss://: its private key'
complete -c rlock -n $opts -l tls-server-name -x -d 'rediss://: name to verify (the URL\'s host)'
complete -c rlock -n $opts -l tls-insecure -d 'rediss://: do not verify the server (unsafe)'
complete -c rlock -n $opts -l compat -x -a 'string shedlock shedlock: redisson' -d 'keep the lock as an application\'s library does'
complete -c rlock -n $opts -s v -l verbose -d 'lifecycle lines on stderr'
complete -c rlock -n $opts -s q -l quiet -d 'nothing but errors on stderr'
complete -c rlock -n $opts -s h -l help -d 'print the help and exit'
complete -c rlock -n $opts -l events -r -F -d 'lifecycle events as JSON lines to FILE (- for stderr)'
complete -c rlock -n $opts -s V -l version -d 'print the version and exit'
complete -c rlock -n $opts -s x -l exclusive -d 'accepted: exclusive is the default'
complete -c rlock -n $opts -s e -d 'accepted: exclusive is the default'
complete -c rlock -n $opts -l nb -d 'the same as -n'
complete -c rlock -n $opts -l nonblocking -d 'the same as -n'
complete -c rlock -n $opts -s o -l close -d 'accepted: COMMAND gets no lock descriptor'

# After NAME in run mode: COMMAND [ARG...], or -c STR.
complete -c rlock -n '__rlock_at after-name' -a '(__fish_complete_command)'
complete -c rlock -n '__rlock_at after-name' -a '(__rlock_c_option)' -d 'run STR with $SHELL -c (/bin/sh)'
complete -c rlock -n '__rlock_at shell-command' -a '(__fish_complete_command)'
complete -c rlock -n '__rlock_at command' -a '(__rlock_complete_command (__rlock_state | string split " ")[2])'

# The subcommands: NAMEs and their options.
for sub in status acquire extend release check wait doctor
    complete -c rlock -n "__rlock_at $sub need-name" -a '(__rlock_names)' -d 'lock'
    complete -c rlock -n "__rlock_at $sub" -l url -x -a $urls -d 'redis://[user[:pass]@]host[:port][/db] or unix:///path.sock[?db=N]'
    complete -c rlock -n "__rlock_at $sub" -l prefix -x -d 'key prefix ($RLOCK_PREFIX, rlock:)'
    complete -c rlock -n "__rlock_at $sub" -l connect-timeout -x -a $durations -d 'per connection attempt (2s)'
    complete -c rlock -n "__rlock_at $sub" -l io-timeout -x -a $durations -d 'per reply (5s)'
    complete -c rlock -n "__rlock_at $sub" -l password-file -r -F -d 'password: the first line of FILE'
    complete -c rlock -n "__rlock_at $sub" -l password-command -x -a '(__fish_complete_command)' -d 'password: the first line a shell command prints'
    complete -c rlock -n "__rlock_at $sub" -l password-refresh -x -a $durations -d 'run the password command this often (5m)'
    complete -c rlock -n "__rlock_at $sub" -l sentinel-password-file -r -F -d 'the sentinels\' password: the first line of FILE'
    complete -c rlock -n "__rlock_at $sub" -l replicas -x -a 'auto all 0 1 2' -d 'replicas that must confirm each acquire and renewal'
    complete -c rlock -n "__rlock_at $sub" -l replicas-timeout -x -a $durations -d 'wait at most D for them (1s)'
    complete -c rlock -n "__rlock_at $sub" -l quorum -x -a '2 3 4' -d 'with several --url: how many must agree (a majority)'
    complete -c rlock -n "__rlock_at $sub" -l tls-ca -r -F -d 'rediss://: CA certificates (PEM) to verify the server with'
    complete -c rlock -n "__rlock_at $sub" -l tls-cert -r -F -d 'rediss://: client certificate (PEM)'
    complete -c rlock -n "__rlock_at $sub" -l tls-key -r -F -d 'rediss://: its private key'
    complete -c rlock -n "__rlock_at $sub" -l tls-server-name -x -d 'rediss://: name to verify (the URL\'s host)'
    complete -c rlock -n "__rlock_at $sub" -l tls-insecure -d 'rediss://: do not verify the server (unsafe)'
    complete -c rlock -n "__rlock_at $sub" -l compat -x -a 'string shedlock shedlock: redisson' -d 'keep the lock as an application\'s library does'
    complete -c rlock -n "__rlock_at $sub" -s h -l help -d 'print the help and exit'
end
for sub in acquire extend release check wait
    complete -c rlock -n "__rlock_at $sub" -s v -l verbose -d 'lifecycle lines on stderr'
    complete -c rlock -n "__rlock_at $sub" -s q -l quiet -d 'nothing but errors on stderr'
end

set -l cond '__rlock_at status'
complete -c rlock -n $cond -l json -d 'print a JSON array'
complete -c rlock -n $cond -l wide -d 'never cut the COMMAND column'
complete -c rlock -n $cond -l match -x -d 'only NAMEs matching a glob'
complete -c rlock -n $cond -l watch -d 'redraw until interrupted'
complete -c rlock -n $cond -s i -l interval -x -a $durations -d 'redraw every D (2s)'
complete -c rlock -n $cond -l restart-grace -x -a $durations -d 'say whether a server up less than D holds locks back (30s)'

set cond '__rlock_at acquire'
complete -c rlock -n $cond -s t -l ttl -x -a $durations -d 'lease length, not renewed (5m)'
complete -c rlock -n $cond -l limit -x -a '2 3 4' -d 'a semaphore: at most N holders at once (slot printed)'
complete -c rlock -n $cond -s s -l shared -d 'a shared (read) lock: shared holders together, a plain one alone'
complete -c rlock -n $cond -s n -l nonblock -d 'fail at once if the lock is held'
complete -c rlock -n $cond -l fair -d 'wait in line: first come, first served'
complete -c rlock -n $cond -l restart-grace -x -a $durations -d 'take no lock from a server up less than D (30s)'
complete -c rlock -n $cond -s w -l wait -x -a $durations -d 'give up after D; -w 0 is -n (forever)'
complete -c rlock -n $cond -l timeout -x -a $durations -d 'alias of --wait'
complete -c rlock -n $cond -s E -l conflict-exit-code -x -d 'exit code when not acquired, 0..255 (75)'
complete -c rlock -n $cond -l json -d 'print {name, key, token, fence, ttl_ms}'
complete -c rlock -n $cond -l env -d 'print RLOCK_* assignments for eval'

set cond '__rlock_at extend'
complete -c rlock -n $cond -s t -l ttl -x -a $durations -d 'new lease length (the one it was taken with)'
complete -c rlock -n $cond -l token -x -d 'the holder\'s token ($RLOCK_TOKEN)'

set cond '__rlock_at release'
complete -c rlock -n $cond -l token -x -d 'the holder\'s token ($RLOCK_TOKEN)'
complete -c rlock -n $cond -l force -d 'break the lock, whoever holds it'

set cond '__rlock_at check'
complete -c rlock -n $cond -l token -x -d 'the holder\'s token ($RLOCK_TOKEN)'
complete -c rlock -n $cond -l min-validity -x -a $durations -d 'succeed only with at least D left (0)'

set cond '__rlock_at wait'
complete -c rlock -n $cond -s w -l wait -x -a $durations -d 'give up after D; -w 0 is -n (forever)'
complete -c rlock -n $cond -l timeout -x -a $durations -d 'alias of --wait'
complete -c rlock -n $cond -l restart-grace -x -a $durations -d 'take no lock from a server up less than D (30s)'
complete -c rlock -n $cond -s E -l conflict-exit-code -x -d 'exit code when -w runs out, 0..255 (75)'

set cond '__rlock_at doctor'
complete -c rlock -n $cond -l restart-grace -x -a $durations -d 'judge the hold-back after a restart against D (30s)'
complete -c rlock -n $cond -s t -l ttl -x -a $durations -d 'judge the round trip against a D lease (30s)'
complete -c rlock -n $cond -l json -d 'print a JSON object'
