// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One daemon per store directory and per disk: an exclusive flock(2) on
 * DIR/lock.  A flock belongs to the open file, not to the process, so a
 * daemonising sheep takes it before it forks and its child keeps it after
 * the parent exits (a POSIX record lock would die with the parent).  The
 * file holds the PID of the daemon, so that a second sheep can say which
 * one has the store.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "store.h"
#include "util.h"

int store_lock_take(const char *path, char *holder, size_t len)
{
	int fd, err;
	ssize_t n;

	if (len)
		holder[0] = 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (!flock(fd, LOCK_EX | LOCK_NB))
		return fd;
	err = errno;
	if (len > 1) {
		n = pread(fd, holder, len - 1, 0);
		holder[n > 0 ? n : 0] = 0;
		holder[strcspn(holder, "\n")] = 0;
		if (!holder[0])
			snprintf(holder, len, "unknown");
	}
	close(fd);
	return -err;
}

void store_lock_note_pid(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n)
		sd_warn("cannot write the pid into the store's lock file: %m");
}
