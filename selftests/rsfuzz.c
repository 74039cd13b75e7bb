// SPDX-License-Identifier: GPL-2.0
/*
 * rsfuzz: a structure-aware fuzzer of rdmashare's whole user ABI.
 *
 *   rsfuzz [-s SEED] [-n CALLS] [-p PROCS] [-t SECONDS] [-d NETDEV]
 *
 * PROCS worker processes (default 3; every other one as the ordinary user
 * nobody, with its limits) share CALLS system calls on /dev/rdmashare and
 * its AC files (default 20000), for at most SECONDS (default 120): open
 * and close, every ioctl with fields that are valid, on a boundary or
 * random (sizes too small, exact, larger with zero or non-zero tails),
 * SETUP with a file area or not, mmap of every region with odd offsets,
 * lengths and flags, SQEs of every opcode written into the mapped SQ,
 * scribbled ring indices, ENTER, LISTEN of AC files or not (on an address
 * or all), CONNECT to this host, to nobody and to odd addresses with short
 * timeouts, ACCEPT, CONNECT (blocking or not) and ACCEPT of AC files with
 * odd file parameters, AC_SET, AC_STATS, FILE_INFO, fork with the files
 * shared, and SIGKILL of those children mid-call.
 *
 * Listening files (up to 4 a worker): LISTEN_FD on files set up or not,
 * with good, boundary and bad parameters (a struct too short for the
 * descriptor must fail with EINVAL); CONNECTs to their ports; ACCEPT on
 * them, nonblocking or waiting a few ms, with a listener id, a send
 * buffer, unknown flags or a short struct now and then, which gives AC
 * files like the others; poll; their other ioctls (ENOTTY), read and
 * write (which must fail with EINVAL); O_NONBLOCK on and off; close, also
 * while a second thread waits in their ACCEPT or poll.
 *
 * On the AC files (up to 16 a worker): read and write of sizes 0, 1, on a
 * boundary or large, with good, NULL, bad, partly unmapped and read-only
 * buffers; SENDMSG and RECVMSG with up to 8 such iovecs, socket flags
 * that make sense or any, and bad iovec arrays, counts and fields; poll;
 * their ioctls (SHUTDOWN one way or both, AC_SET and AC_STATS of ac 0 or
 * another, unknown commands); O_NONBLOCK on and off; dup and dup2, then
 * close of one copy; close; lseek, pread and pwrite, which must fail with
 * ESPIPE.  Close races: a second thread reads, writes or shuts down an AC
 * file, CONNECTs or ACCEPTs one, or ACCEPTs on or polls a listening file,
 * while the worker closes that file, closes the file that made it, or
 * does anything else.  A call that may wait runs on such a thread, which
 * SIGUSR1 stops if it waits long.  As root, zcopy_min is 4 KiB for the
 * run: most writes go from the writers' own pages.
 *
 * With -d NETDEV (as root; a spare link, RS_TEST_NETDEV in the tests),
 * device removal during traffic: NETDEV gets 198.19.2.1/24, and a
 * Soft-RoCE device on it comes and goes every few hundred ms while the
 * workers CONNECT to that address and send on what opens.
 *
 * The seed (random when not given) is printed first, so that a run can be
 * repeated.  Then it checks that the module survived: the device opens, a
 * pair of ACs to this host (RS_IP) carries a message, and every AC is gone
 * from the devices' gauges once the workers' files and AC files are
 * closed.  Exit status 0 when all holds; a worker that hangs is killed by
 * its alarm and fails the run.  The kernel's side (no splat, no leak at
 * unload) is the guest's verdict.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include "common.h"
#include "rdmashare.h"

#define MAX_FDS		4
#define MAX_ACS		32
#define MAX_ACFS	16
#define MAX_LFDS	4
#define NR_CMDS		12	/* QUERY to RECVMSG */
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* Device removal (-d): a device and an address of its own on the link. */
#define CHAOS_DEV	"rxe_fuzz"
#define CHAOS_IP	"198.19.2.1"

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

	return pick(4) ? b[pick(ARRAY_SIZE(b))] : rnd();
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
	uint32_t flisten;	/* a listener of AC files, for ACCEPT_FILE */
	uint32_t fport;		/* and its port */
};

/* An AC file, and the file that made it (while that descriptor lasts). */
struct acfile {
	int fd;
	struct fstate *maker;
	int maker_fd;
};

/* A listening file (LISTEN_FD), and its port for CONNECTs. */
struct lfile {
	int fd;
	uint32_t port;
};

/* Shared by the processes: what the run did, and when device removal stops. */
struct shared {
	unsigned long calls;
	unsigned long ok_cmds[NR_CMDS];	/* ioctls that succeeded, per command */
	unsigned long acfiles;		/* AC files made */
	unsigned long seekable;		/* seeks of AC files without ESPIPE */
	unsigned long lfiles;		/* listening files made */
	unsigned long lf_accepts;	/* AC files they gave */
	unsigned long lf_wrong;		/* their calls that did not fail as they must */
	unsigned long dev_adds;		/* times the device came */
	int stop;
};

static struct fstate fs[MAX_FDS];
static uint32_t acs[MAX_ACS];
static uint32_t ports[MAX_ACS];
static struct acfile acfs[MAX_ACFS];
static unsigned int acfs_next;
static struct lfile lfds[MAX_LFDS];
static const char *self_ip;
static int chaos;		/* CONNECTs over the device that comes and goes */
static struct shared *sh;

/*
 * Buffers for read(2) and write(2) of AC files: one that holds any size
 * asked, a page followed by an unmapped one (see worker()), and a
 * read-only page.
 */
static uint8_t iobuf[1 << 20];
static uint8_t *edge, *ro;

static void count(unsigned long *n)
{
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

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
	count(&sh->calls);
	if (!pick(50))
		return ioctl(fd, cmd, pick(2) ? NULL : (void *)(uintptr_t)boundary());
	ret = ioctl(fd, cmd, buf);
	if (!ret) {
		memcpy(arg, buf, exact);
		if (_IOC_NR(cmd) < NR_CMDS && _IOC_TYPE(cmd) == RDMASHARE_TYPE)
			count(&sh->ok_cmds[_IOC_NR(cmd)]);
	}
	return ret;
}

/* A system call that a second thread may make: see call_start(). */
struct call {
	long nr;
	long a[3];
	long ret;
	int done;
};

static void ioctl_call(struct call *c, int fd, unsigned int cmd, void *arg)
{
	c->nr = SYS_ioctl;
	c->a[0] = fd;
	c->a[1] = cmd;
	c->a[2] = (long)arg;
}

/* Installed without SA_RESTART: a call that waits ends, EINTR or short. */
static void on_usr1(int sig)
{
}

static void *make_call(void *arg)
{
	struct call *c = arg;

	c->ret = syscall(c->nr, c->a[0], c->a[1], c->a[2]);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* @c on a second thread, for call_end(); 0, or -1 if it did not start. */
static int call_start(struct call *c, pthread_t *t)
{
	count(&sh->calls);
	c->ret = -1;
	c->done = 0;
	return pthread_create(t, NULL, make_call, c) ? -1 : 0;
}

/*
 * Wait @ticks times 100 us for @c, then SIGUSR1 its thread every 100 us
 * until it returns: a read with nothing coming or a write without room
 * never hangs the worker.
 */
static void call_end(struct call *c, pthread_t t, unsigned int ticks)
{
	unsigned int i;

	for (i = 0; !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE); i++) {
		if (i >= ticks)
			pthread_kill(t, SIGUSR1);
		usleep(100);
	}
	pthread_join(t, NULL);
}

/* Mostly up to 2 ms, now and then up to 100: time for data to come. */
static unsigned int patience(void)
{
	return pick(4) ? pick(20) : pick(1000);
}

/* A call on an AC file: at once if it cannot wait, else on a second thread. */
static void acf_call(struct call *c)
{
	pthread_t t;

	if (fcntl(c->a[0], F_GETFL) & O_NONBLOCK) {
		count(&sh->calls);
		make_call(c);
	} else if (!call_start(c, &t)) {
		call_end(c, t, patience());
	}
}

static struct acfile *some_acfile(void)
{
	struct acfile *e = &acfs[pick(MAX_ACFS)];

	return e->fd > 0 ? e : NULL;
}

/* The file that made @e, if its descriptor is still the one that did. */
static struct fstate *acf_maker(struct acfile *e)
{
	return e->maker_fd > 0 && e->maker->fd == e->maker_fd ? e->maker : NULL;
}

static void close_acfile(struct acfile *e)
{
	count(&sh->calls);
	close(e->fd);
	e->fd = 0;
}

/* Keep AC file @fd of @maker (or none); the one kept longest ago goes if need be. */
static void keep_acfile(struct fstate *maker, int fd)
{
	struct acfile *e = &acfs[acfs_next++ % MAX_ACFS];

	count(&sh->acfiles);
	if (e->fd > 0)
		close_acfile(e);
	e->fd = fd;
	e->maker = maker;
	e->maker_fd = maker ? maker->fd : 0;
}

static struct lfile *some_lfile(void)
{
	struct lfile *l = &lfds[pick(MAX_LFDS)];

	return l->fd > 0 ? l : NULL;
}

static void close_lfile(struct lfile *l)
{
	count(&sh->calls);
	close(l->fd);
	memset(l, 0, sizeof(*l));
}

static void a_open(void)
{
	struct fstate *f = &fs[pick(MAX_FDS)];

	if (f->fd > 0)
		return;
	memset(f, 0, sizeof(*f));
	count(&sh->calls);
	f->fd = open("/dev/rdmashare", pick(8) ? O_RDWR : (int)f32(O_RDWR | O_NONBLOCK));
	if (f->fd < 0)
		f->fd = 0;
}

static void close_file(struct fstate *f)
{
	int first;

	/*
	 * The mappings go before the file or right after it (they keep the
	 * file alive, and its memory: kept, they would fill the guest).
	 */
	first = pick(2);
	if (first) {
		munmap(f->rings, f->rings_len);
		munmap(f->data, f->data_len);
	}
	count(&sh->calls);
	close(f->fd);
	if (!first) {
		if (f->rings && !pick(4))
			((volatile uint8_t *)f->rings)[pick(f->rings_len)];
		munmap(f->rings, f->rings_len);
		munmap(f->data, f->data_len);
	}
	memset(f, 0, sizeof(*f));
}

static void a_close(void)
{
	struct fstate *f = some_file();

	if (f)
		close_file(f);
}

/*
 * A file area's size: mostly room for 1 to 16 send buffers of 64 KiB, else
 * on a boundary or anything.  Not the 256 MiB limit itself: AC files keep
 * their maker's memory, and such areas kept would fill the guest (the data
 * area tries the limit).
 */
static uint64_t files_size(void)
{
	static const uint64_t b[] = {
		0, 1, 4095, 4096, 4097, 65535, 65536, 65537, 1 << 20, (1 << 28) + 1,
		1ULL << 32, ~0ULL,
	};

	switch (pick(8)) {
	case 0:
		return b[pick(ARRAY_SIZE(b))];
	case 1:
		return rnd();
	default:
		return (uint64_t)(1 + pick(16)) << 16;
	}
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
		if (pick(2)) {
			/* A file area: the file can make AC files. */
			p.flags = RDMASHARE_SETUP_FILES;
			p.files_size = files_size();
		}
	} else {
		p.flags = pick(4) ? 0 : f32(4);
		p.sq_entries = f32(4096);
		p.cq_entries = f32(8192);
		p.data_size = boundary();
		p.rx_slots = f32(4096);
		/* A file area with its flag, or either without the other. */
		p.files_size = pick(3) ? 0 : files_size();
		if (!pick(3))
			p.flags ^= RDMASHARE_SETUP_FILES;
		p.resv[pick(ARRAY_SIZE(p.resv))] = pick(4) ? 0 : boundary();
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
	count(&sh->calls);
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

/* The SQE @i places past the SQ tail, zeroed. */
static struct rdmashare_sqe *sqe_past_tail(struct fstate *f, uint32_t i)
{
	uint32_t tail = *ring_word(f, f->p.sq_off.tail);
	uint32_t mask = *ring_word(f, f->p.sq_off.ring_mask) & (f->p.sq_entries - 1);
	struct rdmashare_sqe *sqe;

	sqe = (struct rdmashare_sqe *)(f->rings + f->p.sq_off.entries) + ((tail + i) & mask);
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

/* Publish @n SQEs and ENTER them (or any number), maybe waiting a little. */
static void submit(struct fstate *f, uint32_t n)
{
	struct rdmashare_enter e = { .size = sizeof(e) };
	uint32_t *tail = ring_word(f, f->p.sq_off.tail);

	__atomic_store_n(tail, *tail + n, __ATOMIC_RELEASE);
	e.to_submit = pick(8) ? n : f32(1024);
	if (!pick(3)) {
		e.flags = RDMASHARE_ENTER_GETEVENTS;
		e.min_complete = pick(3);
		e.timeout_ms = 1 + pick(5);
	}
	do_ioctl(f->fd, RDMASHARE_IOC_ENTER, &e, sizeof(e));
}

static void a_sqes(void)
{
	struct fstate *f = some_file();
	struct rdmashare_sqe *sqe;
	uint32_t n, i;

	if (!f || !f->rings)
		return;
	n = 1 + pick(f->p.sq_entries);
	for (i = 0; i < n; i++) {
		sqe = sqe_past_tail(f, i);
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
	submit(f, n);
}

/* A SEND on @ac, which just opened: traffic while its device may go. */
static void send_on(struct fstate *f, uint32_t ac)
{
	struct rdmashare_sqe *sqe;

	if (!f->rings)
		return;
	sqe = sqe_past_tail(f, 0);
	sqe->opcode = RDMASHARE_OP_SEND;
	sqe->ac = ac;
	sqe->len = 1 + pick(4096);
	sqe->user_data = rnd();
	submit(f, 1);
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

static void some_addr(struct rdmashare_addr *a);

/* An address to listen on (RDMASHARE_LISTEN_ADDR), good or bad, IPv6-only or not. */
static void listen_addr(struct rdmashare_listen *l)
{
	l->flags |= RDMASHARE_LISTEN_ADDR | (pick(4) ? 0 : RDMASHARE_LISTEN_V6ONLY);
	some_addr(&l->local);
	if (pick(4))
		l->local.port = pick(2) ? 0 : l->port;
	if (!pick(4))
		memset(l->local.addr, 0, sizeof(l->local.addr));
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
	/* Of AC files: needs a file area. */
	if (f->p.files_size ? pick(2) : !pick(8))
		l.flags = RDMASHARE_LISTEN_FILES;
	if (!pick(4))
		listen_addr(&l);
	/* Shared ports: several listeners at once, connections dealt among them. */
	if (!pick(3))
		l.flags |= RDMASHARE_LISTEN_REUSEPORT;
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
		if (l.flags & RDMASHARE_LISTEN_FILES) {
			f->flisten = l.ac;
			f->fport = l.port;
		}
	}
}

/*
 * LISTEN_FD on a file, set up or not: a listening file, kept with its port
 * (the one kept there before closes); or bad arguments: another flag with
 * it, a non-zero fd or resv, unknown file flags, more send buffers than a
 * data area holds, odd receive slots; or an address, good or bad.  A
 * struct too short for the descriptor must fail with EINVAL.
 */
static void a_listen_fd(void)
{
	struct fstate *f = some_file();
	struct lfile *e = &lfds[pick(MAX_LFDS)];
	struct rdmashare_listen l = { .size = sizeof(l), .flags = RDMASHARE_LISTEN_FD };

	if (!f)
		return;
	/* Mostly ports of their own: a_listen()'s fill up. */
	l.port = pick(4) ? 30064 + pick(32) : pick(2) ? 30000 + pick(64) : f32(70000);
	l.backlog = pick(4) ? 1 + pick(16) : f32(2048);
	l.file.flags = pick(4);
	l.file.sndbuf = pick(2) ? 0 : 4096 << pick(5);
	l.max_files = pick(4) ? 1 + pick(8) : 0;
	l.rx_slots = pick(2) ? 0 : pick(65);
	switch (pick(12)) {
	case 0:
		/* EBADF: a file opened O_PATH (see a_open()). */
		l.size = 24 + 4 * pick(6);
		count(&sh->calls);
		if (ioctl(f->fd, RDMASHARE_IOC_LISTEN, &l) != -1 ||
		    (errno != EINVAL && errno != EBADF))
			count(&sh->lf_wrong);
		return;
	case 1:
		l.flags |= pick(2) ? RDMASHARE_LISTEN_FILES : rnd();
		break;
	case 2:
		l.file.fd = pick(2) ? -1 : (int)f32(64);
		break;
	case 3:
		*(pick(2) ? &l.resv : &l.file.resv) = f32(4);
		break;
	case 4:
		l.file.flags = f32(8);
		break;
	case 5:
		/* Never a file area that fits but fills the guest. */
		if (pick(2))
			l.max_files = boundary() | 1 << 17;
		else
			l.file.sndbuf = pick(2) ? ~0U - pick(4096) : boundary() | 1 << 29;
		break;
	case 6:
		l.rx_slots = f32(4096) | 1;
		break;
	case 7 ... 8:
		listen_addr(&l);
		break;
	case 9 ... 10:
		l.flags |= RDMASHARE_LISTEN_REUSEPORT;
		if (pick(2))
			listen_addr(&l);
		break;
	}
	if (do_ioctl(f->fd, RDMASHARE_IOC_LISTEN, &l, sizeof(l)))
		return;
	count(&sh->lfiles);
	remember(ports, l.port);
	if (e->fd > 0)
		close_lfile(e);
	e->fd = l.file.fd;
	e->port = l.port;
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
		inet_pton(AF_INET, v4[pick(ARRAY_SIZE(v4))] ?: self_ip, a->addr);
		if (!pick(10))
			a->addr[4 + pick(12)] = rnd();
		break;
	case 4:
		a->family = AF_INET6;
		inet_pton(AF_INET6, v6[pick(ARRAY_SIZE(v6))], a->addr);
		break;
	default:
		a->family = f32(64);
		for (unsigned int i = 0; i < sizeof(a->addr); i++)
			a->addr[i] = rnd();
		break;
	}
}

/* @ip of this host, port @port. */
static void host_peer(struct rdmashare_addr *a, const char *ip, uint32_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	inet_pton(AF_INET, ip, a->addr);
}

/* A port this worker listens on, now and then of AC files or a listening file. */
static uint32_t live_port(void)
{
	struct fstate *g = some_file();
	struct lfile *l = some_lfile();

	if (l && pick(2))
		return l->port;
	if (g && g->fport && pick(2))
		return g->fport;
	return ports[pick(4)] ?: ports[0];
}

/*
 * AC file parameters for a CONNECT or ACCEPT of @f: NONBLOCK, CLOEXEC and
 * a send buffer that fits, else unknown flags, a send buffer on a boundary
 * (the whole file area, a byte more, a page and a byte, 4 GiB), or a
 * non-zero fd or resv.
 */
static void file_params(struct fstate *f, struct rdmashare_file_params *p)
{
	static const uint32_t sndbufs[] = { 1, 4095, 4097, 0xffffffff };

	memset(p, 0, sizeof(*p));
	p->flags = pick(4);
	p->sndbuf = pick(2) ? 0 : 4096 << pick(5);
	switch (pick(12)) {
	case 0:
		p->flags = f32(8);
		break;
	case 1:
		p->sndbuf = f->p.files_size + pick(2);
		break;
	case 2:
		p->sndbuf = pick(2) ? sndbufs[pick(ARRAY_SIZE(sndbufs))] : f32(1 << 20);
		break;
	case 3:
		p->fd = pick(2) ? -1 : (int)f32(64);
		break;
	case 4:
		p->resv = f32(4);
		break;
	}
}

/*
 * A CONNECT or ACCEPT of @f succeeded: its AC is remembered, and its AC
 * file @fd (if it made one) kept.  With @send, it sends at once.
 */
static void opened(struct fstate *f, uint32_t ac, int fd, int send)
{
	struct call c = { .nr = SYS_write, .a = { fd, (long)iobuf, 1 + pick(65536) } };

	remember(acs, ac);
	if (fd > 0) {
		keep_acfile(f, fd);
		if (send)
			acf_call(&c);
	} else if (send) {
		send_on(f, ac);
	}
}

/*
 * A descriptor for RDMASHARE_CONNECT_PORT: a TCP socket bound to a port
 * (the one that works), unbound, listening, a UDP socket, or any number.
 * Made once per worker thread and kept: an AC holds its socket anyway.
 */
static int some_sock(void)
{
	static __thread int socks[4] = { -1, -1, -1, -1 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int i = pick(5);

	if (i == 4)
		return rnd();
	if (socks[i] < 0) {
		socks[i] = socket(AF_INET, (i == 3 ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
		if (socks[i] >= 0 && i != 1)
			bind(socks[i], (struct sockaddr *)&sin, sizeof(sin));
		if (socks[i] >= 0 && i == 2)
			listen(socks[i], 1);
	}
	return socks[i];
}

/*
 * CONNECT arguments for @f: see some_addr(); a third to a listener of this
 * worker, and with -d some over the device that comes and goes (returns 1
 * then); a third for an AC file; a sixth from a socket's port.
 */
static int connect_args(struct fstate *f, struct rdmashare_connect *c)
{
	int over_chaos = 0;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	some_addr(&c->peer);
	/* Short timeouts, 1 ms among them: QPs set up and given up on. */
	c->timeout_ms = pick(3) ? 1 + pick(50) : 1;
	if (!pick(3) && ports[0]) {
		/* One that should work: an AC to this host, for the SQEs. */
		host_peer(&c->peer, self_ip, live_port());
		c->timeout_ms = 3000;
	} else if (chaos && !pick(3)) {
		/* The device may be gone, or go meanwhile. */
		host_peer(&c->peer, CHAOS_IP, live_port());
		c->timeout_ms = pick(2) ? 1 + pick(50) : 1000;
		over_chaos = 1;
	}
	if (!pick(3)) {
		c->flags = RDMASHARE_CONNECT_FILE;
		/* Non-blocking: the AC file at once, connected or not later. */
		if (pick(2))
			c->flags |= RDMASHARE_CONNECT_NONBLOCK;
		file_params(f, &c->file);
	} else if (!pick(20)) {
		/* File parameters without the flag. */
		file_params(f, &c->file);
	}
	if (!pick(6)) {
		c->flags |= RDMASHARE_CONNECT_PORT;
		c->sock = some_sock();
	}
	if (!pick(10))
		c->flags = rnd();
	if (!pick(20))
		c->ac = rnd();
	if (!pick(40))
		c->resv = rnd();
	return over_chaos;
}

static void a_connect(void)
{
	struct fstate *f = some_file();
	struct rdmashare_connect c;
	int send;

	if (!f)
		return;
	send = connect_args(f, &c);
	if (!do_ioctl(f->fd, RDMASHARE_IOC_CONNECT, &c, sizeof(c)))
		opened(f, c.ac, c.flags & RDMASHARE_CONNECT_FILE ? c.file.fd : 0, send);
}

/*
 * ACCEPT arguments for @f: on its listener of AC files, which takes only
 * ACCEPT_FILE, or on any AC, which takes no such thing, mostly as each
 * wants; nonblocking, or waiting a few ms.
 */
static void accept_args(struct fstate *f, struct rdmashare_accept *a)
{
	int file;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	if (f->flisten && pick(2)) {
		a->listen_ac = f->flisten;
		file = pick(8);
	} else {
		a->listen_ac = some_ac();
		file = !pick(8);
	}
	if (file) {
		a->flags = RDMASHARE_ACCEPT_FILE;
		file_params(f, &a->file);
	}
	if (pick(4))
		a->flags |= RDMASHARE_ACCEPT_NONBLOCK;
	else
		a->timeout_ms = 1 + pick(5);
	if (!pick(10))
		a->flags = rnd();
	if (!pick(10))
		a->resv = rnd();
}

static void a_accept(void)
{
	struct fstate *f = some_file();
	struct rdmashare_accept a;

	if (!f)
		return;
	accept_args(f, &a);
	if (!do_ioctl(f->fd, RDMASHARE_IOC_ACCEPT, &a, sizeof(a)))
		opened(f, a.ac, a.flags & RDMASHARE_ACCEPT_FILE ? a.file.fd : 0, 0);
}

/*
 * QUERY, AC_SET, AC_STATS, SHUTDOWN and commands that do not exist, on
 * /dev/rdmashare or on an AC file (@acf): its AC_SET and AC_STATS want ac
 * 0, and it has no other command but SHUTDOWN.
 */
static void misc_ioctl(int fd, int acf)
{
	union {
		struct rdmashare_query q;
		struct rdmashare_ac_set s;
		struct rdmashare_ac_stats st;
		struct rdmashare_shutdown sd;
		struct rdmashare_file_info fi;
		uint8_t raw[512];
	} u;
	unsigned int i;

	memset(&u, 0, sizeof(u));
	switch (pick(6)) {
	case 0:
		u.q.flags = pick(4) ? 0 : rnd();
		do_ioctl(fd, RDMASHARE_IOC_QUERY, &u.q, sizeof(u.q));
		break;
	case 1:
		u.s.flags = pick(4);
		u.s.ac = acf && pick(4) ? 0 : pick(8) ? some_ac() : RDMASHARE_AC_FILE;
		u.s.weight = f32(1001);
		u.s.band = f32(3);
		do_ioctl(fd, RDMASHARE_IOC_AC_SET, &u.s, sizeof(u.s));
		break;
	case 2:
		u.st.ac = acf && pick(4) ? 0 : some_ac();
		if (!pick(10))
			u.st.resv[pick(4)] = rnd();
		do_ioctl(fd, RDMASHARE_IOC_AC_STATS, &u.st, sizeof(u.st));
		break;
	case 3:
		/* 0 or WR is SHUT_WR, RD SHUT_RD, both SHUT_RDWR. */
		u.sd.flags = pick(4) ? pick(4) : f32(3);
		do_ioctl(fd, RDMASHARE_IOC_SHUTDOWN, &u.sd, sizeof(u.sd));
		break;
	case 4:
		/* An AC file's names, queues and pending error (SO_ERROR). */
		u.fi.flags = pick(4) ? pick(2) : rnd();
		if (!pick(10))
			u.fi.resv = rnd();
		do_ioctl(fd, RDMASHARE_IOC_FILE_INFO, &u.fi, sizeof(u.fi));
		break;
	default:
		/*
		 * Commands that do not exist, and junk: any number for an AC
		 * file; for /dev/rdmashare, SHUTDOWN and above (a junk CONNECT
		 * could wait long).
		 */
		for (i = 0; i < sizeof(u.raw); i++)
			u.raw[i] = rnd();
		do_ioctl(fd, pick(2) ? _IO(RDMASHARE_TYPE, acf ? pick(16) : 8 + pick(8)) :
			 (unsigned int)rnd(), u.raw, 4 + pick(200));
		break;
	}
}

static void a_misc_ioctl(void)
{
	struct fstate *f = some_file();

	if (f)
		misc_ioctl(f->fd, 0);
}

/*
 * A buffer and a size for read(2) or write(2) of @c: 0, 1, on a boundary or
 * large, in a buffer that holds them; or NULL, (void *)1, a kernel address,
 * the unmapped page, bytes that run into it, or the read-only page, with
 * any size (a copy stops at the first fault).
 */
static void io_args(struct call *c)
{
	static const long sizes[] = {
		0, 1, 7, 4095, 4096, 4097, 65535, 65536, 65537, sizeof(iobuf),
	};
	static const unsigned long bad[] = {
		0, 1, 0xffff888000000000UL, ~0UL - 4095,
	};

	c->a[1] = (long)iobuf;
	c->a[2] = pick(2) ? sizes[pick(ARRAY_SIZE(sizes))] : (long)pick(sizeof(iobuf) + 1);
	switch (pick(8)) {
	case 0:
		c->a[1] = bad[pick(ARRAY_SIZE(bad))];
		break;
	case 1:
		c->a[1] = (long)(edge + 4096 - pick(4097));
		break;
	case 2:
		c->a[1] = (long)ro;
		break;
	default:
		return;
	}
	if (pick(2))
		c->a[2] = boundary();
}

static void acf_io(struct acfile *e)
{
	struct call c = { .nr = pick(2) ? SYS_read : SYS_write, .a = { e->fd } };

	io_args(&c);
	acf_call(&c);
}

/*
 * RECVMSG or SENDMSG of @e: up to 8 iovecs as io_args() makes buffers,
 * the flags a stream socket takes or any, and now and then a bad iovec
 * array, count or field.
 */
static void acf_msg(struct acfile *e)
{
	static const unsigned int good[] = {
		MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT, MSG_NOSIGNAL, MSG_MORE, MSG_EOR,
		MSG_CMSG_CLOEXEC,
	};
	struct rdmashare_msg m = { .size = sizeof(m) };
	struct iovec iov[8];
	struct call c, io;
	unsigned int i, n = pick(9);

	for (i = 0; i < n; i++) {
		io = (struct call){ .nr = 0 };
		io_args(&io);
		iov[i].iov_base = (void *)io.a[1];
		iov[i].iov_len = io.a[2];
	}
	m.iov = (uintptr_t)iov;
	m.iovcnt = n;
	for (i = pick(4); i; i--)
		m.msg_flags |= good[pick(ARRAY_SIZE(good))];
	switch (pick(12)) {
	case 0:
		m.msg_flags = rnd();
		break;
	case 1:
		/* The array itself faults, at once or part way. */
		m.iov = pick(2) ? 8 : (uintptr_t)(edge + 4096 - pick(sizeof(iov)));
		break;
	case 2:
		m.iovcnt = pick(2) ? 1024 + pick(4) : rnd();
		break;
	case 3:
		m.flags = rnd();
		break;
	case 4:
		m.resv = rnd();
		break;
	case 5:
		m.size = pick(sizeof(m) + 8);
		break;
	}
	ioctl_call(&c, e->fd, pick(2) ? RDMASHARE_IOC_SENDMSG : RDMASHARE_IOC_RECVMSG, &m);
	acf_call(&c);
	if (c.ret >= 0)
		count(&sh->ok_cmds[_IOC_NR(c.a[1])]);
}

/*
 * poll(2) of some AC files, files and listening files at once, with events
 * that make sense or any, without waiting (or 1 ms, which queues on their
 * waits).
 */
static void acf_poll(void)
{
	struct pollfd p[MAX_ACFS + MAX_FDS + MAX_LFDS];
	unsigned int i, n = 0;
	int fd;

	for (i = 0; i < ARRAY_SIZE(p); i++) {
		fd = i < MAX_ACFS ? acfs[i].fd : i < MAX_ACFS + MAX_FDS ? fs[i - MAX_ACFS].fd :
		     lfds[i - MAX_ACFS - MAX_FDS].fd;
		if (fd <= 0 || !pick(2))
			continue;
		p[n].fd = fd;
		p[n++].events = pick(2) ? POLLIN | POLLOUT | POLLRDHUP : rnd();
	}
	count(&sh->calls);
	poll(p, n, pick(4) ? 0 : 1);
}

/* O_NONBLOCK on or off (forked children's copies too), or another flag. */
static void acf_flags(struct acfile *e)
{
	int fl = fcntl(e->fd, F_GETFL);

	fl ^= pick(8) ? O_NONBLOCK : 1 << pick(22);
	count(&sh->calls);
	fcntl(e->fd, F_SETFL, fl);
}

/* dup(2), or dup2(2) onto another AC file (closing it); then one copy goes. */
static void acf_dup(struct acfile *e)
{
	struct acfile *o = some_acfile();
	int copy;

	count(&sh->calls);
	if (o && o->fd != e->fd) {
		copy = dup2(e->fd, o->fd);
		if (copy >= 0)
			o->fd = 0;
	} else {
		copy = dup(e->fd);
	}
	if (copy < 0)
		return;
	count(&sh->calls);
	if (pick(2)) {
		close(e->fd);
		e->fd = copy;
	} else {
		close(copy);
	}
}

/* A stream: lseek, pread and pwrite must fail with ESPIPE. */
static void acf_seek(struct acfile *e)
{
	long ret;

	count(&sh->calls);
	switch (pick(3)) {
	case 0:
		ret = lseek(e->fd, boundary(), pick(SEEK_HOLE + 1));
		break;
	case 1:
		ret = pread(e->fd, iobuf, pick(4097), boundary() >> 1);
		break;
	default:
		ret = pwrite(e->fd, iobuf, pick(4097), boundary() >> 1);
		break;
	}
	if (ret != -1 || errno != ESPIPE)
		count(&sh->seekable);
}

static void a_acfile(void)
{
	struct acfile *e = some_acfile();

	if (!e)
		return;
	switch (pick(16)) {
	case 0 ... 3: acf_io(e); break;
	case 4 ... 5: acf_msg(e); break;
	case 6 ... 7: acf_poll(); break;
	case 8 ... 10: misc_ioctl(e->fd, 1); break;
	case 11: acf_flags(e); break;
	case 12: acf_dup(e); break;
	case 13: acf_seek(e); break;
	default: close_acfile(e); break;
	}
}

/*
 * ACCEPT arguments for a listening file: mostly as it wants (listen_ac and
 * sndbuf 0, AC file flags, ACCEPT_FILE or not), else a listener id, a send
 * buffer, unknown flags or a non-zero fd or resv, which must fail.
 * Nonblocking or waiting a few ms (now and then both: EINVAL), never longer.
 */
static void lf_args(struct rdmashare_accept *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->flags = pick(2) ? RDMASHARE_ACCEPT_FILE : 0;
	a->file.flags = pick(4);
	if (pick(2))
		a->flags |= RDMASHARE_ACCEPT_NONBLOCK;
	if (!(a->flags & RDMASHARE_ACCEPT_NONBLOCK) || !pick(10))
		a->timeout_ms = 1 + pick(5);
	switch (pick(16)) {
	case 0: a->listen_ac = some_ac() ?: 1; break;
	case 1: a->file.sndbuf = pick(2) ? 4096 : boundary(); break;
	case 2: a->flags |= pick(2) ? 1U << pick(32) : rnd(); break;
	case 3: a->file.flags = f32(8); break;
	case 4: a->file.fd = pick(2) ? -1 : (int)f32(64); break;
	case 5: a->resv = f32(4); break;
	}
}

/* An ACCEPT on listening file @l, in any size (see do_ioctl()). */
static void lf_accept(struct lfile *l)
{
	struct rdmashare_accept a;

	lf_args(&a);
	if (!do_ioctl(l->fd, RDMASHARE_IOC_ACCEPT, &a, sizeof(a))) {
		count(&sh->lf_accepts);
		keep_acfile(NULL, a.file.fd);
	}
}

/* read(2) or write(2) of a listening file: EINVAL, whatever the buffer. */
static void lf_io(struct lfile *l)
{
	struct call c = { .nr = pick(2) ? SYS_read : SYS_write, .a = { l->fd } };

	io_args(&c);
	count(&sh->calls);
	make_call(&c);
	if (c.ret != -1 || errno != EINVAL)
		count(&sh->lf_wrong);
}

static void a_lfile(void)
{
	struct lfile *l = some_lfile();

	if (!l)
		return;
	switch (pick(12)) {
	case 0 ... 4: lf_accept(l); break;
	case 5 ... 6: acf_poll(); break;
	case 7 ... 8: misc_ioctl(l->fd, 1); break;
	case 9: lf_io(l); break;
	case 10: acf_flags(&(struct acfile){ .fd = l->fd }); break;
	default: close_lfile(l); break;
	}
}

static void one_action(void);

/*
 * A close race: a second thread reads, writes or shuts down an AC file,
 * CONNECTs or ACCEPTs an AC file on the file that made it, or waits a few
 * ms in ACCEPT or poll of a listening file, while this one closes the AC
 * or listening file, closes the maker's descriptor (the AC files keep its
 * memory), or does anything else.
 */
static void a_race(void)
{
	static int racing;
	struct acfile *e = some_acfile();
	struct fstate *f = e ? acf_maker(e) : some_file();
	struct lfile *l = pick(3) ? NULL : some_lfile();
	struct pollfd p;
	union {
		struct rdmashare_connect c;
		struct rdmashare_accept a;
		struct rdmashare_shutdown sd;
	} u;
	struct call c;
	pthread_t t;

	/* One at a time: what this thread does meanwhile may be a_race(). */
	if (racing || (!e && !f && !l))
		return;
	switch (l ? 4 + pick(2) : e ? pick(f ? 4 : 2) : 2 + pick(2)) {
	case 0:
		c.nr = pick(2) ? SYS_read : SYS_write;
		c.a[0] = e->fd;
		io_args(&c);
		break;
	case 1:
		u.sd = (struct rdmashare_shutdown){ .size = sizeof(u.sd), .flags = pick(4) };
		ioctl_call(&c, e->fd, RDMASHARE_IOC_SHUTDOWN, &u.sd);
		break;
	case 2:
		connect_args(f, &u.c);
		ioctl_call(&c, f->fd, RDMASHARE_IOC_CONNECT, &u.c);
		break;
	case 3:
		accept_args(f, &u.a);
		ioctl_call(&c, f->fd, RDMASHARE_IOC_ACCEPT, &u.a);
		break;
	case 4:
		lf_args(&u.a);
		u.a.flags &= ~RDMASHARE_ACCEPT_NONBLOCK;
		u.a.timeout_ms = 1 + pick(5);
		ioctl_call(&c, l->fd, RDMASHARE_IOC_ACCEPT, &u.a);
		break;
	default:
		p = (struct pollfd){ .fd = l->fd, .events = POLLIN };
		c.nr = SYS_poll;
		c.a[0] = (long)&p;
		c.a[1] = 1;
		c.a[2] = 1 + pick(5);
		break;
	}
	if (call_start(&c, &t))
		return;
	racing = 1;
	switch (pick(3)) {
	case 0:
		if (l)
			close_lfile(l);
		else if (e)
			close_acfile(e);
		break;
	case 1:
		if (f)
			close_file(f);
		break;
	default:
		one_action();
		break;
	}
	racing = 0;
	call_end(&c, t, patience());
	if (c.ret || c.nr != SYS_ioctl)
		return;
	if (l) {
		count(&sh->lf_accepts);
		keep_acfile(NULL, u.a.file.fd);
	} else if (c.a[1] == RDMASHARE_IOC_CONNECT)
		opened(f, u.c.ac, u.c.flags & RDMASHARE_CONNECT_FILE ? u.c.file.fd : 0, 0);
	else if (c.a[1] == RDMASHARE_IOC_ACCEPT)
		opened(f, u.a.ac, u.a.flags & RDMASHARE_ACCEPT_FILE ? u.a.file.fd : 0, 0);
}

/*
 * A child that shares the files, AC files, listening files and mappings,
 * does a few calls, and may be killed.
 */
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
	switch (pick(43)) {
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
	case 31 ... 37: a_acfile(); break;
	case 38: a_race(); break;
	case 39: a_listen_fd(); break;
	case 40 ... 41: a_lfile(); break;
	default: a_fork(); break;
	}
}

static void worker(unsigned int i, uint64_t seed, unsigned long budget, double end)
{
	struct sigaction usr1 = { .sa_handler = on_usr1 };

	rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGUSR1, &usr1, NULL);
	/*
	 * A read-only page; a page, an unmapped one, and one without access:
	 * a copy that runs past the first stops in the hole or, should a
	 * mapping of one page (an rdmashare one) come to fill it, at the last.
	 */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	edge = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED || edge == MAP_FAILED || munmap(edge + 4096, 4096) ||
	    mprotect(edge + 8192, 4096, PROT_NONE))
		_exit(4);
	/* Every other worker is an ordinary user, with its limits. */
	if ((i & 1) && !getuid() && (setgid(65534) || setuid(65534)))
		_exit(3);
	while (__atomic_load_n(&sh->calls, __ATOMIC_RELAXED) < budget && rs_now() < end)
		one_action();
	/* Its files, AC files and listening files close as it exits. */
	_exit(0);
}

/* The device and the address of device removal go. */
static void chaos_end(const char *netdev)
{
	rs_sh("rdma link delete " CHAOS_DEV " >/dev/null 2>&1");
	rs_sh("ip addr del " CHAOS_IP "/24 dev %s >/dev/null 2>&1", netdev);
}

/* Device removal on @netdev: its address; 0, or -1 (not root, no link). */
static int chaos_begin(const char *netdev)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/net/%s", netdev);
	if (geteuid() || !rs_path_exists(path))
		return -1;
	/* What a run that was killed left. */
	chaos_end(netdev);
	return rs_sh("ip addr add " CHAOS_IP "/24 dev %s", netdev) ? -1 : 0;
}

/* The process that adds and deletes the device until told to stop. */
static void chaos_loop(const char *netdev, uint64_t seed)
{
	int up = 0;

	rng = seed ^ 0xC4A05C4A05ULL;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		if (up) {
			rs_sh("rdma link delete " CHAOS_DEV " >/dev/null 2>&1");
			up = 0;
		} else if (!rs_sh("rdma link add " CHAOS_DEV " type rxe netdev %s >/dev/null 2>&1",
				  netdev)) {
			count(&sh->dev_adds);
			up = 1;
		}
		usleep(100000 + pick(400000));
	}
	_exit(0);
}

/*
 * The end of device removal: the process stops at its next turn, the
 * device and the address go.  0, or -1 if the process ended badly or never
 * added the device.
 */
static int chaos_stop(const char *netdev, pid_t pid)
{
	int st;

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	st = rs_wait_child(pid);
	chaos_end(netdev);
	printf("# rsfuzz: %s on %s came %lu times\n", CHAOS_DEV, netdev, sh->dev_adds);
	if (st)
		printf("# rsfuzz: adding and deleting %s ended badly (status %d)\n", CHAOS_DEV, st);
	return st || !sh->dev_adds ? -1 : 0;
}

/* A tunable of the module, 0 if it cannot be read. */
static unsigned long tunable(const char *name)
{
	char path[128], buf[32];

	snprintf(path, sizeof(path), RS_SYSFS "/%s", name);
	return rs_read_file(path, buf, sizeof(buf)) ? 0 : strtoul(buf, NULL, 10);
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
	static const char *const cmds[NR_CMDS] = {
		"query", "setup", "enter", "listen", "connect", "accept", "ac_set", "ac_stats",
		"shutdown", "file_info", "sendmsg", "recvmsg",
	};
	unsigned long budget = 20000, settle;
	unsigned int procs = 3, secs = 120, i, failed = 0;
	const char *netdev = NULL;
	char linger[32] = "", zcopy_min[32] = "";
	uint64_t seed = 0;
	int opt, st, acs_left = -1;
	pid_t *pids, chaos_pid = -1;
	double t0, end;

	while ((opt = getopt(argc, argv, "s:n:p:t:d:")) != -1) {
		switch (opt) {
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': budget = strtoul(optarg, NULL, 0); break;
		case 'p': procs = strtoul(optarg, NULL, 0); break;
		case 't': secs = strtoul(optarg, NULL, 0); break;
		case 'd': netdev = optarg; break;
		default:
			fputs("usage: rsfuzz [-s SEED] [-n CALLS] [-p PROCS] [-t SECONDS] [-d NETDEV]\n",
			      stderr);
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
	if (netdev && chaos_begin(netdev)) {
		printf("# rsfuzz: no device removal: it needs root and the link %s\n", netdev);
		netdev = NULL;
	}
	chaos = !!netdev;
	fflush(stdout);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pids = calloc(procs, sizeof(*pids));
	if (sh == MAP_FAILED || !pids || !procs)
		return 2;
	/*
	 * An AC file closed with data unsent lingers linger_ms (60 s by
	 * default) when its peer does not read: as root, 200 ms for the AC
	 * files this run closes, so that the check below needs not wait that
	 * long; the old value comes back at the end.
	 */
	if (!geteuid() && !rs_read_file(RS_SYSFS "/linger_ms", linger, sizeof(linger)) &&
	    rs_write_file(RS_SYSFS "/linger_ms", "200"))
		linger[0] = 0;
	/*
	 * Writes of 4 KiB and more from user memory go from the writers'
	 * pages (zcopy.c), with the buffers above, the RLIMIT_MEMLOCK of
	 * nobody, signals and closes; the old value comes back at the end.
	 */
	if (!geteuid() && !rs_read_file(RS_SYSFS "/zcopy_min", zcopy_min, sizeof(zcopy_min)) &&
	    rs_write_file(RS_SYSFS "/zcopy_min", "4096"))
		zcopy_min[0] = 0;
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
	if (chaos) {
		chaos_pid = fork();
		if (!chaos_pid) {
			alarm(secs + 120);
			chaos_loop(netdev, seed);
		}
	}
	for (i = 0; i < procs; i++) {
		st = rs_wait_child(pids[i]);
		if (st) {
			printf("# rsfuzz: worker %u ended badly (status %d)\n", i, st);
			failed++;
		}
	}
	if (chaos && chaos_stop(netdev, chaos_pid))
		failed++;
	printf("# rsfuzz: %lu calls in %.0f s; ioctls that succeeded:", sh->calls, rs_now() - t0);
	for (i = 0; i < NR_CMDS; i++)
		printf(" %s %lu", cmds[i], sh->ok_cmds[i]);
	printf("; %lu AC files made\n", sh->acfiles);
	printf("# rsfuzz: %lu listening files made, %lu AC files accepted on them\n",
	       sh->lfiles, sh->lf_accepts);
	if (sh->lf_wrong) {
		printf("# rsfuzz: %lu short LISTEN_FDs, reads or writes of listening files"
		       " without EINVAL\n", sh->lf_wrong);
		failed++;
	}
	if (sh->seekable) {
		printf("# rsfuzz: %lu seeks, preads or pwrites of AC files without ESPIPE\n",
		       sh->seekable);
		failed++;
	}
	if (check_alive()) {
		printf("# rsfuzz: the module no longer carries a message\n");
		failed++;
	}
	/*
	 * Every file closed, the ACs go: an AC file's once linger_ms passed,
	 * one in quarantine once the peer's CLOSE came or connect_timeout_ms
	 * passed; 30 s for the rest.  In tenths of a second.
	 */
	settle = 300 + (tunable("linger_ms") + tunable("connect_timeout_ms")) / 100;
	for (i = 0; i < settle && (acs_left = rs_device_acs()) != 0; i++)
		usleep(100000);
	if (acs_left) {
		printf("# rsfuzz: %d ACs left on the devices after every file closed\n", acs_left);
		failed++;
	}
	if (linger[0])
		rs_write_file(RS_SYSFS "/linger_ms", linger);
	if (zcopy_min[0])
		rs_write_file(RS_SYSFS "/zcopy_min", zcopy_min);
	printf("# rsfuzz: %s (seed %llu)\n", failed ? "FAILED" : "ok", (unsigned long long)seed);
	return failed ? 1 : 0;
}
