/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * What ps-train and ps-bench share on their command lines: the job (its
 * nodes, where the first server is, the transport), its options' parsing
 * and --local's forking of every node.  Not part of libps.
 */
#ifndef PS_CLI_H
#define PS_CLI_H

#include <getopt.h>
#include <stdbool.h>

struct ps_job {
	const char *host, *transport;
	unsigned int port;
	int local, server, worker;	/* the role: one of them */
	unsigned int S, W, pipeline;
	int timeout_ms;
};

/* The job's options, for getopt_long(): its long options and short ones. */
#define PS_JOB_LONGOPTS							\
	{ "local", no_argument, NULL, 'l' },				\
	{ "server", required_argument, NULL, 's' },			\
	{ "worker", required_argument, NULL, 'w' },			\
	{ "host", required_argument, NULL, 'H' },			\
	{ "port", required_argument, NULL, 'p' },			\
	{ "servers", required_argument, NULL, 'S' },			\
	{ "workers", required_argument, NULL, 'W' },			\
	{ "transport", required_argument, NULL, 'X' },			\
	{ "pipeline", required_argument, NULL, 'P' },			\
	{ "timeout", required_argument, NULL, 'o' }
#define PS_JOB_SHORTOPTS "H:p:S:W:"

/*
 * @s as a whole number from @min to @max, with a K or M suffix (KiB, MiB),
 * into *@v; false if it is not one.
 */
bool ps_cli_num(const char *s, unsigned long min, unsigned long max, unsigned long *v);

/*
 * getopt_long() over @argv with @longopts (PS_JOB_LONGOPTS among them),
 * the job's options taken into @job: the next other option, '?' for an
 * unknown option or a job option's bad value, -1 at the end.
 */
int ps_cli_getopt(int argc, char **argv, const struct option *longopts, struct ps_job *job);

/* Exactly one role (--local, --server, --worker) was given. */
bool ps_cli_job_ok(const struct ps_job *job);

/*
 * --local: every node of @job forked on this host, @node(@ctx, i) for the
 * nodes i (servers first, then workers); 0 if all of them exited with 0.
 * @prog names the program in messages.
 */
int ps_cli_run_local(const struct ps_job *job, int (*node)(const void *ctx, unsigned int i),
		     const void *ctx, const char *prog);

#endif /* PS_CLI_H */
