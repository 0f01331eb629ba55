// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Unit test of the MAC learning table against a trivial reference model:
 * random learn/lookup/delete-port/age operations must agree.
 */
#include "fdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NMAC 3000

static struct fdb t;
static struct {
	int port;	/* -1 = absent */
	uint32_t seen;
} ref[NMAC];

static uint64_t mac_key(unsigned i)
{
	uint8_t m[6] = { 0x02, 0, (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, 0x5a };

	return fdb_key(m);
}

static int fails;
#define CHECK(c, ...)                                                                              \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			fprintf(stderr, "check failed: " __VA_ARGS__);                              \
			fprintf(stderr, "\n");                                                     \
			if (++fails > 10)                                                          \
				exit(1);                                                           \
		}                                                                                  \
	} while (0)

int main(void)
{
	uint32_t now = 1000;
	unsigned aging = 30, n = 0;

	fdb_init(&t, aging);
	for (unsigned i = 0; i < NMAC; i++)
		ref[i].port = -1;
	srand(7);
	for (unsigned step = 0; step < 200000; step++) {
		unsigned i = (unsigned)rand() % NMAC;
		int op = rand() % 100;

		if (op < 50) {
			int port = rand() % 8;

			if (fdb_learn(&t, mac_key(i), (uint32_t)port, now) == 0) {
				if (ref[i].port < 0 || now - ref[i].seen > aging)
					n++;
				ref[i].port = port;
				ref[i].seen = now;
			}
		} else if (op < 95) {
			int want = ref[i].port >= 0 && now - ref[i].seen <= aging ? ref[i].port : -1;
			int got = fdb_lookup(&t, mac_key(i), now);

			CHECK(got == want, "step %u mac %u: lookup %d, want %d", step, i, got, want);
			if (want < 0)
				ref[i].port = -1;
		} else if (op < 97) {
			int port = rand() % 8;

			fdb_del_port(&t, (uint32_t)port);
			for (unsigned j = 0; j < NMAC; j++)
				if (ref[j].port == port)
					ref[j].port = -1;
		} else if (op < 99) {
			now += (unsigned)rand() % 5;
		} else {
			fdb_age(&t, now);
			for (unsigned j = 0; j < NMAC; j++)
				if (ref[j].port >= 0 && now - ref[j].seen > aging)
					ref[j].port = -1;
		}
	}
	/* the table never holds more than FDB_MAX entries */
	CHECK(t.n <= FDB_MAX, "n %u > max", t.n);
	(void)n;
	/* full table refuses new entries but keeps existing ones */
	fdb_init(&t, 0);
	for (unsigned i = 0; i < FDB_MAX; i++)
		CHECK(fdb_learn(&t, mac_key(i), 1, 0) == 0, "learn %u", i);
	CHECK(fdb_learn(&t, mac_key(FDB_MAX + 1), 1, 0) < 0, "table over capacity accepted");
	CHECK(fdb_lookup(&t, mac_key(5), 123456) == 1, "no aging when aging_s = 0");
	fdb_del_port(&t, 1);
	CHECK(t.n == 0, "del_port left %u entries", t.n);
	char s[18];

	fdb_mac_str(mac_key(0x010203), s);
	CHECK(!strcmp(s, "02:00:01:02:03:5a"), "mac string %s", s);
	if (fails)
		return 1;
	printf("fdb: ok\n");
	return 0;
}
