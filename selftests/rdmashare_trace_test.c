// SPDX-License-Identifier: GPL-2.0
/*
 * rdmashare's tracepoints fire, as many times as the traffic says: with
 * events/rdmashare enabled in tracefs, one AC on a fresh QP to this host
 * carries 10 messages each way with one credit per AC, closes, and the QP
 * goes idle and down.  The trace must show the QPs up and down, both ends
 * of the AC opened and closed once, exactly 20 DATA messages, one CONNECT,
 * ACCEPT and CLOSE, 20 SEND completions, credit stalls, and at least the
 * credits the senders needed.
 * keepalive: with keepalive_ms 100 both QPs of an idle AC send KEEPALIVEs
 * ten times a second; with 0 they stop at once.
 * accept_maps_nothing: a completion handler does not map a data area (the
 * second review, finding 6): the longest run of the QPs' completion work
 * while a listener with 256 MiB accepts is about that of one with 1 MiB.
 */
#include <arpa/inet.h>

#include "common.h"
#include "rdmashare.h"

#include "kselftest_harness.h"

#define PORT		7700
#define TRACING		"/sys/kernel/tracing"
#define EVENTS		TRACING "/events/rdmashare/enable"
#define POST_EVENT	TRACING "/events/rdmashare/rdmashare_msg_post/enable"
#define WQ_EVENTS	TRACING "/events/workqueue"
#define WQ_START	WQ_EVENTS "/workqueue_execute_start/enable"
#define WQ_END		WQ_EVENTS "/workqueue_execute_end/enable"
#define RECORD_CMD	TRACING "/options/record-cmd"
#define TRACING_ON	TRACING "/tracing_on"
#define NMSG		10
#define MSG_LEN		100

static struct sockaddr_in addr_of(unsigned int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, getenv("RS_IP") ?: "127.0.0.1", &sin.sin_addr);
	return sin;
}

/* The whole trace buffer, NUL-terminated; NULL on failure. */
static char *read_trace(void)
{
	size_t len = 0, room = 1 << 20;
	char *buf = malloc(room);
	ssize_t n;
	int fd;

	fd = open(TRACING "/trace", O_RDONLY);
	if (fd < 0 || !buf) {
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, room - len - 1)) > 0) {
		len += n;
		if (room - len < 4096) {
			char *more = realloc(buf, room * 2);

			if (!more)
				break;
			buf = more;
			room *= 2;
		}
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/* Lines of @trace with event @event and, if given, the text @with. */
static int count(const char *trace, const char *event, const char *with)
{
	char tag[64];
	const char *p = trace, *eol;
	int n = 0;

	snprintf(tag, sizeof(tag), " %s: ", event);
	while ((p = strstr(p, tag))) {
		eol = strchr(p, '\n') ?: p + strlen(p);
		if (!with || (memmem(p, eol - p, with, strlen(with))))
			n++;
		p = eol;
	}
	return n;
}

/* The sum of the numbers after "@key " on @event's lines. */
static long sum(const char *trace, const char *event, const char *key)
{
	char tag[64], k[64];
	const char *p = trace, *eol, *v;
	long total = 0;

	snprintf(tag, sizeof(tag), " %s: ", event);
	snprintf(k, sizeof(k), " %s ", key);
	while ((p = strstr(p, tag))) {
		eol = strchr(p, '\n') ?: p + strlen(p);
		v = memmem(p, eol - p, k, strlen(k));
		if (v)
			total += strtol(v + strlen(k), NULL, 10);
		p = eol;
	}
	return total;
}

FIXTURE(tr) {
	char idle[32];
	char credits[32];
	char keepalive[32];
	char record_cmd[8];
};

/*
 * Each event enabled or disabled patches the kernel's text live (a static
 * key per tracepoint), and with the record-cmd option set, the first event
 * enabled and the last disabled also patch sched_switch and sched_wakeup,
 * which run all the time on every CPU.  QEMU's multi-threaded TCG sometimes
 * runs a site while it is being patched and the guest dies of an int3 (see
 * rs_emulator_int3 in vm/lib.sh); it did in __schedule once, during
 * accept_maps_nothing.  So these tests patch as little as they can: no
 * command-line recording (the traces are read by event, not by task), and
 * events enabled once per test, with tracing_on (no patching) to frame what
 * is measured.
 */

FIXTURE_SETUP(tr)
{
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/idle_timeout_ms", self->idle, sizeof(self->idle)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/credits_per_ac", self->credits,
				  sizeof(self->credits)));
	ASSERT_EQ(0, rs_read_file(RS_SYSFS "/keepalive_ms", self->keepalive,
				  sizeof(self->keepalive)));
	if (!rs_read_file(RECORD_CMD, self->record_cmd, sizeof(self->record_cmd)))
		ASSERT_EQ(0, rs_write_file(RECORD_CMD, "0"));
}

FIXTURE_TEARDOWN(tr)
{
	rs_write_file(EVENTS, "0");
	rs_write_file(WQ_START, "0");
	rs_write_file(WQ_END, "0");
	rs_write_file(TRACING_ON, "1");
	if (self->record_cmd[0])
		rs_write_file(RECORD_CMD, self->record_cmd);
	rs_write_file(RS_SYSFS "/idle_timeout_ms", self->idle);
	rs_write_file(RS_SYSFS "/credits_per_ac", self->credits);
	rs_write_file(RS_SYSFS "/keepalive_ms", self->keepalive);
}

/* Empty the trace buffer. */
static int clear_trace(void)
{
	int fd = open(TRACING "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

TEST_F_TIMEOUT(tr, events, 180)
{
	struct rdmashare *c, *s;
	struct sockaddr_in sin = addr_of(PORT);
	char msg[MSG_LEN], in[MSG_LEN];
	int l, cac, sac, i, fd;
	char *trace;

	if (access(EVENTS, W_OK))
		SKIP(return, "no rdmashare events in tracefs at " TRACING);

	/*
	 * A fresh QP: whatever earlier tests left goes idle and down.  Then
	 * a long idle timeout while the AC opens: with 100 ms, the passive
	 * QP, which has no AC until the CONNECT comes, could go down first
	 * on a slow guest (the CONNECT is then retried on a new QP pair, and
	 * the trace shows two).  100 ms again once the ACs are closed.
	 */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "100"));
	ASSERT_EQ(0, rs_wait_qps(0, 30));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "60000"));
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/credits_per_ac", "1"));
	fd = open(TRACING "/trace", O_WRONLY | O_TRUNC);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, rs_write_file(EVENTS, "1"));

	c = rs_open_setup(1 << 20, 16);
	s = rs_open_setup(1 << 20, 16);
	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, s);
	l = rdmashare_listen(s, PORT, 4);
	ASSERT_LE(0, l);
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	ASSERT_LE(0, cac);
	sac = rdmashare_accept(s, l, 20000);
	ASSERT_LE(0, sac);

	/* Back to back, with one credit: the sender stalls. */
	for (i = 0; i < NMSG; i++) {
		memset(msg, 'a' + i, sizeof(msg));
		ASSERT_EQ(0, rdmashare_send(c, cac, msg, sizeof(msg)));
	}
	for (i = 0; i < NMSG; i++) {
		ASSERT_EQ(MSG_LEN, rdmashare_recv(s, sac, in, sizeof(in), 10000));
		ASSERT_EQ('a' + i, in[0]);
		ASSERT_EQ(0, rdmashare_send(s, sac, in, sizeof(in)));
	}
	for (i = 0; i < NMSG; i++)
		ASSERT_EQ(MSG_LEN, rdmashare_recv(c, cac, in, sizeof(in), 10000));
	ASSERT_EQ(0, rdmashare_flush(c, 10000));
	ASSERT_EQ(0, rdmashare_flush(s, 10000));
	/*
	 * Two CLOSEs on the wire: the client's, and the server's answer to it
	 * (version 4), which gives the client its slots back.  The server's
	 * own close later sends nothing.
	 */
	ASSERT_EQ(0, rdmashare_close_ac(c, cac));
	ASSERT_EQ(-EPIPE, rdmashare_recv(s, sac, in, sizeof(in), 10000));
	ASSERT_EQ(0, rdmashare_close_ac(s, sac));
	ASSERT_EQ(0, rdmashare_close_ac(s, l));
	rdmashare_close(c);
	rdmashare_close(s);
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/idle_timeout_ms", "100"));
	EXPECT_EQ(0, rs_wait_qps(0, 30));
	ASSERT_EQ(0, rs_write_file(EVENTS, "0"));

	trace = read_trace();
	ASSERT_NE(NULL, trace);
	/* Both ends of the loopback connection: the active QP and the passive. */
	EXPECT_EQ(2, count(trace, "rdmashare_qp_up", NULL));
	EXPECT_EQ(2, count(trace, "rdmashare_qp_down", NULL));
	EXPECT_EQ(2, count(trace, "rdmashare_ac_open", NULL));
	EXPECT_EQ(1, count(trace, "rdmashare_ac_close", "by app"));
	EXPECT_EQ(1, count(trace, "rdmashare_ac_close", "by peer"));
	EXPECT_EQ(2 * NMSG, count(trace, "rdmashare_msg_post", " DATA "));
	EXPECT_EQ(2 * NMSG, count(trace, "rdmashare_msg_post", " len 100 "));
	EXPECT_EQ(1, count(trace, "rdmashare_msg_post", " CONNECT "));
	EXPECT_EQ(1, count(trace, "rdmashare_msg_post", " ACCEPT "));
	EXPECT_EQ(2, count(trace, "rdmashare_msg_post", " CLOSE "));
	EXPECT_EQ(2 * NMSG, count(trace, "rdmashare_op_done", "res 100"));
	EXPECT_LE(2, count(trace, "rdmashare_credit_stall", NULL));
	/* Each sender had one credit and sent NMSG chunks. */
	EXPECT_LE(2 * (NMSG - 1), sum(trace, "rdmashare_credit_grant", "granted"));
	if (_metadata->exit_code)
		fprintf(stderr, "%s", trace);
	free(trace);
}

/* Two handles with an AC between them on @port; 0, or -1 if one failed. */
static int ac_pair(unsigned int port, struct rdmashare **c, struct rdmashare **s,
		   int *cac, int *sac)
{
	struct sockaddr_in sin = addr_of(port);
	int l;

	*c = rs_open_setup(1 << 20, 16);
	*s = rs_open_setup(1 << 20, 16);
	if (!*c || !*s)
		return -1;
	l = rdmashare_listen(*s, port, 4);
	if (l < 0)
		return -1;
	*cac = rdmashare_connect(*c, (struct sockaddr *)&sin, 20000);
	*sac = *cac < 0 ? -1 : rdmashare_accept(*s, l, 20000);
	return *sac < 0 ? -1 : 0;
}

TEST_F_TIMEOUT(tr, keepalive, 120)
{
	struct rdmashare *c = NULL, *s = NULL;
	int cac, sac, n;
	char *trace;

	if (access(POST_EVENT, W_OK))
		SKIP(return, "no rdmashare events in tracefs at " TRACING);
	EXPECT_STREQ("2000", self->keepalive);
	ASSERT_EQ(0, ac_pair(PORT + 1, &c, &s, &cac, &sac));

	ASSERT_EQ(0, rs_write_file(TRACING_ON, "0"));
	ASSERT_EQ(0, rs_write_file(POST_EVENT, "1"));
	/* At once, on the QPs already up. */
	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/keepalive_ms", "100"));
	ASSERT_EQ(0, clear_trace());
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "1"));
	usleep(1500000);
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "0"));
	trace = read_trace();
	ASSERT_NE(NULL, trace);
	n = count(trace, "rdmashare_msg_post", " KEEPALIVE ");
	free(trace);
	TH_LOG("keepalive_ms 100: %d KEEPALIVEs in 1.5 s on 2 QPs", n);
	EXPECT_LE(10, n);
	EXPECT_GE(40, n);

	ASSERT_EQ(0, rs_write_file(RS_SYSFS "/keepalive_ms", "0"));
	usleep(200000);		/* a probe already being sent */
	ASSERT_EQ(0, clear_trace());
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "1"));
	usleep(1000000);
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "0"));
	ASSERT_EQ(0, rs_write_file(POST_EVENT, "0"));
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "1"));
	trace = read_trace();
	ASSERT_NE(NULL, trace);
	EXPECT_EQ(0, count(trace, "rdmashare_msg_post", " KEEPALIVE "));
	free(trace);
	rdmashare_close(c);
	rdmashare_close(s);
}

/*
 * The longest run of the QPs' completion work (rs_cq_work) in @trace, in
 * microseconds: from each workqueue_execute_start to the end of the same
 * work item (a work item never runs twice at once).  -1 if none ran.
 */
static double longest_cq_work(const char *trace)
{
	static const char start[] = ": workqueue_execute_start: work struct ";
	static const char end[] = ": workqueue_execute_end: work struct ";
	const char *p, *eol, *w, *t;
	char work[2][32] = { "", "" };
	double began[2] = { 0 }, ts, longest = -1;
	int i, n;

	for (p = trace; *p; p = *eol ? eol + 1 : eol) {
		eol = strchr(p, '\n') ?: p + strlen(p);
		if (!memmem(p, eol - p, "function rs_cq_work", 19))
			continue;
		w = memmem(p, eol - p, start, sizeof(start) - 1);
		n = sizeof(start) - 1;
		if (!w) {
			w = memmem(p, eol - p, end, sizeof(end) - 1);
			n = sizeof(end) - 1;
		}
		if (!w)
			continue;
		/* The timestamp is the word before the event's name. */
		for (t = w; t > p && t[-1] != ' '; t--)
			;
		ts = strtod(t, NULL) * 1e6;
		w += n;
		/* One QP pair to this host: at most two CQ works. */
		if (n == sizeof(start) - 1) {
			i = work[0][0] && strncmp(work[0], w, strcspn(w, ":")) ? 1 : 0;
			snprintf(work[i], sizeof(work[i]), "%.*s", (int)strcspn(w, ":"), w);
			began[i] = ts;
			continue;
		}
		for (i = 0; i < 2; i++) {
			if (work[i][0] && !strncmp(work[i], w, strcspn(w, ":")) && began[i]) {
				if (ts - began[i] > longest)
					longest = ts - began[i];
				began[i] = 0;
			}
		}
	}
	return longest;
}

/*
 * A listener of @size bytes of data area accepts one AC from @c on
 * @port: the longest CQ work run while it does, in microseconds.
 */
static double accept_cq_work(struct rdmashare *c, size_t size, unsigned int port)
{
	struct sockaddr_in sin = addr_of(port);
	struct rdmashare *s;
	double longest = -1;
	int l, cac, sac;
	char *trace;

	s = rs_open_setup(size, 16);
	if (!s)
		return -1;
	l = rdmashare_listen(s, port, 4);
	if (l < 0 || clear_trace() || rs_write_file(TRACING_ON, "1"))
		goto out;
	cac = rdmashare_connect(c, (struct sockaddr *)&sin, 20000);
	sac = rdmashare_accept(s, l, 20000);
	rs_write_file(TRACING_ON, "0");
	if (cac < 0 || sac < 0)
		goto out;
	trace = read_trace();
	if (trace)
		longest = longest_cq_work(trace);
	free(trace);
	rdmashare_close_ac(c, cac);
out:
	rdmashare_close(s);
	return longest;
}

TEST_F_TIMEOUT(tr, accept_maps_nothing, 180)
{
	double small = 1e9, large = 1e9, t;
	struct rdmashare *c = NULL, *s = NULL;
	int cac, sac, i;

	if (access(WQ_START, W_OK) || access(WQ_END, W_OK))
		SKIP(return, "no workqueue events in tracefs at " TRACING);
	/* The QPs up first, to see only the accepts. */
	ASSERT_EQ(0, ac_pair(PORT + 2, &c, &s, &cac, &sac));
	/* Enabled once; each accept_cq_work() turns tracing on and off. */
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "0"));
	ASSERT_EQ(0, rs_write_file(WQ_START, "1"));
	ASSERT_EQ(0, rs_write_file(WQ_END, "1"));

	/*
	 * Interleaved, the least of three each: mapping costs every time (a
	 * new file each), a guest's noise only now and then.
	 */
	/* -1: no CQ work ran; 0: it ran within the trace's microsecond. */
	for (i = 0; i < 3; i++) {
		t = accept_cq_work(c, 1 << 20, PORT + 3);
		ASSERT_LE(0, t);
		small = t < small ? t : small;
		t = accept_cq_work(c, 256 << 20, PORT + 3);
		ASSERT_LE(0, t);
		large = t < large ? t : large;
	}
	TH_LOG("longest CQ work while accepting: %.0f us with 1 MiB, %.0f us with 256 MiB",
	       small, large);
	/* Mapping 256 MiB in the handler took over ten times as long. */
	EXPECT_GT(4 * small + 1500, large);
	ASSERT_EQ(0, rs_write_file(WQ_START, "0"));
	ASSERT_EQ(0, rs_write_file(WQ_END, "0"));
	ASSERT_EQ(0, rs_write_file(TRACING_ON, "1"));
	rdmashare_close(c);
	rdmashare_close(s);
}

TEST_HARNESS_MAIN
