#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Every guest has the host's entropy through virtio-rng, so its CRNG is
# ready by the time the lab is: a non-blocking getrandom() succeeds. Without
# it a TCG guest took up to 523 s, and perftest and librdmacm block on it.
. "$(dirname "$0")/lib.sh"
for n in $(seq 0 $((NODES + VIRTIO_NODES + RXE_NODES - 1))); do
	cur=$(lsh -t 30 "$n" 'cat /sys/class/misc/hw_random/rng_current') ||
		fail "node$n: no hw_random device"
	case $cur in
	virtio_rng*) ;;
	*) fail "node$n: hw_random is '$cur', want virtio_rng" ;;
	esac
	lsh -t 30 "$n" "python3 -c 'import os; os.getrandom(16, os.GRND_NONBLOCK)'" ||
		fail "node$n: CRNG not initialised (getrandom would block)"
done
echo "rng: $((NODES + VIRTIO_NODES + RXE_NODES)) guests with $cur, CRNG ready"
