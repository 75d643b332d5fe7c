// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * End-to-end checksums of stored objects: CRC32C (ISA-L) of every 4 KiB
 * block, kept in the object's own file after its data, so that a rename,
 * a link or a move to the stale area carries them along and one fdatasync
 * makes both durable:
 *
 *   [data: size bytes][nblk x {cur, prev} CRC32C, le32][footer, 16 bytes]
 *
 * A write stores the new CRCs (the old ones kept as "prev") before the
 * data.  A block whose data matches either CRC is good: a crash between
 * the two writes leaves the old data with its old CRC still on record,
 * never a false alarm; a block that matches neither is rot, and the read
 * fails with SD_RES_EIO (the gateway then reads another replica).
 *
 * Writers to one object take a striped lock for the read-modify-write of
 * the CRCs (not across fdatasync); readers take none: thanks to the order
 * above they always see data that matches cur or prev.  With sheep -D
 * the data goes through the object's O_DIRECT descriptor (dio.c), the
 * CRCs never do.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <isa-l/crc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "internal_proto.h"
#include "proto.h"
#include "store.h"
#include "store_int.h"
#include "util.h"

#define CSUM_MAGIC	UINT64_C(0x3176736b636c656b)	/* "kelcksv1" */
#define NR_STRIPES	64

static pthread_mutex_t stripe[NR_STRIPES];
static pthread_once_t csum_once = PTHREAD_ONCE_INIT;
static uint32_t zero_crc;		/* of a whole block of zeros */
static uint64_t nr_mismatch;

static uint32_t crc32c(const void *p, uint32_t n)
{
	return crc32_iscsi((unsigned char *)p, (int)n, 0xffffffffU);
}

static void csum_setup(void)
{
	static const uint8_t zero[CSUM_BLOCK];

	for (int i = 0; i < NR_STRIPES; i++)
		pthread_mutex_init(&stripe[i], NULL);
	zero_crc = crc32c(zero, CSUM_BLOCK);
}

void csum_init(void)
{
	pthread_once(&csum_once, csum_setup);
}

static pthread_mutex_t *lock_of(uint64_t oid)
{
	return &stripe[(oid ^ (oid >> 29)) % NR_STRIPES];
}

uint32_t csum_nr_blocks(uint32_t size)
{
	return (uint32_t)(((uint64_t)size + CSUM_BLOCK - 1) / CSUM_BLOCK);
}

uint64_t csum_file_size(uint32_t size)
{
	return (uint64_t)size + (uint64_t)csum_nr_blocks(size) * 8 + 16;
}

static uint32_t block_len(uint32_t b, uint32_t size)
{
	uint64_t start = (uint64_t)b * CSUM_BLOCK;

	return size - start < CSUM_BLOCK ? (uint32_t)(size - start) :
					   CSUM_BLOCK;
}

uint64_t csum_mismatches(void)
{
	return __atomic_load_n(&nr_mismatch, __ATOMIC_RELAXED);
}

/* the data size of the object in @fd from its footer, 0 if it has none */
uint32_t csum_layout(int fd)
{
	uint8_t f[16];
	struct stat st;
	uint32_t size;

	if (fstat(fd, &st) || st.st_size < 16 ||
	    xpread(fd, f, sizeof(f), st.st_size - 16) != sizeof(f))
		return 0;
	size = get_le32(f + 8);
	if (get_le64(f) != CSUM_MAGIC || get_le32(f + 12) !=
	    csum_nr_blocks(size) || (uint64_t)st.st_size != csum_file_size(size))
		return 0;
	return size;
}

/*
 * The whole trailer of a new object of @size bytes whose only data is
 * @len bytes of @buf at @off (zeros elsewhere).
 */
int csum_write_new(int fd, uint32_t size, const void *buf, uint32_t len,
		   uint32_t off)
{
	uint32_t nblk = csum_nr_blocks(size);
	size_t tlen = (size_t)nblk * 8 + 16;
	uint8_t *t = xmalloc(tlen), *blk = xmalloc(CSUM_BLOCK);
	int ret = 0;

	csum_init();
	for (uint32_t b = 0; b < nblk; b++) {
		uint64_t bs = (uint64_t)b * CSUM_BLOCK, be = bs + block_len(b, size);
		uint32_t crc;

		if (be <= off || bs >= (uint64_t)off + len) {
			crc = block_len(b, size) == CSUM_BLOCK ? zero_crc :
			      crc32c(memset(blk, 0, CSUM_BLOCK),
				     block_len(b, size));
		} else if (bs >= off && be <= (uint64_t)off + len) {
			crc = crc32c((const uint8_t *)buf + (bs - off),
				     block_len(b, size));
		} else {
			uint64_t from = bs > off ? bs : off;
			uint64_t to = be < (uint64_t)off + len ? be :
				      (uint64_t)off + len;

			memset(blk, 0, CSUM_BLOCK);
			memcpy(blk + (from - bs), (const uint8_t *)buf +
			       (from - off), to - from);
			crc = crc32c(blk, block_len(b, size));
		}
		put_le32(t + 8 * b, crc);
		put_le32(t + 8 * b + 4, crc);
	}
	put_le64(t + tlen - 16, CSUM_MAGIC);
	put_le32(t + tlen - 8, size);
	put_le32(t + tlen - 4, nblk);
	if (xpwrite(fd, t, tlen, size) < 0)
		ret = -1;
	free(blk);
	free(t);
	return ret;
}

/*
 * The journal's replay (journal.c, through plain.c) rewrites writes that
 * a power loss may have left half on disk: a block whose rest fails both
 * CRCs is then torn, not rotten.  Start-up only, before any request.
 */
static bool replaying;

void csum_replaying(bool on)
{
	replaying = on;
}

/*
 * The CRC of block @b of the object after @buf is written at @off, in
 * *@crc; the block's entry is @e.  A partly written block keeps the rest
 * of its old data, which must pass its check first: a CRC computed over
 * rot would make the rot look good.  Returns false then.
 */
static bool new_block_crc(int fd, int dfd, uint64_t oid, uint32_t size,
			  uint32_t b,
			  const uint8_t *buf, uint32_t len, uint32_t off,
			  uint8_t *tmp, const uint8_t *e, uint32_t *crc)
{
	uint64_t bs = (uint64_t)b * CSUM_BLOCK;
	uint32_t bl = block_len(b, size), old;
	uint64_t from, to;

	if (bs >= off && bs + bl <= (uint64_t)off + len) {
		*crc = crc32c(buf + (bs - off), bl);
		return true;
	}
	if (obj_pread(fd, dfd, tmp, bl, bs) != (ssize_t)bl)
		return false;
	old = crc32c(tmp, bl);
	if (old != get_le32(e) && old != get_le32(e + 4) && replaying) {
		/* a power loss wrote the data without its CRCs: expected */
		sd_warn("object %" PRIx64 " block %u: torn by the crash, "
			"rewritten by the journal's replay", oid, b);
	} else if (old != get_le32(e) && old != get_le32(e + 4)) {
		__atomic_add_fetch(&nr_mismatch, 1, __ATOMIC_RELAXED);
		sd_err("checksum mismatch: object %" PRIx64 " block %u, under "
		       "a partial write: refused", oid, b);
		return false;
	}
	from = bs > off ? bs : off;
	to = bs + bl < (uint64_t)off + len ? bs + bl : (uint64_t)off + len;
	memcpy(tmp + (from - bs), buf + (from - off), to - from);
	*crc = crc32c(tmp, bl);
	return true;
}

int csum_write(int fd, int dfd, uint64_t oid, uint32_t size,
	       const void *buf, uint32_t len, uint32_t off)
{
	uint32_t b0 = off / CSUM_BLOCK, b1, nb;
	uint8_t *t, *tmp;
	int ret = SD_RES_SUCCESS;

	if (!len)
		return SD_RES_SUCCESS;
	if ((uint64_t)off + len > size)
		return SD_RES_INVALID_PARMS;
	csum_init();
	b1 = (uint32_t)(((uint64_t)off + len - 1) / CSUM_BLOCK);
	nb = b1 - b0 + 1;
	/* the entries written lie in the object's table, after its data */
	sd_assert(b1 < csum_nr_blocks(size) && nb <= csum_nr_blocks(size));
	t = xmalloc((size_t)nb * 8);
	tmp = xmalloc_pages(CSUM_BLOCK);
	pthread_mutex_lock(lock_of(oid));
	if (xpread(fd, t, (size_t)nb * 8, (uint64_t)size + b0 * 8ULL) !=
	    (ssize_t)nb * 8) {
		ret = SD_RES_EIO;
		goto out;
	}
	for (uint32_t b = b0; b <= b1; b++) {
		uint8_t *e = t + 8 * (b - b0);
		uint32_t crc;

		if (!new_block_crc(fd, dfd, oid, size, b, buf, len, off, tmp,
				   e, &crc)) {
			ret = SD_RES_EIO;
			goto out;
		}
		if (crc != get_le32(e)) {
			put_le32(e + 4, get_le32(e));
			put_le32(e, crc);
		}
	}
	/* the CRCs first: see the comment at the top */
	if (xpwrite(fd, t, (size_t)nb * 8, (uint64_t)size + b0 * 8ULL) < 0 ||
	    obj_pwrite(fd, dfd, buf, len, off) < 0)
		ret = store_err_to_res(errno);
out:
	pthread_mutex_unlock(lock_of(oid));
	free(tmp);
	free(t);
	return ret;
}

/*
 * One preadv2 with @rwf (RWF_NOWAIT: only what the page cache holds, a
 * short count otherwise), or the whole range with xpread when @rwf is 0.
 */
static ssize_t pread_rwf(int fd, void *buf, size_t n, uint64_t off, int rwf)
{
	struct iovec v = { .iov_base = buf, .iov_len = n };

	return rwf ? preadv2(fd, &v, 1, (off_t)off, rwf) :
		     xpread(fd, buf, n, (off_t)off);
}

/* one pwritev2(RWF_NOWAIT): what it wrote, or -1 with errno */
static ssize_t pwrite_nowait(int fd, const void *buf, size_t n, uint64_t off)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = n };

	return pwritev2(fd, &v, 1, (off_t)off, RWF_NOWAIT);
}

/*
 * csum_write from the event loop, for whole blocks of at most
 * CSUM_LOOP_BLOCKS whose CRCs the page cache holds: the writers' lock
 * only if free, the CRCs and the data with pwritev2(RWF_NOWAIT).  0: done.
 * -EOPNOTSUPP: this file system never takes such writes (ext4).  -EAGAIN:
 * not done, and csum_write on a worker redoes it all; every block and
 * CRC entry is then either old or new, each matching its entry's cur or
 * prev, so readers meanwhile see no rot and the redo finds every CRC
 * already in place.  (A buffered write stops between pages, which never
 * cut an entry or a block; only a fault on our own buffer could cut one
 * inside, and a reader in the moment before the redo would then take
 * that block for rot: reported and read from another copy, never
 * served.  Nothing on the loop waits to close that window.)
 */
int csum_write_nowait(int fd, uint64_t oid, uint32_t size, const void *buf,
		      uint32_t len, uint32_t off)
{
	uint32_t b0 = off / CSUM_BLOCK, nb = csum_nr_blocks(len);
	uint8_t t[CSUM_LOOP_BLOCKS * 8];
	uint64_t toff = (uint64_t)size + b0 * 8ULL;
	ssize_t n;
	int ret = -EAGAIN;

	if (!len || off % CSUM_BLOCK || (uint64_t)off + len > size ||
	    (len % CSUM_BLOCK && off + len != size) || nb > CSUM_LOOP_BLOCKS)
		return -EAGAIN;
	csum_init();
	if (pthread_mutex_trylock(lock_of(oid)))
		return -EAGAIN;
	n = pread_rwf(fd, t, (size_t)nb * 8, toff, RWF_NOWAIT);
	if (n != (ssize_t)nb * 8)
		goto out;
	for (uint32_t i = 0; i < nb; i++) {
		uint32_t crc = crc32c((const uint8_t *)buf +
				      (uint64_t)i * CSUM_BLOCK,
				      block_len(b0 + i, size));

		if (crc != get_le32(t + 8 * i)) {
			put_le32(t + 8 * i + 4, get_le32(t + 8 * i));
			put_le32(t + 8 * i, crc);
		}
	}
	/* the CRCs first, as csum_write */
	n = pwrite_nowait(fd, t, (size_t)nb * 8, toff);
	if (n < 0 && errno == EOPNOTSUPP)
		ret = -EOPNOTSUPP;
	if (n != (ssize_t)nb * 8)
		goto out;
	if (pwrite_nowait(fd, buf, len, off) == (ssize_t)len)
		ret = 0;
out:
	pthread_mutex_unlock(lock_of(oid));
	return ret;
}

/*
 * Read @len bytes at @off of the object (of @size data bytes) in @fd into
 * @buf, verifying every block they touch.  @quiet: a mismatch is not yet
 * reported (a first, unlocked try).  @rwf: flags of preadv2.
 */
static int read_verified(int fd, int dfd, uint64_t oid, uint32_t size,
			 void *buf, uint32_t len, uint32_t off, bool quiet,
			 int rwf)
{
	uint32_t b0 = off / CSUM_BLOCK, b1, nb;
	uint64_t start = (uint64_t)b0 * CSUM_BLOCK, end;
	uint8_t *t, *data;
	int ret = SD_RES_SUCCESS;
	ssize_t n;

	if (!len)
		return SD_RES_SUCCESS;
	if ((uint64_t)off + len > size)
		return SD_RES_INVALID_PARMS;
	csum_init();
	b1 = (uint32_t)(((uint64_t)off + len - 1) / CSUM_BLOCK);
	nb = b1 - b0 + 1;
	end = (uint64_t)b1 * CSUM_BLOCK + block_len(b1, size);
	/* whole blocks are needed to verify; read in place when aligned */
	data = (start == off && end == (uint64_t)off + len) ? buf :
	       xmalloc_pages(end - start);
	t = xmalloc((size_t)nb * 8);
	n = dfd >= 0 ? dio_pread(dfd, data, end - start, start) :
		       pread_rwf(fd, data, end - start, start, rwf);
	if (n != (ssize_t)(end - start) ||
	    pread_rwf(fd, t, (size_t)nb * 8, (uint64_t)size + b0 * 8ULL,
		      rwf) != (ssize_t)nb * 8) {
		ret = SD_RES_EIO;
		goto out;
	}
	for (uint32_t b = b0; b <= b1; b++) {
		const uint8_t *e = t + 8 * (b - b0);
		uint32_t crc = crc32c(data + (uint64_t)(b - b0) * CSUM_BLOCK,
				      block_len(b, size));

		if (crc == get_le32(e) || crc == get_le32(e + 4))
			continue;
		ret = SD_RES_EIO;
		if (quiet)
			goto out;
		__atomic_add_fetch(&nr_mismatch, 1, __ATOMIC_RELAXED);
		sd_err("checksum mismatch: object %" PRIx64 " block %u "
		       "(data %08x, recorded %08x/%08x): not served", oid, b,
		       crc, get_le32(e), get_le32(e + 4));
		goto out;
	}
	if (data != buf)
		memcpy(buf, data + (off - start), len);
out:
	if (data != buf)
		free(data);
	free(t);
	return ret;
}

/*
 * A buffered read may see a block half written by a concurrent writer: a
 * mismatch is believed only when the read is repeated with the writers
 * of the object held off.
 */
int csum_read(int fd, int dfd, uint64_t oid, uint32_t size, void *buf,
	      uint32_t len, uint32_t off)
{
	int ret = read_verified(fd, dfd, oid, size, buf, len, off, true, 0);

	if (ret != SD_RES_EIO)
		return ret;
	pthread_mutex_lock(lock_of(oid));
	ret = read_verified(fd, dfd, oid, size, buf, len, off, false, 0);
	pthread_mutex_unlock(lock_of(oid));
	return ret;
}

/*
 * csum_read from the event loop: SD_RES_SUCCESS only when every byte was
 * in the page cache and verified.  Whatever else (a page on disk, a
 * mismatch, perhaps a writer's half-done update) is csum_read's to do
 * and report, on a worker; nothing here is counted or logged.
 */
int csum_read_nowait(int fd, uint64_t oid, uint32_t size, void *buf,
		     uint32_t len, uint32_t off)
{
	return read_verified(fd, -1, oid, size, buf, len, off, true,
			     RWF_NOWAIT);
}

/*
 * Repair from @good (the whole object, verified by the node it came from)
 * only the blocks of the local copy that fail their check, under the
 * writers' lock: a block a client rewrote meanwhile passes and is kept,
 * so a repair never undoes a write, whatever the order in which the
 * write reaches the copies.  Returns the number of blocks repaired, or -1.
 */
int csum_repair(int fd, int dfd, uint64_t oid, uint32_t size,
		const void *good)
{
	uint32_t nblk = csum_nr_blocks(size);
	uint8_t *blk = xmalloc_pages(CSUM_BLOCK), e[8];
	int nr = 0;

	csum_init();
	pthread_mutex_lock(lock_of(oid));
	for (uint32_t b = 0; b < nblk && nr >= 0; b++) {
		uint64_t bs = (uint64_t)b * CSUM_BLOCK;
		uint32_t bl = block_len(b, size), crc;

		if (obj_pread(fd, dfd, blk, bl, bs) != (ssize_t)bl ||
		    xpread(fd, e, 8, (uint64_t)size + 8ULL * b) != 8) {
			nr = -1;
			break;
		}
		crc = crc32c(blk, bl);
		if (crc == get_le32(e) || crc == get_le32(e + 4))
			continue;
		crc = crc32c((const uint8_t *)good + bs, bl);
		put_le32(e, crc);
		put_le32(e + 4, crc);
		if (xpwrite(fd, e, 8, (uint64_t)size + 8ULL * b) < 0 ||
		    obj_pwrite(fd, dfd, (const uint8_t *)good + bs, bl,
			       bs) < 0) {
			nr = -1;
			break;
		}
		sd_notice("repaired object %" PRIx64 " block %u", oid, b);
		nr++;
	}
	pthread_mutex_unlock(lock_of(oid));
	free(blk);
	return nr;
}
