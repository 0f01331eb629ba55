# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# Cnuas top-level build. `make check` and `make demo` install their own
# Debian dependencies (as root) first; see scripts/deps.

# Kernel headers to build the modules against: the running kernel's if
# it has them, else Debian 12's (what the lab's guests run).
KDIR ?= $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
		    $(lastword $(sort $(wildcard /lib/modules/6.1.*-amd64/build))))

.PHONY: all userspace modules provider qemu package-qemu debs image check check-unit check-pkg check-libvirt \
	check-vm check-guest soak demo bench bench-host deps fuzz clean

all: userspace modules

userspace:
	$(MAKE) -C userspace

modules:
	$(MAKE) -C src KDIR=$(KDIR)

# libibverbs provider, standalone: build/provider/libcnuas.so,
# libcnuas-rdmav34.so (a link to it) + cnuas.driver (fetches and configures
# rdma-core's source once, see scripts/fetch-rdma-core). In rdma-core's own
# tree: scripts/build-provider --in-tree OUT.
provider:
	scripts/build-provider

qemu:
	scripts/build-qemu

# Debian packages of the distro's QEMU with qemu-patches/ (qemu-system-x86
# +cnuas1): ~/.cache/cnuas/qemu-pkg/<key>/out/. Long; not part of `make check`.
package-qemu:
	scripts/package-qemu

debs:
	scripts/build-debs

deps:
	scripts/deps build

# Full test suite: host unit tests, packaging tests, VM tests.
check:
	scripts/deps check
	tests/run unit pkg vm guest libvirt

# Quicker targets for the inner loop.
check-unit:
	tests/run unit
check-pkg:
	tests/run pkg
check-vm:
	tests/run vm
check-guest:
	tests/run guest
check-libvirt:
	tests/run libvirt

# The vm group N times (default 3): each test's failed runs, RETRY lines
# and known upstream kernel warnings (tests/soak; CNUAS_ONLY picks
# tests). `make soak N=10`.
N ?= 3
soak:
	tests/soak $(N) vm

# libFuzzer targets (tests/fuzz/), FUZZ_SECONDS each (default 60), then
# QEMU's generic-fuzz on the device models and our cnuas-vmstate on their
# migration load (tests/fuzz/qemu/*.env),
# QEMU_FUZZ_SECONDS each (default FUZZ_SECONDS; the first run builds
# qemu-fuzz-x86_64, scripts/build-qemu-fuzz); tests/fuzz/corpus/ is
# re-minimized with the new inputs; crashes land in build/fuzz/crashes/.
FUZZ_SECONDS ?= 60
QEMU_FUZZ_SECONDS ?= $(FUZZ_SECONDS)
fuzz:
	$(MAKE) -C tests/fuzz run FUZZ_SECONDS=$(FUZZ_SECONDS)
	$(MAKE) -C tests/fuzz qemu QEMU_FUZZ_SECONDS=$(QEMU_FUZZ_SECONDS)

demo:
	scripts/deps demo
	scripts/demo

bench:
	scripts/deps bench
	$(MAKE) -C userspace bench
	scripts/bench-tcp
	scripts/bench-rdma
	scripts/bench-host

# The host path alone: no guest, no lab, about a minute.
bench-host:
	scripts/bench-host

clean:
	$(MAKE) -C userspace clean
	$(MAKE) -C src KDIR=$(KDIR) clean
	rm -rf build
