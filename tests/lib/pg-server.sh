# A throwaway PostgreSQL 17 + pgvector server for the adapter tests, from the engine image (deploy/image-build
# db-trixie), without systemd: a private mount namespace binds a scratch directory over the image's
# /var/lib/vbench, and the server runs chrooted in the image as the image's postgres user with its socket in
# that directory, so the host reaches it as host=DIR. Password authentication (scram) on the socket, so a wrong
# password is a real server error.
#   vb_pg_skip_reason            prints why the server cannot run here (empty when it can)
#   vb_pg_start DIR PASSWORD     initdb + start; sets VB_PG_PID; waits until it answers; 0 on success;
#                                VB_PG_CPUS=LIST (taskset syntax) confines the server and its backends to LIST.
#                                Under make test (tests/run-suite sets VB_SUITE_DIR, a directory of the run) the
#                                run's first server makes a template there with initdb, under a lock, and every
#                                server copies it and sets its own password: one initdb a run, not one a test
#   vb_pg_stop                   fast shutdown, then SIGKILL after 10 s
#   vb_pg_psql SQL...            psql (from the image) as postgres against the server
#   vb_pg_boot DIR PASSWORD      a test's server, after lib.sh: the image (vb_ensure_image: built when missing), the
#                                test skipped naming the reason where the server cannot run, vb_pg_stop at the exit,
#                                vb_pg_start as one check, the vector extension created
. "$(dirname "${BASH_SOURCE[0]}")/image-path.sh"
VB_PG_BIN=/usr/lib/postgresql/17/bin
VB_PG_PID=
VB_PG_DIR=

vb_pg_image() { # the image directory (the one the recipe db-trixie builds today, image-path.sh vb_image_path), or nothing
    local d
    d=$(vb_image_path db-trixie) && [ -x "$d$VB_PG_BIN/postgres" ] && echo "$d"
}

vb_pg_skip_reason() {
    [ "$(id -u)" -eq 0 ] || { echo "needs root (mount namespace, chroot)"; return; }
    command -v unshare >/dev/null || { echo "no unshare"; return; }
    [ -n "$(vb_pg_image)" ] || echo "no engine image db-trixie with PostgreSQL 17 (make image)"
}

vb_pg__initdb() { # vb_pg__initdb IMG DIR PASSWORD: DIR (made, the postgres user's) gets pwfile and data/ by initdb
    local img=$1 dir=$2 pw=$3 uidgid
    uidgid=$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$img/etc/passwd")
    mkdir -p "$dir" && chmod 755 "$dir" && printf '%s\n' "$pw" > "$dir/pwfile" && chown -R "$uidgid" "$dir" || return 1
    unshare --mount --propagation private sh -c "mount --bind '$dir' '$img/var/lib/vbench' &&
        exec chroot $img setpriv --reuid=${uidgid%:*} --regid=${uidgid#*:} --clear-groups env LANG=C.UTF-8 \
             $VB_PG_BIN/initdb -D /var/lib/vbench/data -U postgres \
             --auth=scram-sha-256 --pwfile=/var/lib/vbench/pwfile" > "$dir/initdb.log" 2>&1 || {
        sed 's/^/#   /' "$dir/initdb.log"; return 1; }
}

vb_pg_start() { # vb_pg_start DIR PASSWORD
    local dir=$1 pw=$2 img uidgid tpl=
    img=$(vb_pg_image)
    VB_PG_DIR=$dir
    uidgid=$(awk -F: '$1 == "postgres" {print $3 ":" $4}' "$img/etc/passwd")
    if [ -n "${VB_SUITE_DIR:-}" ] && [ -d "$VB_SUITE_DIR" ]; then
        tpl=$VB_SUITE_DIR/pg-template-$(basename "$img")
        ( flock 9 && { [ -d "$tpl/data" ] || { rm -rf "$tpl.new" && vb_pg__initdb "$img" "$tpl.new" vbench-template &&
                                                 mv "$tpl.new" "$tpl"; }; } ) 9>"$tpl.lock" || return 1
        mkdir -p "$dir" && chmod 755 "$dir" && cp -a "$tpl/data" "$tpl/pwfile" "$dir/" && chown -R "$uidgid" "$dir" ||
            return 1
    else
        vb_pg__initdb "$img" "$dir" "$pw" || return 1
    fi
    local as_pg="chroot $img setpriv --reuid=${uidgid%:*} --regid=${uidgid#*:} --clear-groups"
    local pin=
    [ -n "${VB_PG_CPUS:-}" ] && pin="taskset -c $VB_PG_CPUS"
    $pin unshare --mount --propagation private sh -c "mount --bind '$dir' '$img/var/lib/vbench' &&
        exec $as_pg $VB_PG_BIN/postgres -D /var/lib/vbench/data -c listen_addresses= \
             -c unix_socket_directories=/var/lib/vbench -c shared_buffers=256MB -c fsync=off \
             -c max_connections=100" > "$dir/server.log" 2>&1 &
    VB_PG_PID=$!
    local i
    for i in $(seq 1 300); do
        if [ -S "$dir/.s.PGSQL.5432" ] && vb_pg_psql 'SELECT 1' >/dev/null 2>&1; then
            [ -n "$tpl" ] || return 0
            # the template's password, then this server's own (scram: a wrong password stays a real error)
            vb_pg_psql "ALTER ROLE postgres PASSWORD '${pw//\'/\'\'}'" >/dev/null && printf '%s\n' "$pw" > "$dir/pwfile" &&
                return 0
            break
        fi
        kill -0 "$VB_PG_PID" 2>/dev/null || break
        sleep 0.1
    done
    sed 's/^/#   /' "$dir/server.log"
    return 1
}

vb_pg_psql() { # psql from the image, run inside it (the image's libc is not the host's) against the socket
    local img; img=$(vb_pg_image)
    unshare --mount --propagation private sh -c 'mount --bind "$1" "$2/var/lib/vbench" && shift 2 &&
        exec chroot "$0" env PGPASSWORD="$(cat "$0/var/lib/vbench/pwfile")" '"$VB_PG_BIN"'/psql -X \
             -h /var/lib/vbench -U postgres -d postgres -v ON_ERROR_STOP=1 -Atc "$*"' "$img" "$VB_PG_DIR" "$img" "$@"
}

vb_pg_stop() {
    [ -n "$VB_PG_PID" ] || return 0
    kill -INT "$VB_PG_PID" 2>/dev/null
    local i
    for i in $(seq 1 100); do kill -0 "$VB_PG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$VB_PG_PID" 2>/dev/null
    wait "$VB_PG_PID" 2>/dev/null
    VB_PG_PID=
}

vb_pg_boot() { # vb_pg_boot DIR PASSWORD
    vb_ensure_image db-trixie
    local why
    why=$(vb_pg_skip_reason)
    [ -z "$why" ] || skip_all "$why"
    vb_on_exit vb_pg_stop
    vb_pg_start "$1" "$2"
    ok $? "a PostgreSQL server with pgvector starts"
    vb_pg_psql "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null
}
