# Starts and stops a throwaway MariaDB 11.8 from the engine image for adapter tests, more simply than the
# systemd units of 50-systemd-units.t: a private mount namespace binds a scratch directory at /var/lib/vbench
# inside the image, mariadbd runs chrooted there as the image's mysql user with --skip-networking, and the host
# reaches it through the socket file in the scratch directory. Needs root. Source it, then:
#   mdb_start DIR    -> 0 when the server answers; sets MDB_SOCK, MDB_PID. Under make test (VB_SUITE_DIR, a
#                       directory of the run) the run's first server makes a template data directory there with
#                       mariadb-install-db, under a lock, and every server copies it: one install a run
#   mdb_stop         -> stops it (TERM, then KILL after 30 s)
#   mdb_sql SQL      -> the mariadb client (from the image) as root on the server's socket, rows without headers
#   mdb_boot DIR     -> a test's server, after lib.sh: the image (vb_ensure_image: built when missing), the test
#                       skipped naming the reason where MariaDB cannot run, mdb_stop at the exit, mdb_start as a check
# The image: the one the recipe db-trixie builds today (image-path.sh vb_image_path), looked up when a server starts, so a
# test may source this before vb_ensure_image builds it.
. "$(dirname "${BASH_SOURCE[0]}")/image-path.sh"
MDB_IMG=${MDB_IMG:-}
MDB_PID=
mdb_in_image() { # mdb_in_image DIR CMD... : runs CMD chrooted in the image as mysql, DIR at /var/lib/vbench
    local dir=$1; shift
    unshare --mount --propagation private sh -c 'mount --bind "$1" "$2/var/lib/vbench" && shift 2 &&
        exec chroot --userspec=mysql:mysql "$MDB_IMG" "$@"' sh "$dir" "$MDB_IMG" "$@"
}
mdb__install() { # mdb__install DIR: DIR (made, mysql's) gets data/ by mariadb-install-db
    local dir=$1
    mkdir -p "$dir" && chown "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$MDB_IMG/etc/passwd")" "$dir" &&
        chmod 755 "$dir" || return 1
    mdb_in_image "$dir" /usr/bin/mariadb-install-db --no-defaults --datadir=/var/lib/vbench/data \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; return 1; }
}
mdb_start() {
    local dir=$1 i tpl
    [ -n "$MDB_IMG" ] || MDB_IMG=$(vb_image_path db-trixie)
    [ -n "$MDB_IMG" ] && [ -x "$MDB_IMG/usr/sbin/mariadbd" ] || { echo "no engine image with mariadbd" >&2; return 1; }
    export MDB_IMG
    if [ -n "${VB_SUITE_DIR:-}" ] && [ -d "$VB_SUITE_DIR" ]; then
        tpl=$VB_SUITE_DIR/mdb-template-$(basename "$MDB_IMG")
        ( flock 9 && { [ -d "$tpl/data" ] || { rm -rf "$tpl.new" && mdb__install "$tpl.new" && mv "$tpl.new" "$tpl"; }; } ) \
            9>"$tpl.lock" || return 1
        mkdir -p "$dir" && chown "$(awk -F: '$1 == "mysql" {print $3 ":" $4}' "$MDB_IMG/etc/passwd")" "$dir" &&
            chmod 755 "$dir" && cp -a "$tpl/data" "$dir/" || return 1
    else
        mdb__install "$dir" || return 1
    fi
    mdb_in_image "$dir" /usr/sbin/mariadbd --no-defaults --datadir=/var/lib/vbench/data \
        --socket=/var/lib/vbench/mysqld.sock --skip-networking --innodb-buffer-pool-size=256M \
        --pid-file=/var/lib/vbench/mariadbd.pid --log-error=/var/lib/vbench/error.log >/dev/null 2>&1 &
    MDB_SOCK=$dir/mysqld.sock
    MDB_DIR=$dir
    for i in $(seq 1 300); do
        if [ -S "$MDB_SOCK" ] && [ -s "$dir/mariadbd.pid" ]; then MDB_PID=$(cat "$dir/mariadbd.pid"); return 0; fi
        sleep 0.1
    done
    cat "$dir/error.log" >&2
    return 1
}
mdb_stop() {
    [ -n "$MDB_PID" ] || return 0
    kill -TERM "$MDB_PID" 2>/dev/null
    local i
    for i in $(seq 1 300); do kill -0 "$MDB_PID" 2>/dev/null || { MDB_PID=; return 0; }; sleep 0.1; done
    kill -KILL "$MDB_PID" 2>/dev/null
    MDB_PID=
}
mdb_sql() { mdb_in_image "$MDB_DIR" /usr/bin/mariadb --no-defaults -S /var/lib/vbench/mysqld.sock -u root -N -e "$1"; }
mdb_boot() {
    vb_ensure_image db-trixie
    local why=
    [ "$(id -u)" -eq 0 ] || why="needs root (mount namespace, chroot)"
    [ -n "$why" ] || [ -x "$(vb_image_path db-trixie)/usr/sbin/mariadbd" ] ||
        why="no engine image db-trixie with mariadbd (make image)"
    [ -z "$why" ] || skip_all "$why"
    vb_on_exit mdb_stop
    mdb_start "$1"
    ok $? "a MariaDB server starts"
}
