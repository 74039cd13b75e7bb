// SPDX-License-Identifier: GPL-2.0
/*
 * rssoak: a soak of rdmashare between two hosts, every message checked.
 *
 *   rssoak server [-w WORKERS] [-p PORT] [-c SECONDS]
 *   rssoak client -h PEER [-w WORKERS] [-p PORT] [-t SECONDS] [-r SECONDS]
 *
 * The server runs WORKERS processes (default 4), each listening on PORT+i
 * and echoing every message of the ACs it accepts, one after the other,
 * for SECONDS or until 20 s pass without a new AC once clients came.
 * With -c it asks for its own power cut after SECONDS (it creates
 * $RS_WORK/poweroff, which run-vm.sh acts on) and goes on until then.
 *
 * The client runs as many workers, each connecting to PORT+i again and
 * again: on each AC a random number of messages (1 byte to 64 KiB, the
 * content a function of worker, AC and sequence number), each checked when
 * its echo comes back, then a close; meanwhile the parent kills a random
 * worker now and then (SIGKILL) and starts another, and with -r removes
 * the host's RDMA device (rxe0) after SECONDS and adds it back.  An AC may
 * fail (peer lost, device removed): its outstanding message is lost with
 * it, and the worker connects again.  Anything else is a failure: an echo
 * with another sequence number or other bytes (lost, duplicated, reordered
 * or corrupted), or an AC that closed normally with messages unanswered.
 * After SECONDS (default 120), and once an AC completed since the last one
 * failed (the peer is back; at most 4 minutes more), the workers stop;
 * every AC must then be gone from the device gauges.  The summary line:
 * "# rssoak: N messages checked, A ACs (F failed), K workers killed, E
 * errors".  Odd workers, on both sides, use RDMASHARE_SETUP_SQ_WAKEUP.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>

#include "common.h"
#include "rdmashare.h"

#define MAX_MSG		(64 << 10)
#define MAX_WORKERS	32

struct totals {
	unsigned long msgs, acs, failed, kills, errors;
	int stop;
	double last_fail, last_ok;	/* when an AC last failed, closed well */
};

static struct totals *tot;	/* shared by the workers */
static const char *peer;
static unsigned int base_port = 7400;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Message @seq of AC @gen of worker @w: its length and bytes. */
static size_t make_msg(unsigned int w, unsigned int gen, uint32_t seq, uint8_t *buf)
{
	uint64_t h = mix(((uint64_t)w << 48) ^ ((uint64_t)gen << 24) ^ seq);
	/* Mostly small ones, some up to 64 KiB (several chunks). */
	size_t len = 8 + h % (h % 5 ? 4096 : MAX_MSG - 8), i;

	memcpy(buf, &seq, 4);
	memcpy(buf + 4, &gen, 4);
	for (i = 8; i < len; i++) {
		if (!(i & 7))
			h = mix(h + i);
		buf[i] = h >> (8 * (i & 7));
	}
	return len;
}

static void add(unsigned long *v, unsigned long n)
{
	__atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# rssoak: ERROR: ");
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	add(&tot->errors, 1);
}

/*
 * Odd workers set their handles up with RDMASHARE_SETUP_SQ_WAKEUP, so that
 * completions consume their SQs through the faults too.
 */
static struct rdmashare *soak_open(unsigned int w)
{
	struct rdmashare_setup p = {
		.flags = (w & 1) ? RDMASHARE_SETUP_SQ_WAKEUP : 0,
		.data_size = 4 << 20, .rx_slots = 64,
	};

	return rs_open_with(&p);
}

static void server_worker(unsigned int w, double end)
{
	static uint8_t buf[MAX_MSG];
	struct rdmashare *rs = soak_open(w);
	double last = 0;
	int l, ac;
	ssize_t n;

	if (!rs || (l = rdmashare_listen(rs, base_port + w, 16)) <= 0) {
		error("server %u: cannot listen", w);
		_exit(1);
	}
	/* Until the end, or 20 s without a new AC once clients came. */
	while (rs_now() < end && (!last || rs_now() - last < 20)) {
		ac = rdmashare_accept(rs, l, 1000);
		if (ac <= 0)
			continue;
		add(&tot->acs, 1);
		for (;;) {
			n = rdmashare_recv(rs, ac, buf, sizeof(buf), 5000);
			if (n == -ETIME && rs_now() < end)
				continue;
			if (n < 0 || rdmashare_send(rs, ac, buf, n))
				break;
			add(&tot->msgs, 1);
		}
		rdmashare_close_ac(rs, ac);
		last = rs_now();
	}
	rdmashare_close(rs);
	_exit(0);
}

static void client_worker(unsigned int w, double end)
{
	(void)end;
	static uint8_t out[MAX_MSG], in[MAX_MSG];
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(base_port + w) };
	unsigned int gen = mix(getpid()) & 0xffffff;
	struct rdmashare *rs = NULL;
	uint32_t seq, count;
	size_t len;
	ssize_t n;
	int ac;

	inet_pton(AF_INET, peer, &sin.sin_addr);
	while (!__atomic_load_n(&tot->stop, __ATOMIC_RELAXED)) {
		if (!rs) {
			rs = soak_open(w);
			if (!rs) {
				error("client %u: cannot open", w);
				_exit(1);
			}
		}
		ac = rdmashare_connect(rs, (struct sockaddr *)&sin, 10000);
		if (ac <= 0) {
			usleep(200000);
			continue;
		}
		add(&tot->acs, 1);
		gen++;
		count = 1 + mix(gen) % 200;
		for (seq = 0; seq < count && !__atomic_load_n(&tot->stop, __ATOMIC_RELAXED);
		     seq++) {
			len = make_msg(w, gen, seq, out);
			if (rdmashare_send(rs, ac, out, len))
				break;
			n = rdmashare_recv(rs, ac, in, sizeof(in), 60000);
			if (n < 0)
				break;
			if ((size_t)n != len || memcmp(in, out, len)) {
				uint32_t got;

				memcpy(&got, in, 4);
				error("worker %u AC %u: message %u came back as seq %u, %zd bytes (sent %zu)",
				      w, gen, seq, got, n, len);
				break;
			}
			add(&tot->msgs, 1);
		}
		if (seq < count && !__atomic_load_n(&tot->stop, __ATOMIC_RELAXED)) {
			/* The AC failed under us: peer lost or device gone. */
			add(&tot->failed, 1);
			tot->last_fail = rs_now();
			rdmashare_close(rs);
			rs = NULL;
			continue;
		}
		if (seq == count)
			tot->last_ok = rs_now();
		rdmashare_close_ac(rs, ac);
		if (rdmashare_flush(rs, 30000)) {
			rdmashare_close(rs);
			rs = NULL;
		}
	}
	if (rs)
		rdmashare_close(rs);
	_exit(0);
}

static pid_t spawn(void (*fn)(unsigned int, double), unsigned int w, double end)
{
	pid_t pid = fork();

	if (!pid) {
		signal(SIGPIPE, SIG_IGN);
		fn(w, end);
		_exit(0);
	}
	return pid;
}

int main(int argc, char **argv)
{
	unsigned int workers = 4, secs = 120, cut = 0, remove_at = 0, i;
	const char *role = argc > 1 ? argv[1] : "";
	pid_t pids[MAX_WORKERS];
	double t0, end;
	int opt, st, left = -1;

	optind = 2;
	while ((opt = getopt(argc, argv, "w:p:t:c:r:h:")) != -1) {
		switch (opt) {
		case 'w': workers = strtoul(optarg, NULL, 0); break;
		case 'p': base_port = strtoul(optarg, NULL, 0); break;
		case 't': secs = strtoul(optarg, NULL, 0); break;
		case 'c': cut = strtoul(optarg, NULL, 0); break;
		case 'r': remove_at = strtoul(optarg, NULL, 0); break;
		case 'h': peer = optarg; break;
		default: return 2;
		}
	}
	if (!workers || workers > MAX_WORKERS ||
	    (strcmp(role, "server") && (strcmp(role, "client") || !peer))) {
		fprintf(stderr, "usage: rssoak server|client -h PEER [-w N] [-p PORT] [-t S] [-c S] [-r S]\n");
		return 2;
	}
	tot = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tot == MAP_FAILED)
		return 2;
	t0 = rs_now();
	end = t0 + secs;

	if (!strcmp(role, "server")) {
		for (i = 0; i < workers; i++)
			pids[i] = spawn(server_worker, i, end);
		if (cut) {
			char path[512];

			sleep(cut);
			printf("# rssoak: server: asking for the power cut after %u s, %lu messages echoed\n",
			       cut, tot->msgs);
			fflush(stdout);
			sync();
			snprintf(path, sizeof(path), "%s/poweroff", getenv("RS_WORK") ?: "/tmp");
			close(open(path, O_CREAT | O_WRONLY, 0644));
		}
		for (i = 0; i < workers; i++)
			waitpid(pids[i], NULL, 0);
		for (i = 0; i < 300 && (left = rs_device_acs()) != 0; i++)
			usleep(100000);
		if (left)
			error("server: %d ACs left on the devices after every worker ended", left);
		printf("# rssoak: server: %lu messages echoed on %lu ACs, %lu errors\n",
		       tot->msgs, tot->acs, tot->errors);
		return tot->errors ? 1 : 0;
	}

	for (i = 0; i < workers; i++)
		pids[i] = spawn(client_worker, i, end);
	/*
	 * Until the end, and then until an AC completed since the last one
	 * failed (the peer is back), for at most 4 minutes more.
	 */
	while (rs_now() < end ||
	       (tot->last_fail > tot->last_ok && rs_now() < end + 240)) {
		sleep(1);
		if (remove_at && rs_now() - t0 >= remove_at) {
			remove_at = 0;
			printf("# rssoak: client: removing rxe0 and adding it back\n");
			fflush(stdout);
			if (rs_sh("rdma link delete rxe0") ||
			    rs_sh("sleep 2; rdma link add rxe0 type rxe netdev %s",
				  getenv("RS_SOAK_NETDEV") ?: "eth0"))
				error("rxe0 could not be removed and added back");
		}
		/* Now and then a worker dies mid-whatever; another takes over. */
		if (rs_now() < end && !(mix((uint64_t)rs_now()) % 7)) {
			i = mix(tot->msgs) % workers;
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			add(&tot->kills, 1);
			pids[i] = spawn(client_worker, i, end);
		}
	}
	if (tot->last_fail > tot->last_ok)
		error("no AC completed since the last one failed %.0f s ago",
		      rs_now() - tot->last_fail);
	__atomic_store_n(&tot->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < workers; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			error("worker %u ended with status %#x", i, st);
	}
	for (i = 0; i < 300 && (left = rs_device_acs()) != 0; i++)
		usleep(100000);
	if (left)
		error("%d ACs left on the devices after every worker ended", left);
	printf("# rssoak: %lu messages checked, %lu ACs (%lu failed), %lu workers killed, %lu errors\n",
	       tot->msgs, tot->acs, tot->failed, tot->kills, tot->errors);
	return tot->errors || !tot->msgs ? 1 : 0;
}
