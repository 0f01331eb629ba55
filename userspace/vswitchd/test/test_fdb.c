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

static const struct fdb_policy open_pol = { .pin = false, .limit = 0 };

/* Pinned MACs neither move nor age; a port learns at most its limit. */
static void port_security(void)
{
	const struct fdb_policy sec = { .pin = true, .limit = 2 };

	fdb_init(&t, 10);
	CHECK(fdb_learn(&t, mac_key(1), 1, 100, &sec) == FDB_LEARNED, "pin first MAC");
	CHECK(fdb_learn(&t, mac_key(2), 1, 100, &sec) == FDB_LEARNED, "pin second MAC");
	CHECK(fdb_learn(&t, mac_key(3), 1, 100, &sec) == FDB_LIMIT, "third MAC over limit");
	CHECK(fdb_learn(&t, mac_key(1), 1, 101, &sec) == FDB_LEARNED, "refresh at limit");
	CHECK(fdb_learn(&t, mac_key(1), 2, 101, &open_pol) == FDB_SPOOF, "pinned MAC moved");
	CHECK(fdb_learn(&t, mac_key(1), 2, 101, &sec) == FDB_SPOOF, "pinned MAC moved");
	CHECK(fdb_lookup(&t, mac_key(1), 101) == 1, "spoof changed the entry");
	fdb_age(&t, 500);
	CHECK(fdb_lookup(&t, mac_key(2), 500) == 1, "pinned MAC aged out");
	CHECK(t.port_n[1] == 2 && t.port_n[2] == 0, "counts %u %u", t.port_n[1], t.port_n[2]);
	/* an open port's MAC moves to a secured port while it has room */
	CHECK(fdb_learn(&t, mac_key(9), 3, 500, &open_pol) == FDB_LEARNED, "open learn");
	CHECK(fdb_learn(&t, mac_key(9), 1, 500, &sec) == FDB_LIMIT, "move past limit");
	CHECK(fdb_learn(&t, mac_key(9), 4, 500, &sec) == FDB_LEARNED, "move to secured port");
	CHECK(t.port_n[3] == 0 && t.port_n[4] == 1, "move counts %u %u", t.port_n[3], t.port_n[4]);
	/* unpinned entries age and move again */
	fdb_unpin_port(&t, 1);
	CHECK(fdb_learn(&t, mac_key(1), 2, 501, &open_pol) == FDB_LEARNED, "unpinned MAC stuck");
	fdb_age(&t, 1000);
	CHECK(fdb_lookup(&t, mac_key(2), 1000) == -1, "unpinned MAC did not age");
	/* removing the port frees its pinned MACs for the next port */
	fdb_del_port(&t, 4);
	CHECK(fdb_learn(&t, mac_key(9), 5, 1000, &sec) == FDB_LEARNED, "MAC of a removed port");
	/* a closing port learns nothing; another port's pinned MAC stays a spoof */
	fdb_del_port(&t, 5);
	CHECK(fdb_check_closing(&t, mac_key(9), 5) == FDB_UNLEARNED, "closing port, free MAC");
	CHECK(fdb_lookup(&t, mac_key(9), 1000) == -1, "closing port learned");
	CHECK(fdb_learn(&t, mac_key(9), 6, 1000, &sec) == FDB_LEARNED, "MAC moves at once");
	CHECK(fdb_check_closing(&t, mac_key(9), 5) == FDB_SPOOF, "closing port took a pin");
	CHECK(fdb_lookup(&t, mac_key(9), 1000) == 6, "pinned MAC moved back");
}

/* A claim (an assigned MAC) pins the MAC to its port, from wherever it was. */
static void claim(void)
{
	const struct fdb_policy pin = { .pin = true, .limit = 4 };

	fdb_init(&t, 10);
	CHECK(fdb_claim(&t, mac_key(1), 3, 0) == FDB_LEARNED, "claim of a new MAC");
	CHECK(fdb_learn(&t, mac_key(1), 4, 1, &pin) == FDB_SPOOF, "claimed MAC moved");
	CHECK(fdb_learn(&t, mac_key(2), 4, 1, &pin) == FDB_LEARNED, "learn");
	CHECK(fdb_claim(&t, mac_key(2), 3, 2) == FDB_LEARNED, "claim of a pinned MAC");
	CHECK(fdb_lookup(&t, mac_key(2), 100) == 3, "claimed MAC aged or not moved");
	CHECK(t.port_n[3] == 2 && t.port_n[4] == 0 && t.n == 2, "counts %u %u %u", t.port_n[3],
	      t.port_n[4], t.n);
	CHECK(fdb_check_closing(&t, mac_key(1), 4) == FDB_SPOOF, "closing port took a claim");
	fdb_del_port(&t, 3);
	CHECK(t.n == 0 && t.port_n[3] == 0, "del_port left %u", t.n);
}

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

			if (fdb_learn(&t, mac_key(i), (uint32_t)port, now, &open_pol) == FDB_LEARNED) {
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
			unsigned per_port[8] = { 0 };

			fdb_age(&t, now);
			for (unsigned j = 0; j < NMAC; j++) {
				if (ref[j].port >= 0 && now - ref[j].seen > aging)
					ref[j].port = -1;
				if (ref[j].port >= 0)
					per_port[ref[j].port]++;
			}
			/* after aging, the per-port counts are exact */
			for (unsigned p = 0; p < 8; p++)
				CHECK(t.port_n[p] == per_port[p], "step %u port %u: %u entries, want %u",
				      step, p, t.port_n[p], per_port[p]);
		}
	}
	/* the table never holds more than FDB_MAX entries */
	CHECK(t.n <= FDB_MAX, "n %u > max", t.n);
	(void)n;
	/* full table refuses new entries but keeps existing ones */
	fdb_init(&t, 0);
	for (unsigned i = 0; i < FDB_MAX; i++)
		CHECK(fdb_learn(&t, mac_key(i), 1, 0, &open_pol) == FDB_LEARNED, "learn %u", i);
	CHECK(fdb_learn(&t, mac_key(FDB_MAX + 1), 1, 0, &open_pol) == FDB_FULL,
	      "table over capacity accepted");
	CHECK(fdb_lookup(&t, mac_key(5), 123456) == 1, "no aging when aging_s = 0");
	fdb_del_port(&t, 1);
	CHECK(t.n == 0 && t.port_n[1] == 0, "del_port left %u entries", t.n);
	port_security();
	claim();
	char s[18];

	fdb_mac_str(mac_key(0x010203), s);
	CHECK(!strcmp(s, "02:00:01:02:03:5a"), "mac string %s", s);
	if (fails)
		return 1;
	printf("fdb: ok\n");
	return 0;
}
