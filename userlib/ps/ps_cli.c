// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * ps-train's and ps-bench's shared command line: the job's options and
 * --local (ps_cli.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ps.h"
#include "ps_cli.h"

#define PS_CLI_MAX_RANK	4095
#define PS_CLI_MAX_NODES	4096

bool ps_cli_num(const char *s, unsigned long min, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno || end == s || *s == '-')
		return false;
	if (*end == 'K' || *end == 'M') {
		unsigned int shift = *end++ == 'K' ? 10 : 20;

		if (*v > (ULONG_MAX >> shift))
			return false;
		*v <<= shift;
	}
	return !*end && *v >= min && *v <= max;
}

/* Option @c with @arg into @job: 1 if it is a job option, 0 if not, -1 if bad. */
static int ps_cli_job_opt(struct ps_job *job, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case 'l':
		job->local = 1;
		return 1;
	case 'H':
		job->host = arg;
		return 1;
	case 'X':
		if (!ps_transport_ok(arg))
			return -1;
		job->transport = arg;
		return 1;
	case 's':
	case 'w':
		if (!ps_cli_num(arg, 0, PS_CLI_MAX_RANK, &v))
			return -1;
		*(c == 's' ? &job->server : &job->worker) = (int)v;
		return 1;
	case 'p':
		if (!ps_cli_num(arg, 1, 65535, &v))
			return -1;
		job->port = v;
		return 1;
	case 'S':
	case 'W':
		if (!ps_cli_num(arg, 1, PS_CLI_MAX_NODES, &v))
			return -1;
		*(c == 'S' ? &job->S : &job->W) = v;
		return 1;
	case 'P':
		if (!ps_cli_num(arg, 1, 1 << 16, &v))
			return -1;
		job->pipeline = v;
		return 1;
	case 'o':
		if (!ps_cli_num(arg, 1, INT_MAX, &v))
			return -1;
		job->timeout_ms = (int)v;
		return 1;
	}
	return 0;
}

int ps_cli_getopt(int argc, char **argv, const struct option *longopts, struct ps_job *job)
{
	int c, ret;

	while ((c = getopt_long(argc, argv, PS_JOB_SHORTOPTS, longopts, NULL)) != -1) {
		ret = ps_cli_job_opt(job, c, optarg);
		if (ret < 0)
			return '?';
		if (!ret)
			return c;
	}
	return -1;
}

bool ps_cli_job_ok(const struct ps_job *job)
{
	return job->local + (job->server >= 0) + (job->worker >= 0) == 1;
}

int ps_cli_run_local(const struct ps_job *job, int (*node)(const void *ctx, unsigned int i),
		     const void *ctx, const char *prog)
{
	pid_t pids[2 * PS_CLI_MAX_NODES];
	unsigned int i, n = 0;
	int st, ret = 0;

	fflush(stdout);
	for (i = 0; i < job->S + job->W; i++) {
		pids[n] = fork();
		if (pids[n] < 0) {
			fprintf(stderr, "%s: fork: %m\n", prog);
			ret = 1;
			break;
		}
		if (!pids[n]) {
			st = node(ctx, i);
			/* _exit() would lose what stdio holds. */
			fflush(stdout);
			_exit(st);
		}
		n++;
	}
	/* Every child, whatever order they end in. */
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			ret = 1;
	}
	return ret;
}
