// SPDX-License-Identifier: GPL-2.0
/*
 * rs-info: what the loaded rdmashare module reports: its ABI version and
 * the RDMA devices it uses.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rdmashare.h"

#define RS_SYSFS_DEVICES "/sys/class/misc/rdmashare/devices"

static void print_attr(const char *dev, const char *attr)
{
	char path[512], buf[128] = "?";
	FILE *f;

	snprintf(path, sizeof(path), RS_SYSFS_DEVICES "/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	printf(" %s %s", attr, buf);
}

int main(void)
{
	struct rdmashare_query q;
	struct rdmashare *rs;
	struct dirent *de;
	DIR *d;
	int ret;

	ret = rdmashare_open(&rs, 0);
	if (ret) {
		fprintf(stderr, "rs-info: cannot open %s: %s%s\n", RDMASHARE_DEV_PATH,
			strerror(-ret), ret == -ENOENT ? " (is rdmashare.ko loaded?)" : "");
		return 1;
	}
	ret = rdmashare_query(rs, &q);
	rdmashare_close(rs);
	if (ret) {
		fprintf(stderr, "rs-info: query: %s\n", strerror(-ret));
		return 1;
	}
	printf("rdmashare ABI %u, %u RDMA device(s)\n", q.abi_version, q.num_devices);

	d = opendir(RS_SYSFS_DEVICES);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		printf("  %s:", de->d_name);
		print_attr(de->d_name, "num_ports");
		printf("\n");
	}
	closedir(d);
	return 0;
}
