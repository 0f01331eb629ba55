// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * CPU time per frame of each part of the path, from the kernel's
 * per-thread run time (/proc/PID/task/TID/schedstat, nanoseconds): the
 * cost model's figures, which other load on the host does not skew as it
 * skews frames/s.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostpath.h"

static uint64_t thread_ns(int pid, int tid, char *comm, size_t len)
{
	char path[96], buf[64];
	unsigned long long ns = 0;
	FILE *f;

	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(comm, (int)len, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			ns = strtoull(buf, NULL, 10);
		fclose(f);
	}
	return ns;
}

/* Run time of pid's threads: the device's RX thread, and the rest. */
static void process_ns(int pid, uint64_t *rx_thread, uint64_t *rest)
{
	char path[64], comm[32];
	struct dirent *e;
	uint64_t ns;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		ns = thread_ns(pid, atoi(e->d_name), comm, sizeof(comm));
		if (!strncmp(comm, "cnuas-vnic-rx", 13))
			*rx_thread += ns;
		else
			*rest += ns;
	}
	closedir(d);
}

void cpu_sample(const struct vnic *v, unsigned int pairs, int switch_pid,
		struct cpu_cost *c)
{
	uint64_t unused = 0;
	unsigned int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < pairs; i++) {
		process_ns(v[2 * i].qp.pid, &c->ns[CPU_TX_OTHER], &c->ns[CPU_TX_MAIN]);
		process_ns(v[2 * i + 1].qp.pid, &c->ns[CPU_RX_THREAD], &c->ns[CPU_RX_OTHER]);
	}
	if (switch_pid > 0)
		process_ns(switch_pid, &unused, &c->ns[CPU_SWITCH]);
	process_ns(getpid(), &unused, &c->ns[CPU_HARNESS]);
}

const char *const cpu_part_name[CPU_PARTS] = {
	[CPU_TX_MAIN] = "tx_main", [CPU_TX_OTHER] = "tx_rxthr",
	[CPU_SWITCH] = "switch", [CPU_RX_THREAD] = "rx_thread",
	[CPU_RX_OTHER] = "rx_main", [CPU_HARNESS] = "harness",
};
