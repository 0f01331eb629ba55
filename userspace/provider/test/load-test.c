// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Load the built provider into the system's libibverbs the way
 * libibverbs does (dlopen, RTLD_NOW): every symbol it needs must resolve
 * and its constructor must register it. Prints the provider's name and
 * ABI range from its exported verbs_device_ops.
 *
 * Usage: load-test PROVIDER.so EXPECTED_ABI
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The leading fields of struct verbs_device_ops (infiniband/driver.h). */
struct ops_head {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
};

int main(int argc, char **argv)
{
	const struct ops_head *ops;
	void *verbs, *prov;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PROVIDER.so EXPECTED_ABI\n", argv[0]);
		return 2;
	}
	verbs = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!verbs) {
		fprintf(stderr, "load-test: %s\n", dlerror());
		return 1;
	}
	prov = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!prov) {
		fprintf(stderr, "load-test: %s\n", dlerror());
		return 1;
	}
	ops = dlsym(prov, "verbs_provider_cnuas");
	if (!ops) {
		fprintf(stderr, "load-test: no verbs_provider_cnuas: %s\n",
			dlerror());
		return 1;
	}
	printf("load-test: provider '%s', kernel ABI %u..%u\n", ops->name,
	       ops->match_min_abi_version, ops->match_max_abi_version);
	if (strcmp(ops->name, "cnuas") ||
	    ops->match_min_abi_version != strtoul(argv[2], NULL, 0) ||
	    ops->match_max_abi_version != strtoul(argv[2], NULL, 0)) {
		fprintf(stderr, "load-test: unexpected name or ABI range\n");
		return 1;
	}
	return 0;
}
