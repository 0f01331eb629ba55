// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-mpi-check: a small MPI program that moves data between ranks and
 * checks every byte it receives.
 *
 *   ping-pong  rank 0 <-> rank 1, messages of 1 B .. 4 MiB (eager and
 *              rendezvous), each payload a pattern of (size, iteration,
 *              sender) checked at both ends; prints latency and bandwidth
 *   allreduce  MPI_SUM over 1 .. 1 Mi doubles whose sum is known exactly
 *   alltoall   every rank sends a distinct block to every other rank
 *
 *   cnuas-mpi-check [-i ITERS] [-m MAX_BYTES]
 *
 * Exit status 0 when every check held on every rank; the last line of
 * rank 0 is "cnuas-mpi-check: OK ..." or "cnuas-mpi-check: FAILED ...".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, nranks;
static long errors;

static uint8_t pattern(size_t i, unsigned int seed)
{
	uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;

	return (uint8_t)(x >> 13 ^ x);
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(i, seed);
}

/* Counts (and reports the first few) bytes that differ from the pattern. */
static long check(const char *what, const uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;
	long bad = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] == pattern(i, seed))
			continue;
		if (bad < 3)
			fprintf(stderr, "rank %d: %s: byte %zu of %zu is 0x%02x, want 0x%02x\n",
				rank, what, i, len, buf[i], pattern(i, seed));
		bad++;
	}
	return bad;
}

static void pingpong(int iters, size_t max)
{
	uint8_t *buf = malloc(max ? max : 1);
	size_t len;
	int it;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0)
		printf("%-10s %10s %8s %12s %12s\n", "pingpong", "bytes", "iters", "usec/rt/2", "MB/s");
	for (len = 1; len <= max; len *= 4) {
		int n = len >= (1 << 20) ? (iters + 3) / 4 : iters;
		double t0 = 0, dt;

		MPI_Barrier(MPI_COMM_WORLD);
		if (rank > 1)
			continue;
		t0 = MPI_Wtime();
		for (it = 0; it < n; it++) {
			unsigned int seed = (unsigned int)(len * 131 + it * 2);

			if (rank == 0) {
				fill(buf, len, seed);
				MPI_Send(buf, (int)len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				errors += check("pong", buf, len, seed + 1);
			} else {
				memset(buf, 0, len);
				MPI_Recv(buf, (int)len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				errors += check("ping", buf, len, seed);
				fill(buf, len, seed + 1);
				MPI_Send(buf, (int)len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
			}
		}
		dt = MPI_Wtime() - t0;
		if (rank == 0)
			printf("%-10s %10zu %8d %12.1f %12.2f\n", "pingpong", len, n,
			       dt * 1e6 / n / 2, 2.0 * len * n / dt / 1e6);
	}
	free(buf);
}

static void allreduce(int iters, size_t max)
{
	size_t count, i, maxcount = max / sizeof(double);
	double *in = malloc((maxcount ? maxcount : 1) * sizeof(double));
	double *out = malloc((maxcount ? maxcount : 1) * sizeof(double));
	int it;

	if (!in || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0)
		printf("%-10s %10s %8s %12s\n", "allreduce", "doubles", "iters", "usec");
	for (count = 1; count <= maxcount; count *= 16) {
		int n = count >= (1 << 16) ? (iters + 3) / 4 : iters;
		double t0, dt;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (it = 0; it < n; it++) {
			/* Small integers: every partial sum is exact in a double. */
			for (i = 0; i < count; i++)
				in[i] = (double)((rank + 1) * ((i + it) % 1000));
			MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			for (i = 0; i < count; i++) {
				double want = (double)nranks * (nranks + 1) / 2 * ((i + it) % 1000);

				if (out[i] == want)
					continue;
				if (errors < 3)
					fprintf(stderr, "rank %d: allreduce: element %zu of %zu is %g, want %g\n",
						rank, i, count, out[i], want);
				errors++;
			}
		}
		dt = MPI_Wtime() - t0;
		if (rank == 0)
			printf("%-10s %10zu %8d %12.1f\n", "allreduce", count, n, dt * 1e6 / n);
	}
	free(in);
	free(out);
}

static void alltoall(int iters, size_t max)
{
	size_t block, total;
	uint8_t *sbuf, *rbuf;
	int it, p;

	total = max;
	sbuf = malloc(total ? total : 1);
	rbuf = malloc(total ? total : 1);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (rank == 0)
		printf("%-10s %10s %8s %12s\n", "alltoall", "bytes/peer", "iters", "usec");
	for (block = 1; block * nranks <= total; block *= 8) {
		int n = block >= (1 << 16) ? (iters + 3) / 4 : iters;
		double t0, dt;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (it = 0; it < n; it++) {
			/* Block p of rank r carries the pattern seeded by (r, p, it). */
			for (p = 0; p < nranks; p++)
				fill(sbuf + p * block, block, (unsigned int)(rank * 1000 + p * 10 + it) * 7919u);
			memset(rbuf, 0, block * nranks);
			MPI_Alltoall(sbuf, (int)block, MPI_BYTE, rbuf, (int)block, MPI_BYTE, MPI_COMM_WORLD);
			for (p = 0; p < nranks; p++)
				errors += check("alltoall", rbuf + p * block, block,
						(unsigned int)(p * 1000 + rank * 10 + it) * 7919u);
		}
		dt = MPI_Wtime() - t0;
		if (rank == 0)
			printf("%-10s %10zu %8d %12.1f\n", "alltoall", block, n, dt * 1e6 / n);
	}
	free(sbuf);
	free(rbuf);
}

int main(int argc, char **argv)
{
	int iters = 20, opt, namelen;
	size_t max = 4 << 20;
	long total_errors = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((opt = getopt(argc, argv, "i:m:")) != -1) {
		switch (opt) {
		case 'i':
			iters = atoi(optarg);
			break;
		case 'm':
			max = strtoul(optarg, NULL, 0);
			break;
		default:
			if (rank == 0)
				fprintf(stderr, "usage: %s [-i ITERS] [-m MAX_BYTES]\n", argv[0]);
			MPI_Finalize();
			return 2;
		}
	}
	if (iters < 1)
		iters = 1;
	if (nranks < 2) {
		if (rank == 0)
			fprintf(stderr, "cnuas-mpi-check: needs at least 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	MPI_Get_processor_name(name, &namelen);
	printf("rank %d of %d on %s\n", rank, nranks, name);
	fflush(stdout);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	pingpong(iters, max);
	allreduce(iters, max);
	alltoall(iters, max);
	MPI_Reduce(&errors, &total_errors, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		if (total_errors)
			printf("cnuas-mpi-check: FAILED: %ld bad bytes or elements over %d ranks\n",
			       total_errors, nranks);
		else
			printf("cnuas-mpi-check: OK: %d ranks, pingpong, allreduce, alltoall checked in %.1f s\n",
			       nranks, MPI_Wtime() - t0);
	}
	fflush(stdout);
	MPI_Bcast(&total_errors, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return total_errors ? 1 : 0;
}
