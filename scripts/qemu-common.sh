# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
#
# Shared by scripts/build-qemu and scripts/build-qemu-fuzz (sourced, not
# run): fetching Debian's QEMU source, applying the Cnuas series, the
# cache key. The caller sets PROG (its name for messages) and defines
# say(), then sources this file.

QEMU_DSC_NAME=qemu_7.2+dfsg-7+deb12u18.dsc
# Firmware comes from Debian's packages (seabios, ipxe-qemu,
# qemu-system-data); the dfsg source has none. Searching those directories
# by default keeps -L optional, also for the qtests in the build tree.
FIRMWARE_PATH=/usr/share/seabios:/usr/share/qemu:/usr/lib/ipxe/qemu

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
QEMU_SERIES=$REPO/scripts/qemu-series
CACHE=${CNUAS_CACHE:-$HOME/.cache/cnuas}
SRC_CACHE=$CACHE/src
# shellcheck disable=SC2034 # used by the callers
JOBS=${CNUAS_JOBS:-2}

die() { echo "$PROG: error: $*" >&2; exit 1; }
impossible() { echo "$PROG: cannot build here: $*" >&2; exit 3; }

# Print the tail of a log and fail.
fail_log() {
    echo "$PROG: error: $1 (log: $2)" >&2
    tail -n 40 "$2" >&2 || true
    exit 1
}

check_tools() {
    local t
    for t in dpkg-source patch meson ninja cc pkg-config python3 sha256sum; do
        command -v "$t" >/dev/null || impossible "'$t' not installed"
    done
    pkg-config --exists glib-2.0 pixman-1 zlib 2>/dev/null &&
        [ -f /usr/include/libfdt.h ] ||
        impossible "missing -dev packages (libglib2.0-dev libpixman-1-dev" \
                   "libfdt-dev zlib1g-dev)"
}

find_dsc() {
    local dsc=$SRC_CACHE/$QEMU_DSC_NAME
    if [ ! -f "$dsc" ]; then
        say "fetching the qemu source with apt-get source -d into $SRC_CACHE"
        mkdir -p "$SRC_CACHE"
        (cd "$SRC_CACHE" && apt-get source -d qemu >&2) ||
            impossible "apt-get source -d qemu failed (deb-src configured?)"
        if [ ! -f "$dsc" ]; then
            dsc=$(ls -1 "$SRC_CACHE"/qemu_*.dsc 2>/dev/null | sort -V |
                  tail -n 1)
            [ -n "$dsc" ] || impossible "no qemu .dsc in $SRC_CACHE"
            say "warning: $QEMU_DSC_NAME not available, using $(basename "$dsc")"
        fi
    fi
    echo "$dsc"
}

# The patch names of the generated series in directory $1, in order.
series_patches() {
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$1/series" | grep -v '^$'
}

# The cache key: .dsc $1, the series' repository files $2 (qemu-series
# --inputs), the configure flags $3, and the files $4... that drive the
# build (the calling script, this file).
compute_key() {
    local dsc=$1 series=$2 flags=$3 inputs f
    shift 3
    # shellcheck disable=SC2086 # one path a word
    inputs=$(cd "$REPO" && scripts/cache-key $series) ||
        die "scripts/cache-key failed"
    {
        echo "dsc"; cat "$dsc"
        echo "series inputs $inputs"
        echo "flags $flags"
        for f in "$@"; do echo "script"; cat "$f"; done
    } | sha256sum | cut -c1-12
}

# Extract a fresh tree into $2 and apply the series.
prepare_tree() {
    local dsc=$1 dir=$2 series=$2.series p
    rm -rf "$dir" "$series"
    mkdir -p "$(dirname "$dir")"
    say "extracting $(basename "$dsc")"
    dpkg-source --no-check --no-copy -x "$dsc" "$dir" >"$dir.extract.log" 2>&1 ||
        fail_log "dpkg-source -x failed" "$dir.extract.log"
    rm -f "$dir.extract.log"
    "$QEMU_SERIES" "$series" || die "scripts/qemu-series failed"
    for p in $(series_patches "$series"); do
        say "applying $p"
        patch -d "$dir" -p1 --batch --forward --fuzz=0 -s \
            <"$series/$p" || die "$p does not apply"
    done
    rm -rf "$series"
}

# A binary in the build tree resolves data and firmware directories below
# build/qemu-bundle; link the firmware there so it runs like the install.
link_firmware() {
    local build=$1 d
    for d in ${FIRMWARE_PATH//:/ }; do
        mkdir -p "$build/qemu-bundle$(dirname "$d")"
        ln -sfn "$d" "$build/qemu-bundle$d"
    done
}
