// SPDX-License-Identifier: GPL-2.0
/*
 * rs_mpi: an MPI program whose results are checked, for
 * rdmashare_preload_test (Open MPI under rdmashare-run).
 *
 * - An MPI_Allreduce (sum) of ALLREDUCE_N integers that every rank fills
 *   from its rank; each rank checks every element of the result.
 * - A ping-pong between the ranks of each pair (0 and 1, 2 and 3, ...) in
 *   a few sizes up to 1 MiB: the even rank sends a pattern of the size, the
 *   round and its rank, the odd one checks it and sends back its
 *   complement, which the even rank checks.
 *
 * Rank 0 prints one line per part, the last one
 *   "pingpong ok: B bytes, P pairs"
 * with the bytes all pairs sent (both ways) and the number of pairs.  Any
 * wrong byte, or a number of ranks that is odd, ends all ranks with
 * MPI_Abort() and a message.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLREDUCE_N	(64 << 10)

static const struct {
	int size, rounds;
} sizes[] = {
	{ 1, 20 }, { 64, 20 }, { 4096, 10 }, { 65536, 4 }, { 1 << 20, 2 },
};

static int rank, nranks;

static void fail(const char *what, long at, long got, long want)
{
	fprintf(stderr, "rs_mpi: rank %d: %s: at %ld got %ld, want %ld\n", rank, what, at, got,
		want);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void allreduce(void)
{
	long base = 1000L * nranks * (nranks - 1) / 2;
	int *in = malloc(ALLREDUCE_N * sizeof(int)), *out = malloc(ALLREDUCE_N * sizeof(int));
	long i;

	if (!in || !out)
		fail("malloc", 0, 0, 0);
	for (i = 0; i < ALLREDUCE_N; i++)
		in[i] = rank * 1000 + (int)i;
	MPI_Allreduce(in, out, ALLREDUCE_N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	/* The sum over r of r * 1000 + i. */
	for (i = 0; i < ALLREDUCE_N; i++)
		if (out[i] != base + (long)nranks * i)
			fail("allreduce", i, out[i], base + (long)nranks * i);
	free(in);
	free(out);
	if (!rank)
		printf("allreduce ok: %d ints, %d ranks\n", ALLREDUCE_N, nranks);
}

static unsigned char pattern(int s, int round, int from, long i)
{
	return (unsigned char)(i * 131 + s * 7 + round * 17 + from * 59 + (i >> 8));
}

static void check(const unsigned char *buf, int size, int s, int round, int from, int flip)
{
	long i;

	for (i = 0; i < size; i++)
		if (buf[i] != (unsigned char)(pattern(s, round, from, i) ^ flip))
			fail("pingpong", i, buf[i], (unsigned char)(pattern(s, round, from, i) ^ flip));
}

static void pingpong(void)
{
	int peer = rank ^ 1, even = !(rank & 1), s, r;
	unsigned char *buf = malloc(1 << 20);
	long bytes = 0, total = 0, i;

	if (!buf)
		fail("malloc", 0, 0, 0);
	for (s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
		int size = sizes[s].size;

		for (r = 0; r < sizes[s].rounds; r++) {
			if (even) {
				for (i = 0; i < size; i++)
					buf[i] = pattern(s, r, rank, i);
				MPI_Send(buf, size, MPI_BYTE, peer, s, MPI_COMM_WORLD);
				memset(buf, 0, size);
				MPI_Recv(buf, size, MPI_BYTE, peer, s, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				check(buf, size, s, r, rank, 0xff);
			} else {
				MPI_Recv(buf, size, MPI_BYTE, peer, s, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				check(buf, size, s, r, peer, 0);
				for (i = 0; i < size; i++)
					buf[i] ^= 0xff;
				MPI_Send(buf, size, MPI_BYTE, peer, s, MPI_COMM_WORLD);
			}
			bytes += size;
		}
	}
	free(buf);
	MPI_Reduce(&bytes, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (!rank)
		printf("pingpong ok: %ld bytes, %d pairs\n", total, nranks / 2);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || nranks & 1)
		fail("ranks", 0, nranks, 4);
	allreduce();
	pingpong();
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
