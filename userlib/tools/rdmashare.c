// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * rdmashare: look at and tune the rdmashare module.  See rdmashare(8).
 *
 *   rdmashare [--json] status          devices, peers, tunables
 *   rdmashare [--json] stats [-w SEC] [-c N]
 *                                      counters, or rates over SEC seconds
 *   rdmashare [--json] get [KEY]       tunables
 *   rdmashare set KEY VALUE            write a tunable, checked
 *   rdmashare [--json] listeners       listening ports and their owners
 *
 * Everything comes from /sys/class/misc/rdmashare (the sysfs ABI in
 * Documentation/ABI/testing/sysfs-class-misc-rdmashare) and
 * RDMASHARE_IOC_QUERY; the listeners from debugfs (root only).  Exit status: 0, 1 (the module refused a value or
 * a system error), 2 (usage, unknown key, module not loaded).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rdmashare.h"

#define SYSFS	"/sys/class/misc/rdmashare"
#define DEBUGFS_LISTENERS	"/sys/kernel/debug/rdmashare/listeners"
#define MAX_OBJS	256
#define MAX_NAME	256

/* The counters of devices and peers, in stats/ (sysfs ABI). */
static const char * const stat_names[] = {
	"tx_msgs", "tx_bytes", "tx_chunks", "rx_msgs", "rx_bytes", "rx_chunks",
	"ctrl_tx", "ctrl_rx", "credit_stalls", "errors", "qps_up",
	"qps_lost", "reconnects", "srq_refills", "srq_low", "srq_renewals",
	"tx_sends", "rx_sends", "tx_wire_bytes", "tx_copied", "rx_copied", "sq_polled",
	"tx_placed", "busy_polled", "tx_writes", "rx_writes", "bulk_held",
};
#define NR_STATS (sizeof(stat_names) / sizeof(stat_names[0]))

/* A device or peer: its directory's name, gauges and counters. */
struct obj {
	char name[MAX_NAME];
	long long qps, acs, ports;
	long long stat[NR_STATS];
	int has[NR_STATS];
};

struct objs {
	struct obj o[MAX_OBJS];
	int n;
};

static int json;

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rdmashare: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* The first line of a file, without its newline; -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return n;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static long long read_num(const char *dir, const char *file, int *ok)
{
	char path[512], buf[64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	*ok = !read_line(path, buf, sizeof(buf));
	return *ok ? strtoll(buf, NULL, 10) : 0;
}

static void need_module(void)
{
	struct stat st;

	if (stat(SYSFS, &st))
		die(2, "%s is missing: is rdmashare.ko loaded?", SYSFS);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct obj *)a)->name, ((const struct obj *)b)->name);
}

/* Every directory under SYSFS/@kind (devices or peers), sorted by name. */
static void load(const char *kind, struct objs *os)
{
	char dir[512], path[768];
	struct dirent *de;
	struct obj *o;
	unsigned int i;
	int ok;
	DIR *d;

	os->n = 0;
	snprintf(dir, sizeof(dir), SYSFS "/%s", kind);
	d = opendir(dir);
	if (!d)
		return;		/* an older module: no peers/ */
	while ((de = readdir(d)) && os->n < MAX_OBJS) {
		if (de->d_name[0] == '.')
			continue;
		o = &os->o[os->n];
		memset(o, 0, sizeof(*o));
		memcpy(o->name, de->d_name, sizeof(o->name));
		o->name[sizeof(o->name) - 1] = 0;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		o->qps = read_num(path, "qps", &ok);
		o->acs = read_num(path, "acs", &ok);
		o->ports = read_num(path, "num_ports", &ok);
		for (i = 0; i < NR_STATS; i++) {
			char f[64];

			snprintf(f, sizeof(f), "stats/%s", stat_names[i]);
			o->stat[i] = read_num(path, f, &o->has[i]);
		}
		os->n++;
	}
	closedir(d);
	qsort(os->o, os->n, sizeof(os->o[0]), name_cmp);
}

/* A tunable: a file of SYSFS that root may write (not the uevent file). */
static int is_tunable(const char *name)
{
	char path[512];
	struct stat st;

	if (!strcmp(name, "uevent") || strchr(name, '/') || name[0] == '.')
		return 0;
	snprintf(path, sizeof(path), SYSFS "/%s", name);
	return !stat(path, &st) && S_ISREG(st.st_mode) && (st.st_mode & 0200);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

/* The tunables' names, sorted; NULL-terminated, malloc'd. */
static char **tunables(void)
{
	char **names = calloc(MAX_OBJS + 1, sizeof(*names));
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (!names)
		die(1, "out of memory");
	d = opendir(SYSFS);
	if (!d)
		die(2, "%s: %s", SYSFS, strerror(errno));
	while ((de = readdir(d)) && n < MAX_OBJS)
		if (is_tunable(de->d_name))
			names[n++] = strdup(de->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), str_cmp);
	return names;
}

static void free_names(char **names)
{
	char **p;

	for (p = names; *p; p++)
		free(*p);
	free(names);
}

/* ---- output ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void json_obj(const struct obj *o, int device)
{
	unsigned int i;
	int first = 1;

	printf("{\"name\":");
	json_str(o->name);
	if (device)
		printf(",\"num_ports\":%lld", o->ports);
	printf(",\"qps\":%lld,\"acs\":%lld,\"stats\":{", o->qps, o->acs);
	for (i = 0; i < NR_STATS; i++) {
		if (!o->has[i])
			continue;
		printf("%s\"%s\":%lld", first ? "" : ",", stat_names[i], o->stat[i]);
		first = 0;
	}
	printf("}}");
}

static void json_objs(const char *key, const struct objs *os, int device)
{
	int i;

	printf("\"%s\":[", key);
	for (i = 0; i < os->n; i++) {
		if (i)
			putchar(',');
		json_obj(&os->o[i], device);
	}
	putchar(']');
}

static void json_tunables(void)
{
	char **names = tunables(), **p, path[512], val[256];

	printf("\"tunables\":{");
	for (p = names; *p; p++) {
		snprintf(path, sizeof(path), SYSFS "/%s", *p);
		if (read_line(path, val, sizeof(val)))
			continue;
		printf("%s\"%s\":", p == names ? "" : ",", *p);
		json_str(val);
	}
	putchar('}');
	free_names(names);
}

static int stat_index(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_STATS; i++)
		if (!strcmp(stat_names[i], name))
			return i;
	return -1;
}

/* ---- commands ---- */

static int cmd_status(void)
{
	struct rdmashare_query q = { .size = sizeof(q) };
	struct objs *devs = calloc(1, sizeof(*devs)), *peers = calloc(1, sizeof(*peers));
	char abi[32] = "?";
	struct rdmashare *rs;
	int i, tx = stat_index("tx_msgs"), rx = stat_index("rx_msgs");
	int err = stat_index("errors");

	if (!devs || !peers)
		die(1, "out of memory");
	need_module();
	read_line(SYSFS "/abi_version", abi, sizeof(abi));
	if (!rdmashare_open(&rs, 0)) {
		if (rdmashare_query(rs, &q))
			q.features = 0;
		rdmashare_close(rs);
	}
	load("devices", devs);
	load("peers", peers);
	if (json) {
		printf("{\"abi_version\":%s,\"features\":%llu,", abi,
		       (unsigned long long)q.features);
		json_objs("devices", devs, 1);
		putchar(',');
		json_objs("peers", peers, 0);
		putchar(',');
		json_tunables();
		printf("}\n");
		goto out;
	}
	printf("rdmashare: ABI %s, features %#llx, %d device(s), %d peer(s)\n", abi,
	       (unsigned long long)q.features, devs->n, peers->n);
	printf("\n%-16s %5s %5s %5s\n", "DEVICE", "PORTS", "QPS", "ACS");
	for (i = 0; i < devs->n; i++)
		printf("%-16s %5lld %5lld %5lld\n", devs->o[i].name, devs->o[i].ports,
		       devs->o[i].qps, devs->o[i].acs);
	printf("\n%-40s %5s %5s %12s %12s %7s\n", "PEER", "QPS", "ACS", "TX_MSGS",
	       "RX_MSGS", "ERRORS");
	for (i = 0; i < peers->n; i++)
		printf("%-40s %5lld %5lld %12lld %12lld %7lld\n", peers->o[i].name,
		       peers->o[i].qps, peers->o[i].acs, peers->o[i].stat[tx],
		       peers->o[i].stat[rx], peers->o[i].stat[err]);
out:
	free(devs);
	free(peers);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One line per device and peer: counters, or per-second rates from @prev. */
static void print_stats(const struct objs *devs, const struct objs *peers,
			const struct objs *pdevs, const struct objs *ppeers, double secs)
{
	static const char * const cols[] = {
		"tx_msgs", "tx_bytes", "rx_msgs", "rx_bytes", "credit_stalls", "errors",
	};
	const struct objs *sets[2] = { devs, peers }, *prevs[2] = { pdevs, ppeers };
	const char *kinds[2] = { "device", "peer" };
	unsigned int c, k;
	int i, j, first = 1;

	if (json)
		printf("{\"interval\":%.3f,\"objects\":[", secs);
	else
		printf("%-6s %-40s %14s %14s %14s %14s %9s %7s\n", "KIND", "NAME",
		       secs ? "TX_MSGS/s" : "TX_MSGS", secs ? "TX_BYTES/s" : "TX_BYTES",
		       secs ? "RX_MSGS/s" : "RX_MSGS", secs ? "RX_BYTES/s" : "RX_BYTES",
		       "STALLS", "ERRORS");
	for (k = 0; k < 2; k++) {
		for (i = 0; i < sets[k]->n; i++) {
			const struct obj *o = &sets[k]->o[i], *p = NULL;

			for (j = 0; prevs[k] && j < prevs[k]->n; j++)
				if (!strcmp(prevs[k]->o[j].name, o->name))
					p = &prevs[k]->o[j];
			if (secs && !p)
				continue;	/* appeared meanwhile: no rate */
			if (json) {
				printf("%s{\"kind\":\"%s\",\"name\":", first ? "" : ",", kinds[k]);
				json_str(o->name);
			} else {
				printf("%-6s %-40s", kinds[k], o->name);
			}
			for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
				int s = stat_index(cols[c]);
				double v = o->stat[s];

				if (secs)
					v = (o->stat[s] - p->stat[s]) / secs;
				if (json)
					printf(",\"%s\":%.*f", cols[c], secs ? 1 : 0, v);
				else
					printf(" %*.*f", c < 4 ? 14 : (c == 4 ? 9 : 7),
					       secs ? 1 : 0, v);
			}
			printf(json ? "}" : "\n");
			first = 0;
		}
	}
	if (json)
		printf("]}\n");
	fflush(stdout);
}

static int cmd_stats(int argc, char **argv)
{
	struct objs *s[4];
	double interval = 0, t0, t1;
	long count = -1, i;
	char *end;
	int opt;

	optind = 1;
	while ((opt = getopt(argc, argv, "w:c:")) != -1) {
		switch (opt) {
		case 'w':
			interval = strtod(optarg, &end);
			if (*end || interval <= 0 || interval > 3600)
				die(2, "stats: -w wants seconds, more than 0, at most 3600");
			break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1)
				die(2, "stats: -c wants a count of at least 1");
			break;
		default:
			die(2, "usage: rdmashare stats [-w SECONDS] [-c COUNT]");
		}
	}
	if (optind != argc)
		die(2, "usage: rdmashare stats [-w SECONDS] [-c COUNT]");
	need_module();
	for (i = 0; i < 4; i++) {
		s[i] = calloc(1, sizeof(*s[i]));
		if (!s[i])
			die(1, "out of memory");
	}
	load("devices", s[0]);
	load("peers", s[1]);
	if (!interval) {
		print_stats(s[0], s[1], NULL, NULL, 0);
		goto out;
	}
	t0 = now();
	for (i = 0; count < 0 || i < count; i++) {
		usleep((useconds_t)(interval * 1e6));
		load("devices", s[2]);
		load("peers", s[3]);
		t1 = now();
		print_stats(s[2], s[3], s[0], s[1], t1 - t0);
		/* This sample is the next one's base. */
		memcpy(s[0], s[2], sizeof(*s[0]));
		memcpy(s[1], s[3], sizeof(*s[1]));
		t0 = t1;
	}
out:
	for (i = 0; i < 4; i++)
		free(s[i]);
	return 0;
}

static int cmd_get(int argc, char **argv)
{
	char **names, **p, path[512], val[256];

	need_module();
	if (argc > 2)
		die(2, "usage: rdmashare get [KEY]");
	if (argc == 2) {
		if (!is_tunable(argv[1]))
			die(2, "unknown key '%s' (rdmashare get lists them)", argv[1]);
		snprintf(path, sizeof(path), SYSFS "/%s", argv[1]);
		if (read_line(path, val, sizeof(val)))
			die(1, "get %s: %s", argv[1], strerror(errno));
		if (json) {
			printf("{\"%s\":", argv[1]);
			json_str(val);
			printf("}\n");
		} else {
			printf("%s\n", val);
		}
		return 0;
	}
	if (json) {
		putchar('{');
		json_tunables();
		printf("}\n");
		return 0;
	}
	names = tunables();
	for (p = names; *p; p++) {
		snprintf(path, sizeof(path), SYSFS "/%s", *p);
		if (!read_line(path, val, sizeof(val)))
			printf("%-24s %s\n", *p, val);
	}
	free_names(names);
	return 0;
}

static int cmd_set(int argc, char **argv)
{
	char path[512], val[256];
	ssize_t n;
	int fd;

	if (argc != 3)
		die(2, "usage: rdmashare set KEY VALUE");
	need_module();
	if (!is_tunable(argv[1]))
		die(2, "unknown key '%s' (rdmashare get lists them)", argv[1]);
	snprintf(path, sizeof(path), SYSFS "/%s", argv[1]);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			die(1, "set %s: permission denied: tunables are root's", argv[1]);
		die(1, "set %s: %s", argv[1], strerror(errno));
	}
	n = write(fd, argv[2], strlen(argv[2]));
	if (n < 0) {
		int e = errno;

		close(fd);
		if (e == EINVAL || e == E2BIG)
			die(1, "set %s %s: the module refused the value (%s); see rdmashare(8) for the ranges",
			    argv[1], argv[2], strerror(e));
		die(1, "set %s: %s", argv[1], strerror(e));
	}
	close(fd);
	if (!read_line(path, val, sizeof(val)) && !json)
		printf("%s %s\n", argv[1], val);
	return 0;
}

/*
 * Listening ports with the user and process that own them, from debugfs
 * (root only: other users' processes are not everyone's business).
 */
static int cmd_listeners(void)
{
	unsigned int port, uid, ac, blog, bmax;
	char line[512], comm[64];
	int pid, n = 0;
	FILE *f;

	need_module();
	f = fopen(DEBUGFS_LISTENERS, "r");
	if (!f)
		die(errno == ENOENT ? 2 : 1, "%s: %s%s", DEBUGFS_LISTENERS, strerror(errno),
		    errno == EACCES ? " (root only)" :
		    errno == ENOENT ? " (is debugfs mounted?)" : "");
	if (json)
		printf("{\"listeners\":[");
	else
		printf("%-6s %-8s %-8s %-16s %5s %s\n", "PORT", "UID", "PID", "COMM", "AC",
		       "BACKLOG");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "port %u uid %u pid %d comm %63s ac %u backlog %u/%u",
			   &port, &uid, &pid, comm, &ac, &blog, &bmax) != 7)
			continue;
		if (json) {
			printf("%s{\"port\":%u,\"uid\":%u,\"pid\":%d,\"comm\":", n ? "," : "",
			       port, uid, pid);
			json_str(comm);
			printf(",\"ac\":%u,\"backlog\":%u,\"backlog_max\":%u}", ac, blog, bmax);
		} else {
			printf("%-6u %-8u %-8d %-16s %5u %u/%u\n", port, uid, pid, comm, ac,
			       blog, bmax);
		}
		n++;
	}
	fclose(f);
	if (json)
		printf("]}\n");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rdmashare [--json] status\n"
		"       rdmashare [--json] stats [-w SECONDS] [-c COUNT]\n"
		"       rdmashare [--json] get [KEY]\n"
		"       rdmashare set KEY VALUE\n"
		"       rdmashare [--json] listeners\n"
		"See rdmashare(8).\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = 1;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (i == argc) {
		usage(stderr);
		return 2;
	}
	argc -= i;
	argv += i;
	if (!strcmp(argv[0], "status") && argc == 1)
		return cmd_status();
	if (!strcmp(argv[0], "stats"))
		return cmd_stats(argc, argv);
	if (!strcmp(argv[0], "get"))
		return cmd_get(argc, argv);
	if (!strcmp(argv[0], "set"))
		return cmd_set(argc, argv);
	if (!strcmp(argv[0], "listeners") && argc == 1)
		return cmd_listeners();
	usage(stderr);
	return 2;
}
