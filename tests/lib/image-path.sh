# vb_image_path NAME: the directory of the engine image NAME as its recipe builds it today (deploy/image-build
# --path-only, the same cache and key), or nothing when it is not built. Never a glob: an older build of the same
# name may still be in the cache. Sourced by lib.sh and by the server helpers (pg-server.sh, mariadb-server.sh),
# which bench/ scripts source without lib.sh (issue 36.10: bench-client-pg stopped at "vb_image_path: command
# not found" when only lib.sh defined it).
VB_IMAGE_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
vb_image_path() { bash "$VB_IMAGE_ROOT/deploy/image-build" --path-only "$1" 2>/dev/null; }
