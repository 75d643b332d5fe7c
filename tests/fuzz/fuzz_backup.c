// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: dog's backup stream reader, through `dog vdi restore`
 * (vdi_restore in dog/backup.c, with the rest of dog linked as it is).
 * The stream comes on stdin, from a memfd (a regular file) or from a pipe
 * (then dog copies it to a temporary file); the sheep is replaced at the
 * level of dog's request helpers, which the link wraps (build.sh:
 * -Wl,--wrap=lookup_vdi,... ) so that their callers in other files reach
 * the functions below instead.  The socket layer is wrapped too, and
 * answers nothing: no byte leaves the process.
 *
 * Input:
 *   byte 0   bit 0 the snapshot is not found, bit 1 a current VDI exists,
 *            bit 2 the snapshot's object size differs from the stream's,
 *            bit 3 NEW_VDI fails, bit 4 object writes fail, bit 5 stdin
 *            is a pipe, bit 6 the snapshot is a hyper volume, bit 7 the
 *            current VDI has a living parent
 *   byte 1   bits 0-3: every Nth index entry of the snapshot and of the
 *            current VDI is allocated (0: none); bit 4 DEL_VDI fails
 *   then     the backup stream
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "proto.h"
#include "util.h"
#include "dog/dog.h"
#include "dog/vdi.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

#define SNAP_VID	0x100
#define CUR_VID		0x200
#define PARENT_VID	0x300
#define FIRST_NEW_VID	0x1000
#define MAX_VDIS	8
#define PIPE_MAX	65536

static struct {
	bool no_snap, has_cur, shift_differs, new_fails, writes_fail;
	bool use_pipe, hyper, has_parent, del_fails;
	uint32_t every;
} cfg;

struct fake_vdi {
	uint32_t vid;
	uint64_t size;
	uint8_t shift;
	uint8_t store_policy;
	uint32_t parent;
	bool snapshot;
};

static struct fake_vdi vdis[MAX_VDIS];
static int nr_vdis;
static uint32_t next_vid;
static int devnull = -1;

static struct fake_vdi *add_vdi(uint32_t vid, uint64_t size, uint8_t shift,
				uint32_t parent, bool snapshot)
{
	struct fake_vdi *v;

	if (nr_vdis == MAX_VDIS)
		return NULL;
	v = &vdis[nr_vdis++];
	*v = (struct fake_vdi){ vid, size, shift, 0, parent, snapshot };
	return v;
}

static struct fake_vdi *find_vdi_by_id(uint32_t vid)
{
	for (int i = 0; i < nr_vdis; i++)
		if (vdis[i].vid == vid)
			return &vdis[i];
	return NULL;
}

static void read_config(struct fuzz_in *in)
{
	uint8_t a = take_u8(in), b = take_u8(in);

	cfg.no_snap = a & 1;
	cfg.has_cur = a & 2;
	cfg.shift_differs = a & 4;
	cfg.new_fails = a & 8;
	cfg.writes_fail = a & 16;
	cfg.use_pipe = a & 32;
	cfg.hyper = a & 64;
	cfg.has_parent = a & 128;
	cfg.every = b & 15;
	cfg.del_fails = b & 16;
}

/* the VDIs the cluster holds, sized after the stream's header */
static void setup_vdis(const uint8_t *s, size_t len)
{
	uint64_t size = len >= 24 ? get_le64(s + 16) : 1 << 20;
	uint8_t shift = len >= 25 ? s[24] : 0;
	struct fake_vdi *v;

	nr_vdis = 0;
	next_vid = FIRST_NEW_VID;
	if (cfg.shift_differs)
		shift = shift == 22 ? 23 : 22;
	/* a snapshot larger than 16 GiB is not needed to reach anything */
	v = add_vdi(SNAP_VID, size % ((uint64_t)1 << 34), shift, 0, true);
	v->store_policy = cfg.hyper;
	if (cfg.has_parent)
		add_vdi(PARENT_VID, 1 << 22, 0, 0, true);
	if (cfg.has_cur)
		add_vdi(CUR_VID, 1 << 23, 0, cfg.has_parent ? PARENT_VID : 0,
			false);
}

/* ---- dog's request helpers, as the link wraps them ---- */

int __wrap_lookup_vdi(const char *name, uint32_t snapid, const char *tag,
		      uint32_t *vid);
int __wrap_read_inode_header(uint32_t vid, struct sd_inode_header *h);
int __wrap_read_inode_index(uint32_t vid, const struct sd_inode_header *h,
			    uint32_t *index, uint32_t nr);
int __wrap_set_index_entry(uint32_t vid, const struct sd_inode_header *h,
			   uint32_t idx, uint32_t value);
int __wrap_dog_write_object(uint64_t oid, uint64_t cow_oid, const void *buf,
			    uint32_t len, uint32_t off, uint16_t flags,
			    uint8_t copies, uint8_t policy, bool create);
int __wrap_dog_exec(struct sd_req *req, void *data, uint32_t buf_len,
		    struct sd_rsp *rsp);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
int __wrap_net_connect(const char *host, int port, int rcv_timeout_sec);
int __wrap_net_connect_addr(const uint8_t addr[16], uint16_t port,
			    int rcv_timeout_sec);

int __wrap_lookup_vdi(const char *name, uint32_t snapid, const char *tag,
		      uint32_t *vid)
{
	if (snapid || (tag && *tag)) {
		*vid = SNAP_VID;
		return cfg.no_snap ? SD_RES_NO_VDI : SD_RES_SUCCESS;
	}
	*vid = CUR_VID;
	return find_vdi_by_id(CUR_VID) ? SD_RES_SUCCESS : SD_RES_NO_VDI;
}

int __wrap_read_inode_header(uint32_t vid, struct sd_inode_header *h)
{
	struct fake_vdi *v = find_vdi_by_id(vid);

	if (!v)
		return SD_RES_NO_OBJ;
	memset(h, 0, sizeof(*h));
	strcpy(h->name, "fuzz");
	h->vdi_size = v->size;
	h->block_size_shift = v->shift;
	h->store_policy = v->store_policy;
	h->nr_copies = 3;
	h->snap_ctime = v->snapshot ? 1 : 0;
	h->snap_id = v->snapshot ? 1 : 2;
	h->vdi_id = vid;
	h->parent_vdi_id = v->parent;
	return SD_RES_SUCCESS;
}

int __wrap_read_inode_index(uint32_t vid, const struct sd_inode_header *h,
			    uint32_t *index, uint32_t nr)
{
	uint32_t owner = vid >= FIRST_NEW_VID ? SNAP_VID : vid;

	for (uint32_t i = 0; i < nr; i++)
		index[i] = cfg.every && i % cfg.every == 0 ? owner : 0;
	return SD_RES_SUCCESS;
}

int __wrap_set_index_entry(uint32_t vid, const struct sd_inode_header *h,
			   uint32_t idx, uint32_t value)
{
	if (idx >= SD_INODE_DATA_INDEX)
		die("index entry %u of VDI %x set\n", idx, vid);
	return cfg.writes_fail ? SD_RES_EIO : SD_RES_SUCCESS;
}

int __wrap_dog_write_object(uint64_t oid, uint64_t cow_oid, const void *buf,
			    uint32_t len, uint32_t off, uint16_t flags,
			    uint8_t copies, uint8_t policy, bool create)
{
	struct fake_vdi *v = find_vdi_by_id(oid_to_vid(oid));
	uint32_t size;
	uint8_t *copy;

	if (!v)
		die("write to object %016lx of no VDI\n", (unsigned long)oid);
	size = is_vdi_obj(oid) ? SD_INODE_SIZE :
	       UINT32_C(1) << (v->shift >= SD_MIN_BLOCK_SIZE_SHIFT &&
			       v->shift <= SD_MAX_BLOCK_SIZE_SHIFT ? v->shift :
			       SD_DEFAULT_BLOCK_SIZE_SHIFT);
	if ((uint64_t)off + len > size)
		die("write of %u bytes at %u beyond object %016lx\n", len,
		    off, (unsigned long)oid);
	/* the bytes must be readable */
	copy = xmalloc(len ? len : 1);
	memcpy(copy, buf, len);
	free(copy);
	return cfg.writes_fail ? SD_RES_EIO : SD_RES_SUCCESS;
}

static uint32_t new_vdi_reply(const struct sd_req *req)
{
	const struct sd_req *r = req;

	if (cfg.new_fails)
		return SD_RES_NO_SPACE;
	if (!r->vdi.base_vdi_id || !find_vdi_by_id(r->vdi.base_vdi_id))
		die("NEW_VDI based on no VDI (%x)\n", r->vdi.base_vdi_id);
	if (!add_vdi(next_vid++, r->vdi.vdi_size, r->vdi.block_size_shift,
		     r->vdi.base_vdi_id, r->vdi.snapid))
		return SD_RES_FULL_VDI;
	return SD_RES_SUCCESS;
}

int __wrap_dog_exec(struct sd_req *req, void *data, uint32_t buf_len,
		    struct sd_rsp *rsp)
{
	memset(rsp, 0, sizeof(*rsp));
	rsp->opcode = req->opcode;
	switch (req->opcode) {
	case SD_OP_NEW_VDI:
		rsp->result = new_vdi_reply(req);
		rsp->vdi.vdi_id = vdis[nr_vdis - 1].vid;
		break;
	case SD_OP_DEL_VDI:
		rsp->result = cfg.del_fails ? SD_RES_EIO : SD_RES_SUCCESS;
		break;
	default:
		rsp->result = SD_RES_NO_SUPPORT;
		break;
	}
	return 0;
}

/* the socket layer: nothing may reach the network */
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
	errno = ECONNRESET;
	return -1;
}

ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	return 0;
}

int __wrap_net_connect(const char *host, int port, int rcv_timeout_sec)
{
	return dup(devnull);
}

int __wrap_net_connect_addr(const uint8_t addr[16], uint16_t port,
			    int rcv_timeout_sec)
{
	return dup(devnull);
}

/* ---- the stream on stdin ---- */

static int stream_fd(const uint8_t *s, size_t len)
{
	int p[2];

	if (cfg.use_pipe && len <= PIPE_MAX && !pipe(p)) {
		fcntl(p[1], F_SETPIPE_SZ, PIPE_MAX);
		if (xwrite(p[1], s, len) == (ssize_t)len) {
			close(p[1]);
			return p[0];
		}
		close(p[0]);
		close(p[1]);
	}
	p[0] = memfd_create("fuzz-backup", MFD_CLOEXEC);
	if (p[0] < 0 || (len && xwrite(p[0], s, len) != (ssize_t)len) ||
	    lseek(p[0], 0, SEEK_SET))
		die("memfd: %m\n");
	return p[0];
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		die("/dev/null: %m\n");
	if (!access("/dev/shm", W_OK))
		setenv("TMPDIR", "/dev/shm", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	char name[] = "fuzz", *argv[] = { name, NULL };
	int fd;

	fuzz_in_init(&in, data, size);
	read_config(&in);
	setup_vdis(in.p + in.pos, fuzz_left(&in));
	fd = stream_fd(in.p + in.pos, fuzz_left(&in));
	if (dup2(fd, STDIN_FILENO) < 0)
		die("dup2: %m\n");
	close(fd);
	memset(&vopt, 0, sizeof(vopt));
	vopt.snapid = 1;
	vopt.nr_batch = 128;
	vdi_restore(1, argv);
	dup2(devnull, STDIN_FILENO);
	dog_close();
	return 0;
}
