// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sheep -D: the data of data objects through O_DIRECT, past the page
 * cache (cluster.md §11.6).  Only the data: an object file's checksum
 * trailer (csum.c) stays buffered, on its own pages, which is why only
 * objects whose data size is a whole number of pages go direct (every
 * data object and strip today; any other would stay buffered).  The
 * kernel keeps the two views of one file coherent; fdatasync on either
 * descriptor makes both durable, device cache included.
 *
 * O_DIRECT wants the offset, the length and the buffer aligned.  An
 * unaligned request goes through a bounce buffer of whole pages; a write
 * reads the partial pages at its edges first.  The callers hold the
 * object's writers off meanwhile (csum.c's lock, or a new file's only
 * writer), so such a read-modify-write never undoes another write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sheepdog_proto.h"
#include "store_int.h"
#include "util.h"

static bool direct;

void store_set_direct(bool on)
{
	direct = on;
}

bool store_direct(void)
{
	return direct;
}

bool dio_kind(uint64_t oid)
{
	return direct && is_data_obj(oid);
}

bool dio_size_ok(uint32_t size)
{
	return size && size % DIO_ALIGN == 0;
}

/* O_DIRECT on the file system of @dir: 0, or the errno of the refusal */
int dio_probe(const char *dir)
{
	char p[MD_PATH_MAX + 32];
	void *buf;
	int fd, err = 0;

	snprintf(p, sizeof(p), "%s/.directio-probe", dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	buf = xmalloc_pages(DIO_ALIGN);
	memset(buf, 0, DIO_ALIGN);
	/* some file systems take the flag at open and refuse the I/O */
	if (pwrite(fd, buf, DIO_ALIGN, 0) != DIO_ALIGN)
		err = errno ? errno : EIO;
	free(buf);
	close(fd);
	unlink(p);
	return err;
}

static bool aligned(const void *buf, size_t len, uint64_t off)
{
	return !((uintptr_t)buf % DIO_ALIGN) && !(len % DIO_ALIGN) &&
	       !(off % DIO_ALIGN);
}

/* the whole of an aligned transfer, resumed after a short one */
static ssize_t whole(int fd, void *buf, size_t len, uint64_t off, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (char *)buf + done, len - done,
					(off_t)(off + done)) :
				 pread(fd, (char *)buf + done, len - done,
				       (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0 || n % DIO_ALIGN) {
			/* end of file, or a tail O_DIRECT cannot go on from */
			errno = EIO;
			return -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)len;
}

ssize_t dio_pread(int dfd, void *buf, size_t len, uint64_t off)
{
	uint64_t a0 = off - off % DIO_ALIGN;
	uint64_t a1 = (off + len + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;
	uint8_t *b;
	ssize_t ret;

	if (!len)
		return 0;
	if (aligned(buf, len, off))
		return whole(dfd, buf, len, off, false);
	b = xmalloc_pages(a1 - a0);
	ret = whole(dfd, b, a1 - a0, a0, false);
	if (ret >= 0) {
		memcpy(buf, b + (off - a0), len);
		ret = (ssize_t)len;
	}
	free(b);
	return ret;
}

ssize_t dio_pwrite(int dfd, const void *buf, size_t len, uint64_t off)
{
	uint64_t a0 = off - off % DIO_ALIGN;
	uint64_t a1 = (off + len + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;
	uint64_t last = a1 - DIO_ALIGN;
	uint8_t *b;
	ssize_t ret = (ssize_t)len;

	if (!len)
		return 0;
	if (aligned(buf, len, off))
		return whole(dfd, (void *)buf, len, off, true);
	b = xmalloc_pages(a1 - a0);
	/* the edge pages' other bytes, as they are */
	if ((off != a0 && whole(dfd, b, DIO_ALIGN, a0, false) < 0) ||
	    ((off + len) % DIO_ALIGN && (last != a0 || off == a0) &&
	     whole(dfd, b + (last - a0), DIO_ALIGN, last, false) < 0)) {
		ret = -1;
		goto out;
	}
	memcpy(b + (off - a0), buf, len);
	if (whole(dfd, b, a1 - a0, a0, true) < 0)
		ret = -1;
out:
	free(b);
	return ret;
}

ssize_t obj_pread(int fd, int dfd, void *buf, size_t len, uint64_t off)
{
	return dfd >= 0 ? dio_pread(dfd, buf, len, off) :
			  xpread(fd, buf, len, (off_t)off);
}

/*
 * Buffered writes go to the page cache in aligned pieces of at most 256
 * KiB.  The page cache sizes a new folio by the write that creates it,
 * and ext4 (large folios since Linux 6.16) makes every later write into
 * a folio walk all of its buffer heads: after a 4 MiB write (a fill, a
 * recovery, a copy-on-write) each 4 KiB write walked the 512 of a 2 MiB
 * folio, 44 % of sheep's CPU in a random-write load.  Measured here: a 4
 * KiB overwrite costs 6 us in a 2 MiB folio, 1.6 us in a 256 KiB one,
 * and the fill in 256 KiB pieces is no slower (no 2 MiB allocations).
 */
#define PAGE_CACHE_PIECE	(256u << 10)

static ssize_t pwrite_pieces(int fd, const void *buf, size_t len,
			     uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		size_t n = PAGE_CACHE_PIECE - (off + done) % PAGE_CACHE_PIECE;

		if (n > len - done)
			n = len - done;
		if (xpwrite(fd, (const char *)buf + done, n,
			    (off_t)(off + done)) < 0)
			return -1;
		done += n;
	}
	return (ssize_t)len;
}

ssize_t obj_pwrite(int fd, int dfd, const void *buf, size_t len,
		   uint64_t off)
{
	return dfd >= 0 ? dio_pwrite(dfd, buf, len, off) :
			  pwrite_pieces(fd, buf, len, off);
}
