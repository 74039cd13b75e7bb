// SPDX-License-Identifier: GPL-2.0
/*
 * rsfuzz: a structure-aware fuzzer of rdmashare's whole user ABI.
 *
 *   rsfuzz [-s SEED] [-n CALLS] [-p PROCS] [-t SECONDS]
 *
 * PROCS worker processes (default 3; every other one as the ordinary user
 * nobody, with its limits) share CALLS system calls on
 * /dev/rdmashare (default 20000), for at most SECONDS (default 120): open
 * and close, every ioctl with fields that are valid, on a boundary or
 * random (sizes too small, exact, larger with zero or non-zero tails),
 * SETUP, mmap of every region with odd offsets, lengths and flags, SQEs of
 * every opcode written into the mapped SQ, scribbled ring indices, ENTER,
 * LISTEN, CONNECT to this host, to nobody and to odd addresses with short
 * timeouts, ACCEPT, AC_SET, AC_STATS, fork with the files shared, and
 * SIGKILL of those children mid-call.  The seed (random when not given) is
 * printed first, so that a run can be repeated.
 *
 * Then it checks that the module survived: the device opens, a pair of ACs
 * to this host (RS_IP) carries a message, and every AC is gone from the
 * devices' gauges once the workers' files are closed.  Exit status 0 when
 * all holds; a worker that hangs is killed by its alarm and fails the run.
 * The kernel's side (no splat, no leak at unload) is the guest's verdict.
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>

#include "common.h"
#include "rdmashare.h"

#define MAX_FDS		4
#define MAX_ACS		32

static uint64_t rng;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static uint32_t pick(uint32_t n)
{
	return n ? rnd() % n : 0;
}

static uint64_t boundary(void)
{
	static const uint64_t b[] = {
		0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511,
		512, 1023, 1024, 4095, 4096, 4097, 16383, 16384, 16385, 65535, 65536,
		1 << 20, (1 << 20) + 1, 1 << 28, 1 << 30, 1ULL << 31, 0xfffffffeULL,
		0xffffffffULL, 1ULL << 32, 0x7fffffffffffffffULL, ~0ULL,
	};

	return pick(4) ? b[pick(sizeof(b) / sizeof(b[0]))] : rnd();
}

/* A 32-bit field: small, on a boundary, or anything. */
static uint32_t f32(uint32_t small)
{
	switch (pick(10)) {
	case 0 ... 4:
		return pick(small + 1);
	case 5 ... 7:
		return boundary();
	default:
		return rnd();
	}
}

struct fstate {
	int fd;
	int ready;
	struct rdmashare_setup p;
	uint8_t *rings;
	size_t rings_len;
	uint8_t *data;
	size_t data_len;
};

static struct fstate fs[MAX_FDS];
static uint32_t acs[MAX_ACS];
static uint32_t ports[MAX_ACS];
static const char *self_ip;
/* Shared by the workers: calls, and ioctls that succeeded per command. */
static unsigned long *calls;
#define NR_CMDS		8
#define ok_cmds		(calls + 1)

static struct fstate *some_file(void)
{
	struct fstate *f = &fs[pick(MAX_FDS)];

	return f->fd > 0 ? f : NULL;
}

static uint32_t some_ac(void)
{
	return pick(4) ? acs[pick(MAX_ACS)] : f32(70);
}

static void remember(uint32_t *tab, uint32_t v)
{
	tab[pick(MAX_ACS)] = v;
}

/*
 * The ioctl argument size: mostly the struct's, else too small, one of the
 * tail cases, or the 4096 limit and past it.  A larger size comes with a
 * zero tail or, sometimes, junk in it (which must give E2BIG).
 */
static uint32_t arg_size(uint32_t exact)
{
	switch (pick(12)) {
	case 0:
		return pick(exact);
	case 1:
		return exact + 8;
	case 2:
		return 4096;
	case 3:
		return 4097 + pick(100);
	default:
		return exact;
	}
}

static long do_ioctl(int fd, unsigned int cmd, void *arg, uint32_t exact)
{
	static uint8_t buf[8192] __attribute__((aligned(8)));
	uint32_t size = arg_size(exact);
	long ret;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, arg, exact);
	memcpy(buf, &size, sizeof(size));
	if (size > exact && size <= sizeof(buf) && !pick(3))
		buf[exact + pick(size - exact)] = 1 + pick(255);
	__atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
	if (!pick(50))
		return ioctl(fd, cmd, pick(2) ? NULL : (void *)(uintptr_t)boundary());
	ret = ioctl(fd, cmd, buf);
	if (!ret) {
		memcpy(arg, buf, exact);
		if (_IOC_NR(cmd) < NR_CMDS && _IOC_TYPE(cmd) == RDMASHARE_TYPE)
			__atomic_add_fetch(&ok_cmds[_IOC_NR(cmd)], 1, __ATOMIC_RELAXED);
	}
	return ret;
}

static void a_open(void)
{
	struct fstate *f = &fs[pick(MAX_FDS)];

	if (f->fd > 0)
		return;
	memset(f, 0, sizeof(*f));
	__atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
	f->fd = open("/dev/rdmashare", pick(8) ? O_RDWR : (int)f32(O_RDWR | O_NONBLOCK));
	if (f->fd < 0)
		f->fd = 0;
}

static void a_close(void)
{
	struct fstate *f = some_file();
	int first;

	if (!f)
		return;
	/*
	 * The mappings go before the file or right after it (they keep the
	 * file alive, and its memory: kept, they would fill the guest).
	 */
	first = pick(2);
	if (first) {
		munmap(f->rings, f->rings_len);
		munmap(f->data, f->data_len);
	}
	__atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
	close(f->fd);
	if (!first) {
		if (f->rings && !pick(4))
			((volatile uint8_t *)f->rings)[pick(f->rings_len)];
		munmap(f->rings, f->rings_len);
		munmap(f->data, f->data_len);
	}
	memset(f, 0, sizeof(*f));
}

static void a_setup(void)
{
	struct fstate *f = some_file();
	struct rdmashare_setup p = { .size = sizeof(p) };

	if (!f)
		return;
	if (pick(4)) {
		p.sq_entries = pick(65);
		p.cq_entries = pick(4) ? 0 : f32(512);
		p.data_size = pick(3) ? 0 : (1 + pick(16)) << 16;
		p.rx_slots = pick(3) ? 0 : pick(65);
	} else {
		p.flags = pick(4) ? 0 : f32(4);
		p.sq_entries = f32(4096);
		p.cq_entries = f32(8192);
		p.data_size = boundary();
		p.rx_slots = f32(4096);
		p.resv[pick(sizeof(p.resv) / sizeof(p.resv[0]))] = pick(4) ? 0 : boundary();
	}
	if (!do_ioctl(f->fd, RDMASHARE_IOC_SETUP, &p, sizeof(p))) {
		f->ready = 1;
		f->p = p;
	}
}

static void a_mmap(void)
{
	struct fstate *f = some_file();
	uint64_t off;
	size_t len;
	int prot, flags;
	void *m;

	if (!f)
		return;
	switch (pick(4)) {
	case 0:
		off = RDMASHARE_OFF_RINGS;
		len = f->p.rings_size;
		break;
	case 1:
		off = RDMASHARE_OFF_DATA;
		len = f->p.map_size;
		break;
	case 2:
		off = (pick(2) ? RDMASHARE_OFF_DATA : 0) + (uint64_t)pick(64) * 4096;
		len = (size_t)pick(64) * 4096;
		break;
	default:
		off = boundary() & ~4095ULL;
		len = boundary() & 0xfffffff;
		break;
	}
	if (!pick(8))
		len += pick(2) ? 4096 : -4096;
	prot = PROT_READ | PROT_WRITE | (pick(16) ? 0 : PROT_EXEC);
	flags = pick(10) ? MAP_SHARED : MAP_PRIVATE;
	__atomic_add_fetch(calls, 1, __ATOMIC_RELAXED);
	m = mmap(NULL, len, prot, flags, f->fd, off);
	if (m == MAP_FAILED)
		return;
	if (off == RDMASHARE_OFF_RINGS && len == f->p.rings_size && flags == MAP_SHARED &&
	    !f->rings) {
		f->rings = m;
		f->rings_len = len;
	} else if (off == RDMASHARE_OFF_DATA && len == f->p.map_size && flags == MAP_SHARED &&
		   !f->data) {
		f->data = m;
		f->data_len = len;
	} else {
		/* Touch it, then let it go. */
		if (len)
			((volatile uint8_t *)m)[pick(len)];
		munmap(m, len);
	}
}

static uint32_t *ring_word(struct fstate *f, uint32_t off)
{
	return (uint32_t *)(f->rings + off);
}

static void a_scribble(void)
{
	struct fstate *f = some_file();
	const uint32_t offs[] = {
		f ? f->p.sq_off.tail : 0, f ? f->p.cq_off.head : 0,
		f ? f->p.sq_off.head : 0, f ? f->p.cq_off.tail : 0,
		f ? f->p.sq_off.flags : 0, f ? f->p.cq_off.flags : 0,
		f ? f->p.sq_off.ring_mask : 0, f ? f->p.cq_off.ring_entries : 0,
	};

	if (!f || !f->rings)
		return;
	*ring_word(f, offs[pick(8)]) = f32(1024);
}

/* Reap: the CQ head to its tail, so that there is room again. */
static void a_reap(void)
{
	struct fstate *f = some_file();

	if (!f || !f->rings)
		return;
	__atomic_store_n(ring_word(f, f->p.cq_off.head),
			 __atomic_load_n(ring_word(f, f->p.cq_off.tail), __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
}

static void a_sqes(void)
{
	struct fstate *f = some_file();
	struct rdmashare_enter e = { .size = sizeof(e) };
	struct rdmashare_sqe *sqe;
	uint32_t tail, mask, n, i;

	if (!f || !f->rings)
		return;
	tail = *ring_word(f, f->p.sq_off.tail);
	mask = *ring_word(f, f->p.sq_off.ring_mask) & (f->p.sq_entries - 1);
	n = 1 + pick(f->p.sq_entries);
	for (i = 0; i < n; i++) {
		sqe = (struct rdmashare_sqe *)(f->rings + f->p.sq_off.entries) +
		      ((tail + i) & mask);
		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = pick(8) ? pick(RDMASHARE_OP_LAST) : pick(256);
		sqe->ac = some_ac();
		sqe->user_data = rnd();
		switch (pick(4)) {
		case 0:	/* a slot, maybe */
			sqe->addr = f->p.rx_offset + (uint64_t)pick(f->p.rx_slots + 1) *
				    f->p.rx_slot_size + (pick(4) ? 0 : pick(64));
			break;
		case 1:
			sqe->addr = pick(f->p.data_size + 1);
			sqe->len = pick(4096);
			break;
		default:
			sqe->addr = pick(2) ? 0 : boundary();
			sqe->len = pick(2) ? 0 : f32(1 << 16);
			break;
		}
		if (!pick(16))
			sqe->flags = rnd();
		if (!pick(16))
			sqe->resv2[pick(4)] = rnd();
	}
	__atomic_store_n(ring_word(f, f->p.sq_off.tail), tail + n, __ATOMIC_RELEASE);
	e.to_submit = pick(8) ? n : f32(1024);
	if (!pick(3)) {
		e.flags = RDMASHARE_ENTER_GETEVENTS;
		e.min_complete = pick(3);
		e.timeout_ms = 1 + pick(5);
	}
	do_ioctl(f->fd, RDMASHARE_IOC_ENTER, &e, sizeof(e));
}

static void a_enter(void)
{
	struct fstate *f = some_file();
	struct rdmashare_enter e = { .size = sizeof(e) };

	if (!f)
		return;
	e.flags = pick(4) ? pick(2) : f32(4);
	e.to_submit = f32(64);
	e.min_complete = f32(4);
	/* Never a long wait: the fuzzer must not stall on itself. */
	e.timeout_ms = 1 + pick(5);
	e.submitted = pick(4) ? 0 : rnd();
	do_ioctl(f->fd, RDMASHARE_IOC_ENTER, &e, sizeof(e));
}

static void a_listen(void)
{
	struct fstate *f = some_file();
	struct rdmashare_listen l = { .size = sizeof(l) };

	if (!f)
		return;
	l.port = pick(4) ? 30000 + pick(64) : f32(70000);
	l.backlog = pick(4) ? 1 + pick(16) : f32(2048);
	if (!ports[0]) {
		/* A listener that stays (on fd 0 of the list) for CONNECTs. */
		l.port = 30000 + pick(64);
		l.backlog = 64;
	}
	if (!pick(10))
		l.flags = rnd();
	if (!pick(10))
		l.resv = rnd();
	if (!do_ioctl(f->fd, RDMASHARE_IOC_LISTEN, &l, sizeof(l))) {
		remember(acs, l.ac);
		if (!ports[0])
			ports[0] = l.port;
		else
			remember(ports, l.port);
	}
}

static void some_addr(struct rdmashare_addr *a)
{
	static const char *const v4[] = {
		NULL /* RS_IP */, "127.0.0.1", "198.18.0.77", "198.19.0.9", "0.0.0.0",
		"255.255.255.255", "224.0.0.1", "198.18.0.255", "10.255.255.1",
	};
	static const char *const v6[] = {
		"::1", "::", "ff02::1", "fe80::1", "fd00:198:18::77",
	};

	memset(a, 0, sizeof(*a));
	a->port = pick(2) ? ports[pick(MAX_ACS)] : f32(70000);
	switch (pick(6)) {
	case 0 ... 3:
		a->family = AF_INET;
		inet_pton(AF_INET, v4[pick(sizeof(v4) / sizeof(v4[0]))] ?: self_ip, a->addr);
		if (!pick(10))
			a->addr[4 + pick(12)] = rnd();
		break;
	case 4:
		a->family = AF_INET6;
		inet_pton(AF_INET6, v6[pick(sizeof(v6) / sizeof(v6[0]))], a->addr);
		break;
	default:
		a->family = f32(64);
		for (unsigned int i = 0; i < sizeof(a->addr); i++)
			a->addr[i] = rnd();
		break;
	}
}

static void a_connect(void)
{
	struct fstate *f = some_file();
	struct rdmashare_connect c = { .size = sizeof(c) };

	if (!f)
		return;
	some_addr(&c.peer);
	/* Short timeouts, 1 ms among them: QPs set up and given up on. */
	c.timeout_ms = pick(3) ? 1 + pick(50) : 1;
	if (!pick(3) && ports[0]) {
		/* One that should work: an AC to this host, for the SQEs. */
		memset(&c.peer, 0, sizeof(c.peer));
		c.peer.family = AF_INET;
		c.peer.port = ports[pick(4)] ?: ports[0];
		inet_pton(AF_INET, self_ip, c.peer.addr);
		c.timeout_ms = 3000;
	}
	if (!pick(10))
		c.flags = rnd();
	if (!pick(20))
		c.ac = rnd();
	if (!do_ioctl(f->fd, RDMASHARE_IOC_CONNECT, &c, sizeof(c)))
		remember(acs, c.ac);
}

static void a_accept(void)
{
	struct fstate *f = some_file();
	struct rdmashare_accept a = { .size = sizeof(a) };

	if (!f)
		return;
	a.listen_ac = some_ac();
	if (pick(4))
		a.flags = RDMASHARE_ACCEPT_NONBLOCK;
	else
		a.timeout_ms = 1 + pick(5);
	if (!pick(10))
		a.flags = rnd();
	if (!pick(10))
		a.resv = rnd();
	if (!do_ioctl(f->fd, RDMASHARE_IOC_ACCEPT, &a, sizeof(a)))
		remember(acs, a.ac);
}

static void a_misc_ioctl(void)
{
	struct fstate *f = some_file();
	union {
		struct rdmashare_query q;
		struct rdmashare_ac_set s;
		struct rdmashare_ac_stats st;
		uint8_t raw[512];
	} u;
	unsigned int i;

	if (!f)
		return;
	memset(&u, 0, sizeof(u));
	switch (pick(4)) {
	case 0:
		u.q.flags = pick(4) ? 0 : rnd();
		do_ioctl(f->fd, RDMASHARE_IOC_QUERY, &u.q, sizeof(u.q));
		break;
	case 1:
		u.s.flags = pick(4);
		u.s.ac = pick(8) ? some_ac() : RDMASHARE_AC_FILE;
		u.s.weight = f32(1001);
		u.s.band = f32(3);
		do_ioctl(f->fd, RDMASHARE_IOC_AC_SET, &u.s, sizeof(u.s));
		break;
	case 2:
		u.st.ac = some_ac();
		if (!pick(10))
			u.st.resv[pick(4)] = rnd();
		do_ioctl(f->fd, RDMASHARE_IOC_AC_STATS, &u.st, sizeof(u.st));
		break;
	default:
		/* Commands that do not exist, and junk. */
		for (i = 0; i < sizeof(u.raw); i++)
			u.raw[i] = rnd();
		do_ioctl(f->fd, pick(2) ? _IO(RDMASHARE_TYPE, 8 + pick(8)) : (unsigned int)rnd(),
			 u.raw, 4 + pick(200));
		break;
	}
}

static void one_action(void);

/* A child that shares the files, does a few calls, and may be killed. */
static void a_fork(void)
{
	pid_t pid;
	int i;

	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		rng ^= getpid();
		for (i = 0; i < 20; i++)
			one_action();
		_exit(0);
	}
	if (pick(2)) {
		usleep(pick(3000));
		kill(pid, SIGKILL);
	}
	waitpid(pid, NULL, 0);
}

static void one_action(void)
{
	switch (pick(32)) {
	case 0 ... 1: a_open(); break;
	case 2: a_close(); break;
	case 3 ... 4: a_setup(); break;
	case 5 ... 7: a_mmap(); break;
	case 8: a_scribble(); break;
	case 9 ... 11: a_reap(); break;
	case 12 ... 16: a_sqes(); break;
	case 17 ... 18: a_enter(); break;
	case 19 ... 21: a_listen(); break;
	case 22 ... 25: a_connect(); break;
	case 26 ... 27: a_accept(); break;
	case 28 ... 30: a_misc_ioctl(); break;
	default: a_fork(); break;
	}
}

static void worker(unsigned int i, uint64_t seed, unsigned long budget, double end)
{
	rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	signal(SIGPIPE, SIG_IGN);
	/* Every other worker is an ordinary user, with its limits. */
	if ((i & 1) && !getuid() && (setgid(65534) || setuid(65534)))
		_exit(3);
	while (__atomic_load_n(calls, __ATOMIC_RELAXED) < budget && rs_now() < end)
		one_action();
	_exit(0);
}

/* The module still works: a message over a fresh pair of ACs. */
static int check_alive(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(30999) };
	struct rdmashare *rs = rs_open_setup(1 << 20, 64);
	char buf[16];
	int l, c, s, ret = -1;

	if (!rs)
		return -1;
	inet_pton(AF_INET, self_ip, &sin.sin_addr);
	l = rdmashare_listen(rs, 30999, 4);
	c = l > 0 ? rdmashare_connect(rs, (struct sockaddr *)&sin, 30000) : -1;
	s = c > 0 ? rdmashare_accept(rs, l, 30000) : -1;
	if (s > 0 && !rdmashare_send(rs, c, "alive", 6) &&
	    rdmashare_recv(rs, s, buf, sizeof(buf), 30000) == 6 && !strcmp(buf, "alive"))
		ret = 0;
	rdmashare_close(rs);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned long budget = 20000;
	unsigned int procs = 3, secs = 120, i, failed = 0;
	uint64_t seed = 0;
	int opt, st, acs_left = -1;
	double t0, end;
	pid_t *pids;

	while ((opt = getopt(argc, argv, "s:n:p:t:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': budget = strtoul(optarg, NULL, 0); break;
		case 'p': procs = strtoul(optarg, NULL, 0); break;
		case 't': secs = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: rsfuzz [-s SEED] [-n CALLS] [-p PROCS] [-t SECONDS]\n");
			return 2;
		}
	}
	if (!seed) {
		struct timeval tv;

		gettimeofday(&tv, NULL);
		seed = ((uint64_t)tv.tv_sec << 20) ^ tv.tv_usec ^ ((uint64_t)getpid() << 40);
	}
	self_ip = getenv("RS_IP") ?: "127.0.0.1";
	printf("# rsfuzz: seed %llu, %lu calls, %u processes, at most %u s\n",
	       (unsigned long long)seed, budget, procs, secs);
	fflush(stdout);
	calls = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(procs, sizeof(*pids));
	if (calls == MAP_FAILED || !pids || !procs)
		return 2;
	t0 = rs_now();
	end = t0 + secs;
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (!pids[i]) {
			/* A worker stuck in the kernel past the end is a failure. */
			alarm(secs + 60);
			worker(i, seed + i, budget, end);
		}
	}
	for (i = 0; i < procs; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st)) {
			printf("# rsfuzz: worker %u ended badly (status %#x)\n", i, st);
			failed++;
		}
	}
	printf("# rsfuzz: %lu calls in %.0f s; ioctls that succeeded: query %lu setup %lu "
	       "enter %lu listen %lu connect %lu accept %lu ac_set %lu ac_stats %lu\n",
	       *calls, rs_now() - t0, ok_cmds[0], ok_cmds[1], ok_cmds[2], ok_cmds[3],
	       ok_cmds[4], ok_cmds[5], ok_cmds[6], ok_cmds[7]);
	if (check_alive()) {
		printf("# rsfuzz: the module no longer carries a message\n");
		failed++;
	}
	for (i = 0; i < 300 && (acs_left = rs_device_acs()) != 0; i++)
		usleep(100000);
	if (acs_left) {
		printf("# rsfuzz: %d ACs left on the devices after every file closed\n", acs_left);
		failed++;
	}
	printf("# rsfuzz: %s (seed %llu)\n", failed ? "FAILED" : "ok", (unsigned long long)seed);
	return failed ? 1 : 0;
}
