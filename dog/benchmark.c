// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog benchmark io <vdi>: a load generator speaking the Sheepdog protocol
 * (dog.md §5.1, redefined: the original's round-robin full-object writes
 * were no useful reference).
 *
 * It drives READ_OBJ / WRITE_OBJ against the data objects of a fully
 * allocated VDI ("dog vdi create -P") with many requests in flight on one
 * connection, pipelined by request id and answered in completion order
 * (protocol.md §4.3), and reports IOPS, bandwidth and latency percentiles
 * measured per request with CLOCK_MONOTONIC from the moment a request is
 * queued for sending until its response has been read completely.
 *
 * Data is verified: every 4 KiB block written carries a self-describing
 * pattern (magic, block number, stamp, and words derived from them), and
 * every block read must be either all zeros or such a pattern for its own
 * block number; a block written by this run must carry exactly the stamp
 * of its last acknowledged write.  Two requests in flight never overlap,
 * so there is never an ambiguity about which write a read must see.
 *
 * Everything runs on one thread with a non-blocking socket and poll(2):
 * requests are written with sendmsg() in batches, responses are read in
 * large chunks and parsed from a buffer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "dog.h"
#include "net.h"
#include "proto.h"
#include "util.h"

#define BENCH_MAX_DEPTH		256
#define BENCH_VERIFY_BLOCK	4096U
#define BENCH_MAGIC		UINT64_C(0x4b656c7069654221)	/* "Kelpie!" */
#define BENCH_MIX		UINT64_C(0x9e3779b97f4a7c15)
#define BENCH_STAMP_UNKNOWN	UINT64_MAX
#define BENCH_STATE_MAGIC	UINT64_C(0x3174617453427053)	/* "SpBStat1" */
#define BENCH_RBUF_SIZE		(256U << 10)
#define BENCH_MAX_IOV		64
#define BENCH_MAX_ERRORS	100
#define BENCH_SHOW_ERRORS	5

enum bench_workload {
	WL_RANDWRITE,
	WL_RANDREAD,
	WL_SEQWRITE,
	WL_SEQREAD,
};

static const char *const workload_names[] = {
	[WL_RANDWRITE] = "randwrite",
	[WL_RANDREAD] = "randread",
	[WL_SEQWRITE] = "seqwrite",
	[WL_SEQREAD] = "seqread",
};

static struct bench_opts {
	int workload;
	uint64_t bs;
	int depth;
	uint64_t total;		/* requests; 0 = no limit */
	double seconds;		/* 0 = no limit */
	uint64_t span;		/* bytes of the VDI used; 0 = all */
	uint64_t seed;
	bool seed_set;
	bool flush;		/* FLUSH_VDI after every write */
	bool durable;		/* writes without SD_FLAG_CMD_CACHE */
	bool no_verify;
	bool json;
	bool force;
	const char *state;	/* -V: verification state file */
	const char *lat_log;	/* -L: every request's time and latency */
} bopt = {
	.workload = WL_RANDWRITE,
	.bs = 4096,
	.depth = 1,
};

enum slot_phase { PH_IDLE, PH_IO, PH_FLUSH };

struct slot {
	uint32_t id;		/* request id on the wire */
	uint32_t gen;
	int phase;
	bool write;
	uint64_t off;		/* byte offset in the VDI */
	uint64_t stamp;		/* write stamp carried by the payload */
	uint64_t start_ns;
	uint8_t *buf;		/* bopt.bs bytes: payload or read data */
	uint8_t hdr[SD_REQ_SIZE];
	uint32_t payload;	/* payload bytes sent after hdr */
	struct slot *next;	/* send queue */
};

static struct bench {
	/* the VDI */
	uint32_t vid;
	struct sd_inode_header inode;
	uint32_t obj_size;
	uint64_t nr_blocks;	/* of bopt.bs bytes in the span */
	uint64_t next_seq;	/* next block of a sequential workload */
	uint32_t run_id;
	uint32_t next_stamp;
	/*
	 * per 4 KiB block of the VDI, the stamp of its last acknowledged
	 * write: 0 = not known to be written (zeros or any consistent
	 * data), BENCH_STAMP_UNKNOWN = a write failed (the same)
	 */
	uint64_t *stamps;
	uint64_t nr_stamps;
	uint64_t rng;

	/* the connection */
	int fd;
	struct slot *slots;
	int nr_inflight;
	struct slot *sq_head, *sq_tail;
	size_t sq_sent;		/* bytes of sq_head already sent */
	uint8_t *rbuf;
	size_t rpos, rlen;
	struct slot *rslot;	/* response whose payload is being read */
	uint32_t rleft;		/* payload bytes still to read */
	uint32_t rdata;		/* of which still to store in rslot->buf */
	uint32_t rcopied;	/* bytes stored in rslot->buf so far */
	struct sd_rsp rsp;

	/* results */
	uint64_t issued, done, errors;
	uint64_t *lat;		/* ns, one per completed operation */
	uint64_t *at;		/* -L: ns from the start, when each completed */
	size_t lat_cap;
	uint64_t start_ns;
	uint64_t verified_reads, verified_blocks, verify_errors;
	bool fatal;
} bench;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* xorshift64* */
static uint64_t rnd(void)
{
	bench.rng ^= bench.rng >> 12;
	bench.rng ^= bench.rng << 25;
	bench.rng ^= bench.rng >> 27;
	return bench.rng * UINT64_C(2685821657736338717);
}

/* differs between runs, whatever the seed: stamps must not repeat */
static uint32_t run_id(void)
{
	struct timespec ts;
	uint64_t x;

	clock_gettime(CLOCK_REALTIME, &ts);
	x = ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^
	    ((uint64_t)getpid() << 40);
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (uint32_t)x | 1;
}

static bool is_write_workload(void)
{
	return bopt.workload == WL_RANDWRITE || bopt.workload == WL_SEQWRITE;
}

/* ---- the data pattern ---- */

static uint64_t pattern_base(uint64_t blk, uint64_t stamp)
{
	uint64_t x = blk * BENCH_MIX ^ stamp;

	x ^= x >> 31;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	return x ^ (x >> 29);
}

static void fill_block(uint8_t *p, uint64_t blk, uint64_t stamp)
{
	uint64_t *w = (uint64_t *)p, base = pattern_base(blk, stamp);

	w[0] = BENCH_MAGIC;
	w[1] = blk;
	w[2] = stamp;
	w[3] = base;
	for (size_t i = 4; i < BENCH_VERIFY_BLOCK / 8; i++)
		w[i] = base + i * BENCH_MIX;
}

static bool block_consistent(const uint8_t *p, uint64_t blk)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t base;

	if (w[0] != BENCH_MAGIC || w[1] != blk)
		return false;
	base = pattern_base(blk, w[2]);
	if (w[3] != base)
		return false;
	for (size_t i = 4; i < BENCH_VERIFY_BLOCK / 8; i++)
		if (w[i] != base + i * BENCH_MIX)
			return false;
	return true;
}

static void verify_error(uint64_t blk, const char *what, const uint8_t *p)
{
	const uint64_t *w = (const uint64_t *)p;

	if (++bench.verify_errors > BENCH_SHOW_ERRORS)
		return;
	fprintf(stderr, "verify: block at offset %" PRIu64 ": %s (words "
		"%016" PRIx64 " %016" PRIx64 " %016" PRIx64 ")\n",
		blk * BENCH_VERIFY_BLOCK, what, w[0], w[1], w[2]);
}

static void verify_read(const struct slot *s)
{
	uint64_t first = s->off / BENCH_VERIFY_BLOCK;

	bench.verified_reads++;
	for (uint64_t j = 0; j < bopt.bs / BENCH_VERIFY_BLOCK; j++) {
		const uint8_t *p = s->buf + j * BENCH_VERIFY_BLOCK;
		uint64_t blk = first + j;
		uint64_t want = bench.stamps[blk];

		bench.verified_blocks++;
		if (want && want != BENCH_STAMP_UNKNOWN) {
			if (!block_consistent(p, blk))
				verify_error(blk, "corrupt data", p);
			else if (((const uint64_t *)p)[2] != want)
				verify_error(blk, "stale data", p);
			continue;
		}
		/* never written as far as we know: zeros or consistent data */
		if (!is_zero(p, BENCH_VERIFY_BLOCK) && !block_consistent(p, blk))
			verify_error(blk, "corrupt data", p);
	}
}

/* ---- requests ---- */

static void record_latency(uint64_t ns)
{
	if (bench.done >= bench.lat_cap) {
		bench.lat_cap = bench.lat_cap ? bench.lat_cap * 2 : 65536;
		bench.lat = xrealloc(bench.lat, bench.lat_cap * sizeof(*bench.lat));
		if (bopt.lat_log)
			bench.at = xrealloc(bench.at,
					    bench.lat_cap * sizeof(*bench.at));
	}
	if (bopt.lat_log)
		bench.at[bench.done] = mono_ns() - bench.start_ns;
	bench.lat[bench.done++] = ns;
}

static void sq_push(struct slot *s)
{
	s->next = NULL;
	if (bench.sq_tail)
		bench.sq_tail->next = s;
	else
		bench.sq_head = s;
	bench.sq_tail = s;
}

static void new_id(struct slot *s)
{
	s->gen = (s->gen + 1) & 0xffff;
	s->id = s->gen << 16 | (uint32_t)(s - bench.slots);
}

static void encode_io(struct slot *s)
{
	uint64_t idx = s->off / bench.obj_size;
	struct sd_req rq;

	new_id(s);
	sd_init_req(&rq, s->write ? SD_OP_WRITE_OBJ : SD_OP_READ_OBJ);
	rq.id = s->id;
	if (s->write) {
		rq.flags = SD_FLAG_CMD_WRITE;
		if (!bopt.durable)
			rq.flags |= SD_FLAG_CMD_CACHE;
	}
	rq.data_length = (uint32_t)bopt.bs;
	rq.obj.oid = vid_to_data_oid(bench.vid, (uint32_t)idx);
	rq.obj.copies = bench.inode.nr_copies;
	rq.obj.copy_policy = bench.inode.copy_policy;
	rq.obj.offset = (uint32_t)(s->off % bench.obj_size);
	sd_req_encode(&rq, s->hdr);
	s->payload = s->write ? (uint32_t)bopt.bs : 0;
}

static void encode_flush(struct slot *s)
{
	struct sd_req rq;

	new_id(s);
	sd_init_req(&rq, SD_OP_FLUSH_VDI);
	rq.id = s->id;
	rq.obj.oid = vid_to_vdi_oid(bench.vid);
	sd_req_encode(&rq, s->hdr);
	s->payload = 0;
}

static bool overlaps_inflight(uint64_t off)
{
	for (int i = 0; i < bopt.depth; i++) {
		const struct slot *o = &bench.slots[i];

		if (o->phase != PH_IDLE &&
		    (o->off > off ? o->off - off : off - o->off) < bopt.bs)
			return true;
	}
	return false;
}

/* the next offset, or false if every candidate collides right now */
static bool next_offset(uint64_t *off)
{
	bool seq = bopt.workload == WL_SEQWRITE ||
		   bopt.workload == WL_SEQREAD;

	for (int tries = 0; tries < 64; tries++) {
		uint64_t blk = seq ? bench.next_seq : rnd() % bench.nr_blocks;

		if (overlaps_inflight(blk * bopt.bs)) {
			if (seq)
				return false;
			continue;
		}
		if (seq)
			bench.next_seq = (bench.next_seq + 1) % bench.nr_blocks;
		*off = blk * bopt.bs;
		return true;
	}
	return false;
}

static bool issue(struct slot *s)
{
	uint64_t off;

	if (!next_offset(&off))
		return false;
	s->off = off;
	s->write = is_write_workload();
	s->phase = PH_IO;
	if (s->write) {
		uint64_t first = off / BENCH_VERIFY_BLOCK;

		if (!++bench.next_stamp)
			bench.next_stamp = 1;
		s->stamp = (uint64_t)bench.run_id << 32 | bench.next_stamp;
		for (uint64_t j = 0; j < bopt.bs / BENCH_VERIFY_BLOCK; j++)
			fill_block(s->buf + j * BENCH_VERIFY_BLOCK, first + j,
				   s->stamp);
	}
	encode_io(s);
	s->start_ns = mono_ns();
	bench.issued++;
	bench.nr_inflight++;
	sq_push(s);
	return true;
}

static void request_failed(struct slot *s, const char *what, uint32_t res)
{
	bench.errors++;
	if (bench.errors <= BENCH_SHOW_ERRORS)
		fprintf(stderr, "%s at offset %" PRIu64 " failed: %s\n", what,
			s->off, sd_strerror(res));
	if (bench.errors >= BENCH_MAX_ERRORS)
		bench.fatal = true;
}

static void set_stamps(const struct slot *s, uint64_t stamp)
{
	uint64_t first = s->off / BENCH_VERIFY_BLOCK;

	for (uint64_t j = 0; j < bopt.bs / BENCH_VERIFY_BLOCK; j++)
		bench.stamps[first + j] = stamp;
}

static void complete(struct slot *s)
{
	uint32_t res = bench.rsp.result;

	if (s->phase == PH_IO && s->write) {
		if (res != SD_RES_SUCCESS) {
			set_stamps(s, BENCH_STAMP_UNKNOWN);
			request_failed(s, "write", res);
		} else {
			set_stamps(s, s->stamp);
			if (bopt.flush) {
				s->phase = PH_FLUSH;
				encode_flush(s);
				sq_push(s);
				return;
			}
		}
	} else if (s->phase == PH_IO) {
		if (res != SD_RES_SUCCESS)
			request_failed(s, "read", res);
		else if (bench.rsp.data_length != bopt.bs)
			request_failed(s, "read (short)", SD_RES_EIO);
		else if (!bopt.no_verify)
			verify_read(s);
	} else if (res != SD_RES_SUCCESS) {
		request_failed(s, "flush", res);
	}
	record_latency(mono_ns() - s->start_ns);
	s->phase = PH_IDLE;
	bench.nr_inflight--;
}

/* ---- the connection ---- */

static int do_send(void)
{
	struct iovec iov[BENCH_MAX_IOV];
	struct msghdr msg = { .msg_iov = iov };
	size_t skip = bench.sq_sent;
	int n = 0;
	ssize_t r;

	for (struct slot *s = bench.sq_head; s && n + 2 <= BENCH_MAX_IOV;
	     s = s->next) {
		if (skip < SD_REQ_SIZE) {
			iov[n].iov_base = s->hdr + skip;
			iov[n++].iov_len = SD_REQ_SIZE - skip;
			skip = 0;
		} else {
			skip -= SD_REQ_SIZE;
		}
		if (s->payload) {
			iov[n].iov_base = s->buf + skip;
			iov[n++].iov_len = s->payload - skip;
		}
		skip = 0;
	}
	if (!n)
		return 0;
	msg.msg_iovlen = (size_t)n;
	r = sendmsg(bench.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ||
		       errno == EINTR ? 0 : -1;
	/* retire fully sent requests */
	bench.sq_sent += (size_t)r;
	while (bench.sq_head) {
		size_t len = SD_REQ_SIZE + bench.sq_head->payload;

		if (bench.sq_sent < len)
			break;
		bench.sq_sent -= len;
		bench.sq_head = bench.sq_head->next;
	}
	if (!bench.sq_head)
		bench.sq_tail = NULL;
	return 0;
}

static struct slot *slot_of(uint32_t id)
{
	uint32_t i = id & 0xffff;

	if (i >= (uint32_t)bopt.depth || bench.slots[i].phase == PH_IDLE ||
	    bench.slots[i].id != id)
		return NULL;
	return &bench.slots[i];
}

/* @n payload bytes of the current response have arrived */
static void payload_consumed(size_t n)
{
	bench.rleft -= (uint32_t)n;
	if (bench.rleft)
		return;
	if (bench.rslot)
		complete(bench.rslot);
	bench.rslot = NULL;
}

/* parse what is in the receive buffer; -1 on a protocol error */
static int parse_input(void)
{
	for (;;) {
		size_t avail = bench.rlen - bench.rpos;

		if (bench.rleft) {
			size_t n = MIN(avail, (size_t)bench.rleft);
			size_t c = MIN(n, (size_t)bench.rdata);

			if (!n)
				return 0;
			if (c) {
				memcpy(bench.rslot->buf + bench.rcopied,
				       bench.rbuf + bench.rpos, c);
				bench.rdata -= (uint32_t)c;
				bench.rcopied += (uint32_t)c;
			}
			bench.rpos += n;
			payload_consumed(n);
			continue;
		}
		if (avail < SD_RSP_SIZE)
			return 0;
		sd_rsp_decode(&bench.rsp, bench.rbuf + bench.rpos);
		bench.rpos += SD_RSP_SIZE;
		bench.rslot = slot_of(bench.rsp.id);
		if (!bench.rslot) {
			fprintf(stderr, "response with unknown id %" PRIx32
				"\n", bench.rsp.id);
			return -1;
		}
		bench.rleft = bench.rsp.data_length;
		bench.rdata = 0;
		bench.rcopied = 0;
		if (bench.rslot->phase == PH_IO && !bench.rslot->write)
			bench.rdata = (uint32_t)MIN((uint64_t)bench.rleft,
						    bopt.bs);
		if (!bench.rleft) {
			complete(bench.rslot);
			bench.rslot = NULL;
		}
	}
}

/*
 * Read what the socket has: large read payloads go straight into their
 * buffer, everything else through the receive buffer.  Returns 0, -1 on
 * a transport error (errno set) or -2 on a protocol error.
 */
static int do_recv(void)
{
	for (;;) {
		ssize_t r;

		if (bench.rpos == bench.rlen)
			bench.rpos = bench.rlen = 0;
		if (!bench.rlen && bench.rdata >= BENCH_RBUF_SIZE / 4) {
			r = recv(bench.fd, bench.rslot->buf + bench.rcopied,
				 bench.rdata, MSG_DONTWAIT);
			if (r > 0) {
				bench.rdata -= (uint32_t)r;
				bench.rcopied += (uint32_t)r;
				payload_consumed((size_t)r);
				continue;
			}
		} else {
			if (bench.rpos && bench.rlen == BENCH_RBUF_SIZE) {
				memmove(bench.rbuf, bench.rbuf + bench.rpos,
					bench.rlen - bench.rpos);
				bench.rlen -= bench.rpos;
				bench.rpos = 0;
			}
			r = recv(bench.fd, bench.rbuf + bench.rlen,
				 BENCH_RBUF_SIZE - bench.rlen, MSG_DONTWAIT);
		}
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ||
			       errno == EINTR ? 0 : -1;
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		bench.rlen += (size_t)r;
		if (parse_input())
			return -2;
		if ((size_t)r < BENCH_RBUF_SIZE / 2)
			return 0;
	}
}

/* ---- set-up and report ---- */

static int open_vdi(const char *name)
{
	uint32_t nr, need, *index;
	int ret;

	if (find_vdi(name, 0, NULL, &bench.vid) != SD_RES_SUCCESS)
		return EXIT_MISSING;
	if (read_inode_header(bench.vid, &bench.inode) != SD_RES_SUCCESS)
		return EXIT_FAILURE;
	bench.obj_size = inode_obj_size(&bench.inode);
	if (bopt.bs > bench.obj_size || bench.obj_size % bopt.bs) {
		fprintf(stderr, "the block size must divide the object size "
			"(%" PRIu32 ")\n", bench.obj_size);
		return EXIT_USAGE;
	}
	if (!bopt.span || bopt.span > bench.inode.vdi_size)
		bopt.span = bench.inode.vdi_size;
	bench.nr_blocks = bopt.span / bopt.bs;
	if (bench.nr_blocks < (uint64_t)bopt.depth * 2) {
		fprintf(stderr, "the VDI (or -l span) holds %" PRIu64
			" blocks: too few for queue depth %d\n", bench.nr_blocks,
			bopt.depth);
		return EXIT_USAGE;
	}
	/* every object of the span must exist and belong to this VDI */
	nr = inode_nr_objs(&bench.inode);
	need = (uint32_t)DIV_ROUND_UP(bench.nr_blocks * bopt.bs,
				      (uint64_t)bench.obj_size);
	index = xmalloc((size_t)nr * sizeof(*index));
	ret = read_inode_index(bench.vid, &bench.inode, index, nr);
	if (ret != SD_RES_SUCCESS) {
		free(index);
		return EXIT_FAILURE;
	}
	for (uint32_t i = 0; i < need; i++)
		if (index[i] != bench.vid) {
			fprintf(stderr, "object %" PRIu32 " of VDI %s is not "
				"allocated by it: create the VDI with 'dog vdi "
				"create -P' (preallocation)\n", i, name);
			free(index);
			return EXIT_FAILURE;
		}
	free(index);
	return 0;
}

/*
 * The verification state file (-V): a header (magic, VDI id, number of
 * 4 KiB blocks) and the stamp of every block, little-endian, so that the
 * runs of a benchmark check each other's data.
 */
static int load_state(const char *path)
{
	uint8_t hdr[24];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return errno == ENOENT ? 0 : -1;
	if (fread(hdr, 1, sizeof(hdr), f) != sizeof(hdr) ||
	    get_le64(hdr) != BENCH_STATE_MAGIC) {
		fprintf(stderr, "%s is not a benchmark state file\n", path);
		goto fail;
	}
	if (get_le32(hdr + 8) != bench.vid ||
	    get_le64(hdr + 16) != bench.nr_stamps) {
		fprintf(stderr, "%s belongs to another VDI\n", path);
		goto fail;
	}
	n = fread(bench.stamps, sizeof(uint64_t), bench.nr_stamps, f);
	if (n != bench.nr_stamps) {
		fprintf(stderr, "%s is truncated\n", path);
		goto fail;
	}
	le64_array_decode(bench.stamps, bench.nr_stamps, bench.stamps);
	fclose(f);
	return 0;
fail:
	fclose(f);
	errno = EINVAL;
	return -1;
}

static int save_state(const char *path)
{
	char tmp[4096];
	uint8_t hdr[24] = { 0 };
	uint64_t *le = xmalloc(bench.nr_stamps * sizeof(uint64_t));
	FILE *f;
	bool ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f) {
		free(le);
		return -1;
	}
	put_le64(hdr, BENCH_STATE_MAGIC);
	put_le32(hdr + 8, bench.vid);
	put_le64(hdr + 16, bench.nr_stamps);
	le64_array_encode(bench.stamps, bench.nr_stamps, le);
	ok = fwrite(hdr, 1, sizeof(hdr), f) == sizeof(hdr) &&
	     fwrite(le, sizeof(uint64_t), bench.nr_stamps, f) ==
	     bench.nr_stamps;
	free(le);
	if (fclose(f) || !ok || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* -L: "COMPLETED_US LATENCY_US" per request, in completion order */
static int save_lat_log(FILE *f)
{
	for (size_t i = 0; i < bench.done; i++)
		fprintf(f, "%" PRIu64 " %" PRIu64 "\n", bench.at[i] / 1000,
			bench.lat[i] / 1000);
	return fclose(f);
}

static int cmp_u64(const void *a, const void *c)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)c;

	return x < y ? -1 : x > y;
}

static double pct_us(double p)
{
	size_t i;

	if (!bench.done)
		return 0;
	i = (size_t)ceil(p / 100 * (double)bench.done);
	if (i)
		i--;
	if (i >= bench.done)
		i = bench.done - 1;
	return (double)bench.lat[i] / 1000;
}

static void report(double secs)
{
	double iops = secs > 0 ? (double)bench.done / secs : 0;
	double mbps = iops * (double)bopt.bs / 1e6;
	double sum = 0, mean;

	qsort(bench.lat, bench.done, sizeof(*bench.lat), cmp_u64);
	for (size_t i = 0; i < bench.done; i++)
		sum += (double)bench.lat[i];
	mean = bench.done ? sum / (double)bench.done / 1000 : 0;
	if (bopt.json) {
		printf("{\"tool\": \"dog benchmark io\", \"workload\": \"%s\", "
		       "\"bs\": %" PRIu64 ", \"depth\": %d, \"flush\": %s, "
		       "\"durable\": %s, \"ops\": %" PRIu64 ", \"errors\": %"
		       PRIu64 ", \"seconds\": %.6f, \"iops\": %.1f, "
		       "\"mbps\": %.3f, \"lat_us\": {\"min\": %.1f, "
		       "\"mean\": %.1f, \"p50\": %.1f, \"p99\": %.1f, "
		       "\"p99.9\": %.1f, \"max\": %.1f}, \"verify\": %s, "
		       "\"verified_reads\": %" PRIu64 ", \"verified_blocks\": %"
		       PRIu64 ", \"verify_errors\": %" PRIu64 "}\n",
		       workload_names[bopt.workload], bopt.bs, bopt.depth,
		       bopt.flush ? "true" : "false",
		       bopt.durable ? "true" : "false", bench.done, bench.errors, secs,
		       iops, mbps, bench.done ? (double)bench.lat[0] / 1000 : 0, mean,
		       pct_us(50), pct_us(99), pct_us(99.9),
		       bench.done ? (double)bench.lat[bench.done - 1] / 1000 : 0,
		       bopt.no_verify ? "false" : "true", bench.verified_reads,
		       bench.verified_blocks, bench.verify_errors);
		return;
	}
	printf("Workload: %s, %" PRIu64 "-byte blocks, queue depth %d%s%s\n",
	       workload_names[bopt.workload], bopt.bs, bopt.depth,
	       bopt.flush ? ", flush after every write" : "",
	       bopt.durable ? ", durable writes" : "");
	printf("Requests: %" PRIu64 " in %.3f s, %" PRIu64 " failed\n",
	       bench.done, secs, bench.errors);
	printf("IOPS: %.1f  Bandwidth: %.2f MB/s\n", iops, mbps);
	printf("Latency (us): min %.1f  mean %.1f  p50 %.1f  p99 %.1f  "
	       "p99.9 %.1f  max %.1f\n", bench.done ? (double)bench.lat[0] / 1000 : 0,
	       mean, pct_us(50), pct_us(99), pct_us(99.9),
	       bench.done ? (double)bench.lat[bench.done - 1] / 1000 : 0);
	if (bopt.no_verify)
		printf("Verified: off\n");
	else
		printf("Verified: %" PRIu64 " reads, %" PRIu64 " blocks, %"
		       PRIu64 " mismatches\n", bench.verified_reads,
		       bench.verified_blocks, bench.verify_errors);
}

/* SIGINT, SIGTERM: stop issuing, as if the time were up */
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int run_loop(void)
{
	uint64_t start = mono_ns(), limit_ns = 0;
	bool stop = false;

	if (bopt.seconds > 0)
		limit_ns = (uint64_t)(bopt.seconds * 1e9);
	while (!bench.fatal) {
		struct pollfd pfd = { .fd = bench.fd, .events = POLLIN };

		if (!stop) {
			if ((bopt.total && bench.issued >= bopt.total) ||
			    (limit_ns && mono_ns() - start >= limit_ns) ||
			    interrupted)
				stop = true;
		}
		for (int i = 0; !stop && i < bopt.depth; i++) {
			if (bench.slots[i].phase != PH_IDLE)
				continue;
			if (bopt.total && bench.issued >= bopt.total)
				break;
			if (!issue(&bench.slots[i]))
				break;
		}
		if (stop && !bench.nr_inflight)
			break;
		if (bench.sq_head && do_send()) {
			perror("send");
			return -1;
		}
		if (bench.sq_head)
			pfd.events |= POLLOUT;
		if (poll(&pfd, 1, 1000) < 0 && errno != EINTR) {
			perror("poll");
			return -1;
		}
		if (pfd.revents & (POLLIN | POLLERR | POLLHUP)) {
			int r = do_recv();

			if (r == -1) {
				fprintf(stderr, "connection to %s:%d: %s\n",
					sdhost, sdport, strerror(errno));
				return -1;
			}
			if (r)
				return -1;
		}
	}
	return 0;
}

static int benchmark_io(int argc, char **argv)
{
	uint64_t start;
	double secs;
	FILE *lat_f = NULL;
	int ret;

	if (bopt.flush && bopt.durable) {
		fprintf(stderr, "-F and -D exclude each other\n");
		return EXIT_USAGE;
	}
	if (bopt.flush && !is_write_workload()) {
		fprintf(stderr, "-F needs a write workload\n");
		return EXIT_USAGE;
	}
	if (!bopt.total && bopt.seconds <= 0)
		bopt.total = 1000;
	ret = open_vdi(argv[0]);
	if (ret)
		return ret;
	if (is_write_workload() && !bopt.force) {
		char caution[512];

		snprintf(caution, sizeof(caution), "This benchmark overwrites "
			 "the data of VDI %s.", argv[0]);
		if (!confirm(caution))
			return EXIT_SUCCESS;
	}
	bench.rng = bopt.seed_set ? bopt.seed : mono_ns() ^ (uint64_t)getpid();
	if (!bench.rng)
		bench.rng = 1;
	bench.run_id = run_id();
	bench.nr_stamps = DIV_ROUND_UP(bench.inode.vdi_size,
				       (uint64_t)BENCH_VERIFY_BLOCK);
	bench.stamps = xzalloc(bench.nr_stamps * sizeof(*bench.stamps));
	if (bopt.state && load_state(bopt.state)) {
		fprintf(stderr, "cannot load %s: %s\n", bopt.state,
			strerror(errno));
		return EXIT_FAILURE;
	}
	bench.slots = xzalloc((size_t)bopt.depth * sizeof(*bench.slots));
	for (int i = 0; i < bopt.depth; i++)
		if (posix_memalign((void **)&bench.slots[i].buf, 4096, bopt.bs)) {
			fprintf(stderr, "out of memory\n");
			return EXIT_SYSFAIL;
		}
	bench.rbuf = xmalloc(BENCH_RBUF_SIZE);
	bench.fd = net_connect(sdhost, sdport, DOG_RCV_TIMEOUT);
	if (bench.fd < 0) {
		fprintf(stderr, "failed to connect to %s:%d: %s\n", sdhost,
			sdport, strerror(errno));
		return EXIT_SYSFAIL;
	}
	net_set_nonblock(bench.fd);
	/* a path that cannot be written is refused before any data is */
	if (bopt.lat_log) {
		lat_f = fopen(bopt.lat_log, "w");
		if (!lat_f) {
			fprintf(stderr, "cannot write %s: %s\n", bopt.lat_log,
				strerror(errno));
			close(bench.fd);
			return EXIT_FAILURE;
		}
	}

	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	start = bench.start_ns = mono_ns();
	ret = run_loop();
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	secs = (double)(mono_ns() - start) / 1e9;
	close(bench.fd);
	if (ret) {
		if (lat_f)
			fclose(lat_f);
		return EXIT_SYSFAIL;
	}
	/* before report(), which sorts the latencies */
	if (lat_f && save_lat_log(lat_f)) {
		fprintf(stderr, "cannot write %s: %s\n", bopt.lat_log,
			strerror(errno));
		bench.fatal = true;
	}
	report(secs);
	if (bopt.state && save_state(bopt.state)) {
		fprintf(stderr, "cannot save %s: %s\n", bopt.state,
			strerror(errno));
		bench.fatal = true;
	}
	for (int i = 0; i < bopt.depth; i++)
		free(bench.slots[i].buf);
	free(bench.slots);
	free(bench.stamps);
	free(bench.rbuf);
	free(bench.lat);
	free(bench.at);
	if (bench.errors || bench.verify_errors || bench.fatal)
		return EXIT_FAILURE;
	return EXIT_SUCCESS;
}

/* ---- options ---- */

static int parse_count(const char *s, long max, const char *what, long *v)
{
	char *end;

	errno = 0;
	*v = strtol(s, &end, 10);
	if (errno || *end || end == s || *v < 1 || *v > max) {
		fprintf(stderr, "Invalid %s '%s' (1 to %ld)\n", what, s, max);
		return EXIT_USAGE;
	}
	return 0;
}

static int benchmark_parser(int ch, const char *arg)
{
	long v;
	char *end;
	size_t i;

	switch (ch) {
	case 'w':
		for (i = 0; i < ARRAY_SIZE(workload_names); i++)
			if (!strcmp(arg, workload_names[i]))
				break;
		if (i == ARRAY_SIZE(workload_names)) {
			fprintf(stderr, "Invalid workload '%s': randwrite, "
				"randread, seqwrite or seqread\n", arg);
			return EXIT_USAGE;
		}
		bopt.workload = (int)i;
		break;
	case 'b':
		if (parse_size(arg, &bopt.bs) || !bopt.bs ||
		    bopt.bs % BENCH_VERIFY_BLOCK || bopt.bs > (1U << 31)) {
			fprintf(stderr, "Invalid block size '%s' (a multiple "
				"of 4 KiB)\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'q':
		if (parse_count(arg, BENCH_MAX_DEPTH, "queue depth", &v))
			return EXIT_USAGE;
		bopt.depth = (int)v;
		break;
	case 't':
		if (parse_count(arg, 1000000000L, "request count", &v))
			return EXIT_USAGE;
		bopt.total = (uint64_t)v;
		break;
	case 's':
		errno = 0;
		bopt.seconds = strtod(arg, &end);
		if (errno || *end || end == arg || !(bopt.seconds > 0) ||
		    bopt.seconds > 86400) {
			fprintf(stderr, "Invalid run time '%s'\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'l':
		if (parse_size(arg, &bopt.span) || !bopt.span) {
			fprintf(stderr, "Invalid span '%s'\n", arg);
			return EXIT_USAGE;
		}
		break;
	case 'S':
		errno = 0;
		bopt.seed = strtoull(arg, &end, 0);
		if (errno || *end || end == arg) {
			fprintf(stderr, "Invalid seed '%s'\n", arg);
			return EXIT_USAGE;
		}
		bopt.seed_set = true;
		break;
	case 'F':
		bopt.flush = true;
		break;
	case 'D':
		bopt.durable = true;
		break;
	case 'N':
		bopt.no_verify = true;
		break;
	case 'V':
		bopt.state = arg;
		break;
	case 'L':
		bopt.lat_log = arg;
		break;
	case 'j':
		bopt.json = true;
		break;
	case 'f':
		bopt.force = true;
		break;
	}
	return 0;
}

static const struct sd_option benchmark_options[] = {
	{ 'w', "workload", true, "name",
	  "randwrite (default), randread, seqwrite or seqread" },
	{ 'b', "block-size", true, "size",
	  "bytes per request, a multiple of 4 KiB (default 4K)" },
	{ 'q', "iodepth", true, "n",
	  "requests in flight on the connection (default 1)" },
	{ 't', "total", true, "n",
	  "stop after n requests (default 1000 unless -s is given)" },
	{ 's', "seconds", true, "secs", "stop after secs seconds" },
	{ 'l', "span", true, "size",
	  "use only the first size bytes of the VDI" },
	{ 'S', "seed", true, "n", "seed of the random offsets" },
	{ 'F', "flush", false, NULL,
	  "cached writes, each followed by a FLUSH_VDI" },
	{ 'D', "durable", false, NULL,
	  "writes without the cache flag (durable on acknowledgement)" },
	{ 'N', "no-verify", false, NULL, "do not verify the data read" },
	{ 'V', "verify-state", true, "file",
	  "load and save the expected data of every block in file" },
	{ 'L', "lat-log", true, "file",
	  "write each request's completion time and latency (us) to file" },
	{ 'j', "json", false, NULL, "print the result as one JSON line" },
	{ 'f', "force", false, NULL, "do not ask before overwriting data" },
	{ 0, NULL, false, NULL, NULL },
};

static const struct subcommand benchmark_cmds[] = {
	{ "io", "<vdi>", "aphTwbqtslSFDNVLjf",
	  "measure object I/O on a preallocated VDI (overwrites its data)",
	  NULL, CMD_NEED_NODELIST, 1, benchmark_io },
	{ NULL },
};

struct command benchmark_command = {
	.name = "benchmark",
	.sub = benchmark_cmds,
	.options = benchmark_options,
	.parser = benchmark_parser,
};
