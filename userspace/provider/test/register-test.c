// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Load a provider into a given libibverbs the way libibverbs does
 * (dlopen, RTLD_NOW) and see its constructor register it. A provider
 * built in rdma-core's tree exports nothing, so the registration itself
 * is what shows: this program defines verbs_register_driver_<PABI> with
 * libibverbs' symbol version, IBVERBS_PRIVATE_<PABI> (a version script
 * at link time), and, as the executable, comes first in the lookup, so
 * the provider's call lands here.
 *
 * Usage: register-test LIBIBVERBS.so.1 PROVIDER.so EXPECTED_ABI
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

#define REGISTER_FN_(abi) verbs_register_driver_##abi
#define REGISTER_FN(abi) REGISTER_FN_(abi)

static const struct ops_head *registered;
static int calls;

void REGISTER_FN(PABI)(const struct ops_head *ops);
void REGISTER_FN(PABI)(const struct ops_head *ops)
{
	registered = ops;
	calls++;
}

int main(int argc, char **argv)
{
	unsigned long abi;
	void *verbs;

	if (argc != 4) {
		fprintf(stderr, "usage: %s LIBIBVERBS.so.1 PROVIDER.so EXPECTED_ABI\n",
			argv[0]);
		return 2;
	}
	abi = strtoul(argv[3], NULL, 0);
	verbs = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
	if (!verbs) {
		fprintf(stderr, "register-test: %s\n", dlerror());
		return 1;
	}
	if (!dlopen(argv[2], RTLD_NOW | RTLD_LOCAL)) {
		fprintf(stderr, "register-test: %s\n", dlerror());
		return 1;
	}
	if (calls != 1 || !registered) {
		fprintf(stderr, "register-test: %d registrations by the provider\n",
			calls);
		return 1;
	}
	printf("register-test: provider '%s' registered, kernel ABI %u..%u\n",
	       registered->name, registered->match_min_abi_version,
	       registered->match_max_abi_version);
	if (strcmp(registered->name, "cnuas") ||
	    registered->match_min_abi_version != abi ||
	    registered->match_max_abi_version != abi) {
		fprintf(stderr, "register-test: unexpected name or ABI range\n");
		return 1;
	}
	return 0;
}
