#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck disable=SC2016 # the fake tests are single-quoted on purpose
# tests/run's accounting of skips, on a tree of fake tests: a copy of
# tests/run, tests/lib-skip.sh, tests/skip-reasons and tests/vm/lib.sh,
# a fake scripts/lab whose lab is a lab.env in a directory, and tests
# that pass, fail or skip with declared and undeclared reasons, whole or
# in part (sub_skip, sites_sub), opt out, claim another test ran them,
# lose their lab.env, and take down a side lab whose logs are clean or
# show a kernel WARNING or a sanitizer report; and tests that declare
# their link layers, whose cells run in one lab per link layer (the IB
# lab's `# first-in-lab` test first), with CNUAS_ONLY picking cells;
# and tests/soak's count of failures, retries and known upstream
# warnings over runs.
# Each run's summary and status are checked.
# Exit: 0 pass, anything else fail.
# timeout: 120
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

# The fake runs pick their own cells.
unset CNUAS_ONLY
mkdir -p "$T/tests/unit" "$T/tests/vm" "$T/scripts" "$T/lab"
cp "$top/tests/run" "$top/tests/soak" "$top/tests/lib-skip.sh" "$top/tests/skip-reasons" "$T/tests/"
cp "$top/tests/vm/lib.sh" "$T/tests/vm/"
# a claim that another test (a cell) ran it
echo "in-fake-lab by:vm/84-fabric[ib] runs in the lab of vm/84's IB cell" >>"$T/tests/skip-reasons"
# The fake lab's link layer is that of its `up` (--link-layer ib or eth);
# every `up` is logged in $T/ups.
cat >"$T/scripts/lab" <<EOS
#!/bin/bash
case \$1 in
dir) echo "\${CNUAS_LAB_DIR:-$T/lab}" ;;
up)
	ll=eth
	[[ " \$* " = *" --link-layer ib "* ]] && ll=ib
	echo "\$ll" >>"$T/ups"
	d=\${CNUAS_LAB_DIR:-$T/lab}
	mkdir -p "\$d"
	printf 'NODES=2 VIRTIO_NODES=0 RXE_NODES=1 LINK_LAYER=%s MTU=1500\n' "\$ll" >"\$d/lab.env" ;;
down) rm -f "\${CNUAS_LAB_DIR:-$T/lab}/lab.env"; echo "lab down" ;;
esac
EOS
chmod +x "$T/scripts/lab"
# The guest image bases tests/run builds beside the host groups.
cat >"$T/scripts/guest-image" <<EOS
#!/bin/bash
echo "\$*" >>"$T/bases"
EOS
chmod +x "$T/scripts/guest-image"
t() { # t GROUP/NAME BODY: a fake test
	printf '#!/bin/bash\n%s\n' "$2" >"$T/tests/$1.sh"
	chmod +x "$T/tests/$1.sh"
}
run() { # run GROUP...: tests/run on the fake tree; its output in $T/out
	(cd "$T" && env -u CNUAS_LAB_GROUP -u CNUAS_LAB_DIR -u CNUAS_MPI4 tests/run "$@") >"$T/out" 2>/dev/null
}
has() { grep -qF -- "$1" "$T/out" || fail "no line '$1' in: $(cat "$T/out")"; }

# 1. Declared skips, whole and in part, an opt-out, and a claim that holds.
# unit/10-pass spins until it has used 2 s of CPU (its utime in clock
# ticks, however loaded the host): its figure, where the host lets
# tests/run count CPU time, is at least 2 s and the most of the run.
t unit/10-pass 'hz=$(getconf CLK_TCK); st=(0 0 0 0 0 0 0 0 0 0 0 0 0 0)
while [ "${st[13]}" -lt $((2 * hz)) ]; do read -r -a st </proc/$$/stat; done'
t unit/20-skip 'echo "SKIP: no-cc: no C compiler"; exit 77'
t unit/30-part '. tests/lib-skip.sh; sub_skip "$CNUAS_TEST>target" no-rdma-core "no source"; exit 0'
t unit/40-optout '. tests/lib-skip.sh; skip_because opt-out "CNUAS_X=0"'
t vm/10-pass 'exit 0'
t vm/84-fabric '# link-layers: ib
exit ${FAKE_84_RC:-0}'
t vm/85-in-84 '# link-layers: ib
. tests/lib-skip.sh; skip_because in-fake-lab "84 runs it"'
t vm/child-skip 'echo "SKIP: no-nftables: no nft"; exit 77'
# side_lab_down reads the side lab's logs (a fake one: nothing paused)
side='. tests/vm/lib.sh; SIDE_DIR=$LAB_DIR-side SIDE_GROUP=$LAB_DIR SIDE_PAUSED=(); mkdir -p "$SIDE_DIR"
echo "[ 1.0] cnuas: up" >"$SIDE_DIR/node0.console.log"; : >"$SIDE_DIR/switch.log"; trap side_lab_down EXIT'
t vm/80-side-clean "$side"
t vm/87-sites '. tests/vm/lib.sh; mkdir -p "$(dirname "$PR_DIR")"; sites_sub "two sites" child-skip; echo ok'
run unit vm
rc=$?
[ $rc = 0 ] || fail "declared skips: tests/run exited $rc"
has "PASS unit/30-part"
has "SKIP unit/20-skip: no-cc: no C compiler"
has "OPT-OUT unit/40-optout: CNUAS_X=0"
has "SKIP vm/85-in-84[ib]: in-fake-lab: 84 runs it"
has "  unit/30-part>target: no-rdma-core: no source"
has "  vm/87-sites>child-skip across the two sites: no-nftables: no nft"
has "  unit/40-optout: CNUAS_X=0"
has "PASS vm/84-fabric[ib]"
has "6 passed, 0 failed, 2 skipped (2 parts of tests skipped), 1 opted out"
grep -q '^group times: unit [0-9]*s vm [0-9]*s (eth [0-9]*s, ib [0-9]*s) (wall [0-9]*s)$' "$T/out" || fail "no group times: $(cat "$T/out")"
[ "$(cat "$T/bases")" = "--distro bookworm --kdir" ] || fail "guest image bases built beside unit: $(cat "$T/bases")"
# Root with a cgroup fs (v2, or v1's cpuacct) must get the CPU figures.
if [ "$(id -u)" = 0 ] && { [ -f /sys/fs/cgroup/cgroup.controllers ] || [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; }; then
	grep -q '^cpu time: background [0-9]*s lane1 [0-9]*s lane2 [0-9]*s ' "$T/out" || fail "no CPU time per lane: $(cat "$T/out")"
	grep -qE '^PASS unit/10-pass \([0-9]+s, cpu ([2-9]|[1-9][0-9]+)s\)$' "$T/out" || fail "no CPU time of unit/10-pass: $(cat "$T/out")"
	grep -qE '^most cpu: unit/10-pass ([2-9]|[1-9][0-9]+)s' "$T/out" || fail "unit/10-pass not the most CPU: $(cat "$T/out")"
else
	. "$top/tests/lib-skip.sh"
	sub_skip "${CNUAS_TEST:-unit/21-run-accounting}>cpu-times" no-cgroup "not root, or no cgroup fs: tests/run's CPU times not checked"
fi

# 2. Undeclared skips, whole and in part, a claim that does not hold, and
# a lab.env gone in the middle of the group: all failures.
rm "$T"/tests/unit/*.sh
t unit/10-untagged 'echo "SKIP: needs two cnuas nodes"; exit 77'
t unit/20-unknown-tag 'echo "SKIP: lab-shape: needs two cnuas nodes"; exit 77'
t unit/30-no-line 'exit 77'
t unit/40-part '. tests/lib-skip.sh; sub_skip "$CNUAS_TEST>t" no-such-tag "why"; exit 0'
t vm/child-skip 'echo "SKIP: the guest image has no foo"; exit 77'
t vm/81-side-warn "$side"'; echo "[ 2.0] WARNING: CPU: 0 PID: 1 at x.c:1" >>"$SIDE_DIR/node0.console.log"'
t vm/82-side-asan "$side"'; echo "==1==ERROR: AddressSanitizer: heap-use-after-free" >>"$SIDE_DIR/switch.log"'
t vm/99-lab-gone 'rm "$(scripts/lab dir)/lab.env"; . tests/vm/lib.sh; exit 0'
FAKE_84_RC=1 run unit vm
rc=$?
[ $rc = 1 ] || fail "undeclared skips: tests/run exited $rc"
has "FAIL unit/10-untagged ("
has "skip of unit/10-untagged with undeclared reason 'none'"
has "FAIL unit/20-unknown-tag ("
has "skip of unit/20-unknown-tag with undeclared reason 'lab-shape'"
has "FAIL unit/30-no-line"
has "FAIL unit/40-part ("
has "skip of unit/40-part>t with undeclared reason 'no-such-tag'"
has "FAIL vm/84-fabric[ib]"
has "FAIL vm/85-in-84[ib] ("
has "skip of vm/85-in-84[ib] claims vm/84-fabric[ib] runs it"
has "FAIL vm/87-sites"
has "FAIL vm/99-lab-gone"
grep -q "FAIL: no lab.env in $T/lab" "$T/build/test-logs/vm_99-lab-gone.log" ||
	fail "vm/99-lab-gone: $(cat "$T/build/test-logs/vm_99-lab-gone.log")"
has "FAIL vm/81-side-warn"
has "FAIL vm/82-side-asan"
grep -q "WARNING: CPU: 0" "$T/build/test-logs/vm_81-side-warn.log" || fail "vm/81-side-warn: no WARNING line shown"
has "2 passed, 10 failed, 0 skipped"

# 3. Link layers: a test runs once on each link layer it declares (none:
# eth), in one lab per link layer; an IB cell sees the IB lab and
# CNUAS_VERBS_OVER_IB=1, the Ethernet one neither; the IB lab's
# `# first-in-lab` test runs first there; a failing cell fails alone.
rm -f "$T"/tests/unit/*.sh "$T"/tests/vm/[0-9]*.sh "$T/ups" "$T/bases"
seen='. tests/vm/lib.sh; echo "$CNUAS_TEST $LINK_LAYER ${CNUAS_VERBS_OVER_IB:-none}" >>'"$T/seen"
t vm/10-eth "$seen"
t vm/46-both "# link-layers: eth ib
$seen"
t vm/57-both-ib-fails "# link-layers: eth ib
$seen"'; [ "$LINK_LAYER" = eth ]'
t vm/84-fabric "# prose that wraps onto a header's words (\`#
# link-layers: eth ib\` in 46, 47) is not the header:
# link-layers: ib
# first-in-lab
$seen"
t vm/88-ib "# link-layers: ib
$seen"
run vm
rc=$?
[ $rc = 1 ] || fail "link layers: tests/run exited $rc"
printf '%s\n' 'vm/10-eth eth none' 'vm/46-both eth none' 'vm/57-both-ib-fails eth none' \
	'vm/84-fabric[ib] ib 1' 'vm/46-both[ib] ib 1' 'vm/57-both-ib-fails[ib] ib 1' 'vm/88-ib[ib] ib 1' >"$T/want"
# The two labs run side by side (two lanes): the order within each lab.
for ll in eth ib; do
	[ "$(grep " $ll " "$T/want")" = "$(grep " $ll " "$T/seen")" ] ||
		fail "link layers: the cells ran as $(cat "$T/seen"), want $(cat "$T/want")"
done
[ "$(cat "$T/ups")" = "$(printf 'eth\nib')" ] || fail "link layers: labs up: $(cat "$T/ups"), want eth then ib"
has "PASS vm/46-both[ib]"
has "FAIL vm/57-both-ib-fails[ib]"
has "PASS vm/57-both-ib-fails ("
has "6 passed, 1 failed, 0 skipped"
[ -f "$T/build/test-logs/vm_46-both.ib.log" ] || fail "no log of the cell vm/46-both[ib]"
[ ! -e "$T/bases" ] || fail "guest image bases built with no host group first: $(cat "$T/bases")"
# CNUAS_ONLY: only the IB cells, so no Ethernet lab.
rm -f "$T/ups" "$T/seen"
(cd "$T" && env -u CNUAS_LAB_GROUP -u CNUAS_LAB_DIR CNUAS_ONLY='46.*\[ib\]' tests/run vm) >"$T/out" 2>/dev/null ||
	fail "CNUAS_ONLY: tests/run failed: $(cat "$T/out")"
[ "$(cat "$T/seen")" = "vm/46-both[ib] ib 1" ] || fail "CNUAS_ONLY: ran $(cat "$T/seen")"
[ "$(cat "$T/ups")" = ib ] || fail "CNUAS_ONLY: labs up: $(cat "$T/ups"), want ib alone"

# 4. Two lanes: the IB lab boots once the Ethernet lab is up, in a folder
# of its own, and its cells run while the Ethernet lab's do (each of the
# two tests waits for the other's mark); CNUAS_LANES=1 runs them one after
# the other (the Ethernet test then waits in vain and fails).
rm -f "$T"/tests/unit/*.sh "$T"/tests/vm/[0-9]*.sh "$T/ups" "$T"/mark.*
t vm/10-eth '. tests/vm/lib.sh; echo "$LAB_DIR" >'"$T"'/mark.eth
for i in $(seq 100); do [ -e '"$T"'/mark.ib ] && exit 0; sleep 0.1; done; exit 1'
t vm/20-ib '# link-layers: ib
. tests/vm/lib.sh; echo "$LAB_DIR" >'"$T"'/mark.ib
for i in $(seq 100); do [ -e '"$T"'/mark.eth ] && exit 0; sleep 0.1; done; exit 1'
# pkg goes after the Ethernet lab in its lane, whatever order the groups
# are given in (it would build beside the labs' first builds otherwise).
mkdir -p "$T/tests/pkg" "$T/tests/guest"
t pkg/10-after-lab 'grep -q eth '"$T"'/ups'
# The guest group's images (Debian 13's among them) are built in the
# background once the Ethernet lab is up, before the guest group's lab.
rm -f "$T/bases"
t guest/10-image-first 'grep -qx -- "--distro trixie" '"$T"'/bases'
run pkg vm guest || fail "two lanes: tests/run failed: $(cat "$T/out")"
rm -rf "$T/tests/pkg" "$T/tests/guest"
[ "$(cat "$T/ups")" = "$(printf 'eth\nib\neth')" ] || fail "two lanes: labs up: $(cat "$T/ups"), want eth, ib, then the guest lab"
grep -qx -- "--distro trixie" "$T/bases" || fail "two lanes: guest images built: $(cat "$T/bases"), want the trixie one"
[ "$(cat "$T/mark.eth")" = "$T/lab" ] || fail "two lanes: the Ethernet lab in $(cat "$T/mark.eth")"
[ "$(cat "$T/mark.ib")" = "$T/lab.vm-ib" ] || fail "two lanes: the IB lab in $(cat "$T/mark.ib"), want $T/lab.vm-ib"
rm -f "$T"/mark.*
(cd "$T" && env -u CNUAS_LAB_GROUP -u CNUAS_LAB_DIR CNUAS_LANES=1 tests/run vm) >"$T/out" 2>/dev/null &&
	fail "one lane: the two labs still ran at once"
has "FAIL vm/10-eth"

# 5. An opt-out switch in the environment is listed.
rm -f "$T"/tests/unit/*.sh "$T"/tests/vm/[0-9]*.sh
t unit/10-pass 'exit 0'
(cd "$T" && env -u CNUAS_LAB_DIR CNUAS_FOO=0 tests/run unit) >"$T/out" 2>/dev/null || fail "opt-out switch: tests/run failed"
has "opt-out switches set: CNUAS_FOO=0"

# 6. tests/soak: a test that fails in the second of two runs, a cell
# that retries in both, one that lets a known upstream kernel warning
# pass in the first, one that passes: each failure, RETRY and KNOWN
# line counted.
rm -f "$T"/tests/unit/*.sh "$T"/tests/vm/[0-9]*.sh "$T/count" "$T/count4"
t vm/10-pass 'exit 0'
t vm/20-flaky 'echo x >>'"$T/count"'; [ "$(wc -l <'"$T/count"')" = 1 ]'
t vm/30-retry '# link-layers: ib
echo "# case: RETRY 1 for upstream bug X"; exit 0'
t vm/40-known 'echo x >>'"$T/count4"'; [ "$(wc -l <'"$T/count4"')" = 1 ] &&
echo "KNOWN upstream kernel warning some-bug /tmp/node1.console.log:9"; exit 0'
(cd "$T" && env -u CNUAS_LAB_GROUP -u CNUAS_LAB_DIR tests/soak 2 vm) >"$T/out" 2>/dev/null &&
	fail "soak: exit 0 with a failure in run 2"
has "vm/20-flaky                              failed 1/2  retries 0  known 0  (runs: 2)"
has "vm/30-retry[ib]                          failed 0/2  retries 2  known 0  (runs: 1 2)"
has "vm/40-known                              failed 0/2  retries 0  known 1  (runs: 1)"
grep -q "vm/10-pass" "$T/out" && fail "soak: lists a test that passed without retries"
[ -f "$T/build/soak/run2-logs/vm_20-flaky.log" ] || fail "soak: no logs of run 2"

[ $bad = 0 ] && echo "PASS: tests/run accounts for every skip"
exit $bad
